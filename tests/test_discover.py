"""``python -m llmcount.discover``: the drafted record of a family has the curated record's total formula, is the
same text on every run, and counts the config class's defaults exactly (transformers on the meta device)."""

from __future__ import annotations

from functools import cache

import pytest
from sympy import expand, simplify

pytest.importorskip("torch", reason="discover needs torch and transformers (pip install '.[test]')")
pytest.importorskip("transformers", reason="discover needs torch and transformers (pip install '.[test]')")

from llmcount.discover import fit
from llmcount.discover.core import Discoverer
from llmcount.discover.verify import verify
from llmcount.formulas import records
from llmcount.formulas.derivation import Derivation
from llmcount.formulas.symbols import d, h, h_d

FAMILIES = ["llama", "qwen3", "gpt2", "mixtral", "qwen3_moe"]
CHECKED = [*FAMILIES, "deepseek_v3"]  # also: MLA, shared experts, the first K layers dense (i < first_k_dense_replace)


@cache
def drafted(model_type: str) -> tuple[Discoverer, str]:
    discoverer = Discoverer(model_type, log=lambda text: None)
    return discoverer, discoverer.run().text


def draft_family(model_type: str, tmp_path) -> records.Family:
    path = tmp_path / f"{model_type}.toml"
    path.write_text(drafted(model_type)[1], encoding="utf-8")
    return records.load(path)


@pytest.mark.parametrize("model_type", CHECKED)
def test_total_equals_curated(model_type: str, tmp_path) -> None:
    discovered = Derivation(draft_family(model_type, tmp_path)).total
    curated = Derivation(records.family(model_type)).total
    assert simplify(expand(discovered) - expand(curated)) == 0, f"{model_type}: {discovered} != {curated}"


@pytest.mark.parametrize("model_type", ["gpt2", "qwen3_moe"])  # a dense Conv1D family and a MoE: each drafted twice
def test_deterministic(model_type: str) -> None:
    again = Discoverer(model_type, log=lambda text: None).run().text
    assert again == drafted(model_type)[1]


@pytest.mark.parametrize("model_type", CHECKED)
def test_counts_class_defaults_and_random_configs(model_type: str, tmp_path) -> None:
    path = tmp_path / f"{model_type}.toml"
    discoverer, text = drafted(model_type)
    path.write_text(text, encoding="utf-8")
    checks = verify(discoverer, path)
    assert checks[0].name == "class defaults"
    assert all(c.exact for c in checks), "\n".join(c.line() for c in checks)


def test_polynomial_fit_is_exact() -> None:
    points = [({d: a, h: b, h_d: c}, a * b * c + 3 * a) for a, b, c in [(2, 3, 5), (4, 1, 7), (6, 2, 2), (3, 5, 4)]]
    points += [({d: a, h: b, h_d: c}, a * b * c + 3 * a) for a, b, c in [(8, 3, 9), (5, 4, 3), (7, 7, 2), (9, 2, 6)]]
    points += [({d: a, h: b, h_d: c}, a * b * c + 3 * a) for a, b, c in [(10, 1, 1), (2, 9, 8), (11, 3, 3), (3, 3, 7)]]
    points += [({d: a, h: b, h_d: c}, a * b * c + 3 * a) for a, b, c in [(4, 6, 5), (6, 6, 1), (12, 2, 4), (5, 5, 5)]]
    points += [({d: a, h: b, h_d: c}, a * b * c + 3 * a) for a, b, c in [(7, 1, 3), (13, 2, 2), (8, 8, 8), (1, 4, 9)]]
    assert expand(fit.polynomial(points, [d, h, h_d]) - (d * h * h_d + 3 * d)) == 0


def test_derived_default() -> None:
    points = [({d: a, h: b}, a // b) for a, b in [(12, 5), (40, 3), (9, 2), (64, 8)]]
    assert fit.derived(points, [d, h]) == "d // h"


def test_missing_torch_says_what_to_install(tmp_path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None; from llmcount.discover.__main__ import main; "
        f"sys.exit(main(['llama', '-o', {str(tmp_path / 'llama.toml')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "pip install '.[test]'" in done.stderr
    assert not (tmp_path / "llama.toml").exists()
