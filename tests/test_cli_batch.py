"""`count` of many models and `scan` of a folder or a Hugging Face cache: one row per model, bad configs
one line each on stderr, exit 1 at the end if any failed.

Expected numbers are published figures or hand derivations, written here:
  GPT-2       124,439,808 (HF model card); embedding = wte + wpe = 50257·768 + 1024·768 = 39,383,808 (tied head)
  Llama-2-7B  6,738,415,616 (Meta); embedding = embed_tokens + untied lm_head = 2·32000·4096 = 262,144,000
  Qwen3-32B   32,762,123,264 (sum of its safetensors index)
"""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.presets import presets

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
GPT2, GPT2_EMBEDDING = 124_439_808, 50257 * 768 + 1024 * 768
LLAMA2, LLAMA2_EMBEDDING = 6_738_415_616, 2 * 32000 * 4096
QWEN3_32B = 32_762_123_264
FIELDS = ["model", "family", "source", "total", "activated", "embedding", "non_embedding"]


def run(*args, input=None):
    result = runner.invoke(app, list(args), input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def write_config(folder: Path, preset: str, **changes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps({**presets()[preset].config(), **changes}))
    return path


# --- count of several models -------------------------------------------------------------------------------------


def test_several_models_make_a_compact_table():
    result = run("count", "gpt2", "llama-2-7b", "qwen3-32b")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["model", "family", "total", "activated", "embedding"]
    assert [line.split()[0] for line in lines[1:]] == ["gpt2", "llama-2-7b", "qwen3-32b"]
    assert f"{GPT2:,}" in lines[1] and f"{LLAMA2:,}" in lines[2] and f"{QWEN3_32B:,}" in lines[3]
    assert "262.14M" in lines[2]  # Llama-2-7B's embedding, in human form
    assert result.stderr == ""


def test_csv_has_a_header_and_exact_rows():
    result = run("count", "gpt2", "llama-2-7b", "--csv")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == FIELDS
    gpt2, llama = rows
    assert (gpt2["model"], gpt2["family"], gpt2["source"]) == ("gpt2", "gpt2", "preset gpt2")
    assert int(gpt2["total"]) == int(gpt2["activated"]) == GPT2
    assert int(gpt2["embedding"]) == GPT2_EMBEDDING
    assert int(gpt2["non_embedding"]) == GPT2 - GPT2_EMBEDDING
    assert int(llama["total"]) == LLAMA2 and int(llama["embedding"]) == LLAMA2_EMBEDDING


def test_csv_or_jsonl_with_one_model_is_one_row():
    rows = list(csv.DictReader(io.StringIO(run("count", "gpt2", "--csv").stdout)))
    assert len(rows) == 1 and int(rows[0]["total"]) == GPT2
    lines = run("count", "llama-2-7b", "--jsonl").stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "model": "llama-2-7b",
        "family": "llama",
        "source": "preset llama-2-7b",
        "total": LLAMA2,
        "activated": LLAMA2,
        "embedding": LLAMA2_EMBEDDING,
        "non_embedding": LLAMA2 - LLAMA2_EMBEDDING,
    }


def test_jsonl_one_object_a_line():
    lines = run("count", "gpt2", "qwen3-32b", "llama-2-7b", "--jsonl").stdout.splitlines()
    assert [json.loads(line)["total"] for line in lines] == [GPT2, QWEN3_32B, LLAMA2]


def test_json_of_several_models_is_a_list_of_count_objects():
    data = json.loads(run("count", "gpt2", "llama-2-7b", "--json").stdout)
    assert [d["total"] for d in data] == [GPT2, LLAMA2]
    assert all("components" in d for d in data)


def test_one_model_without_options_is_unchanged():
    out = run("count", "qwen3-32b").stdout
    assert out.startswith("qwen3-32b (Qwen3")
    assert "attention/q_norm" in out and f"{QWEN3_32B:,}" in out


@pytest.mark.parametrize("options", [("--json", "--csv"), ("--csv", "--jsonl"), ("--json", "--jsonl")])
def test_two_output_formats_are_a_usage_error(options):
    result = run("count", "gpt2", "llama-2-7b", *options)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert options[0] in result.stderr and options[1] in result.stderr


def test_bad_configs_are_reported_and_the_rest_counted(tmp_path):
    good = write_config(tmp_path / "good", "gpt2")
    broken = tmp_path / "broken" / "config.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    unsupported = write_config(tmp_path / "bert", "gpt2", model_type="bert")
    specs = [str(good), str(broken), "llama-2-7b", str(unsupported), "no-such-preset"]
    result = run("count", *specs, "--csv")
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [int(r["total"]) for r in rows] == [GPT2, LLAMA2]
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 4
    assert str(broken) in errors[0] and "invalid JSON" in errors[0]
    assert str(unsupported) in errors[1] and "bert" in errors[1]
    assert "no-such-preset" in errors[2]
    assert errors[3] == "llmcount: 3 of 5 configs failed"
    assert all("Traceback" not in line for line in errors)


def test_one_bad_model_in_a_table_still_exits_1():
    result = run("count", "gpt2", "no-such-preset")
    assert result.exit_code == 1
    assert "gpt2" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "llmcount: 1 of 2 configs failed"


def test_a_config_on_stdin():
    config = json.dumps(presets()["llama-2-7b"].config())
    data = json.loads(run("count", "-", "--json", input=config).stdout)
    assert data["total"] == LLAMA2 and data["source"] == "stdin"
    rows = run("count", "gpt2", "-", "--jsonl", input=config).stdout.splitlines()
    assert [json.loads(line)["total"] for line in rows] == [GPT2, LLAMA2]


@pytest.mark.parametrize(
    ("text", "message"), [("", "stdin: empty"), ("{oops", "stdin: invalid JSON at line 1"), ("[1]", "JSON object")]
)
def test_bad_stdin_is_one_line(text, message):
    result = run("count", "-", input=text)
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_stdin_through_a_real_pipe():
    config = json.dumps(presets()["gpt2"].config()).encode()
    proc = subprocess.run(
        [sys.executable, "-m", "llmcount", "count", "-", "--jsonl"], input=config, capture_output=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total"] == GPT2


# --- scan ----------------------------------------------------------------------------------------------------------


def make_cache(root: Path) -> Path:
    """A Hugging Face hub cache as huggingface_hub lays it out: config.json is a symlink into blobs/."""
    hub = root / "hub"
    for repo, preset in (("openai-community--gpt2", "gpt2"), ("meta-llama--Llama-2-7b-hf", "llama-2-7b")):
        blobs = hub / f"models--{repo}" / "blobs"
        blobs.mkdir(parents=True)
        blob = blobs / "0123abcd"
        blob.write_text(json.dumps(presets()[preset].config()))
        snapshot = hub / f"models--{repo}" / "snapshots" / "4f8a9c2e11d0"
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").symlink_to(os.path.relpath(blob, snapshot))
    (hub / ".locks").mkdir()
    return hub


def test_scan_a_hub_cache_names_rows_by_repo(tmp_path):
    result = run("scan", str(make_cache(tmp_path)), "--jsonl")
    assert result.exit_code == 0, result.stderr
    rows = {r["model"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {"openai-community/gpt2", "meta-llama/Llama-2-7b-hf"}
    assert rows["openai-community/gpt2"]["total"] == GPT2
    assert rows["meta-llama/Llama-2-7b-hf"]["total"] == LLAMA2
    assert rows["meta-llama/Llama-2-7b-hf"]["source"].endswith("snapshots/4f8a9c2e11d0/config.json")


def test_scan_several_snapshots_of_one_repo_are_told_apart(tmp_path):
    hub = make_cache(tmp_path)
    snapshots = hub / "models--openai-community--gpt2" / "snapshots"
    write_config(snapshots / "9999999aaaa", "gpt2")
    rows = [json.loads(line)["model"] for line in run("scan", str(hub), "--jsonl").stdout.splitlines()]
    assert sorted(r for r in rows if "gpt2" in r) == ["openai-community/gpt2@4f8a9c2", "openai-community/gpt2@9999999"]


def test_scan_a_plain_folder_with_a_bad_config(tmp_path):
    write_config(tmp_path / "meta" / "Llama-2-7b", "llama-2-7b")
    write_config(tmp_path / "gpt2", "gpt2")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text('{"model_type": "llama"}')
    (tmp_path / "notes.txt").write_text("not a config")
    result = run("scan", str(tmp_path), "--csv")
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["model"]: int(r["total"]) for r in rows} == {"gpt2": GPT2, "meta/Llama-2-7b": LLAMA2}
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2
    assert str(tmp_path / "broken" / "config.json") in errors[0]
    assert errors[1] == "llmcount: 1 of 3 configs failed"


def test_scan_text_table(tmp_path):
    result = run("scan", str(make_cache(tmp_path)))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].split() == ["model", "family", "total", "activated", "embedding"]
    assert f"{LLAMA2:,}" in result.stdout


def test_scan_survives_a_symlink_loop_and_respects_depth(tmp_path):
    write_config(tmp_path / "a", "gpt2")
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    write_config(tmp_path / "d1" / "d2" / "d3", "llama-2-7b")
    rows = [json.loads(line) for line in run("scan", str(tmp_path), "--jsonl").stdout.splitlines()]
    assert sorted(r["model"] for r in rows) == ["a", "d1/d2/d3"]
    shallow = run("scan", str(tmp_path), "--jsonl", "--max-depth", "2").stdout.splitlines()
    assert [json.loads(line)["model"] for line in shallow] == ["a"]


def test_scan_stops_at_max_files_and_says_so(tmp_path):
    for i in range(3):
        write_config(tmp_path / f"m{i}", "gpt2")
    result = run("scan", str(tmp_path), "--jsonl", "--max-files", "2")
    assert len(result.stdout.splitlines()) == 2
    assert "stopped after 2 config.json files" in result.stderr


@pytest.mark.parametrize("what", ["missing", "file", "empty"])
def test_scan_refuses_what_is_not_a_folder_of_configs(tmp_path, what):
    target = tmp_path / "x"
    if what == "file":
        target.write_text("{}")
    elif what == "empty":
        target.mkdir()
    result = run("scan", str(target))
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1 and str(target) in result.stderr


def test_batch_and_scan_import_nothing_heavy(tmp_path):
    write_config(tmp_path / "m", "gpt2")
    code = (
        "import sys\nfrom llmcount.cli import main\n"
        "for argv in (['count', 'gpt2', 'llama-2-7b', '--csv'], ['scan', sys.argv[1]]):\n"
        "    sys.argv = ['llmcount', *argv]\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "print('HEAVY', [m for m in ('torch', 'transformers', 'numpy', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT).stdout
    assert f"{GPT2}" in out and "HEAVY []" in out


@pytest.mark.parametrize("below", ["models--meta-llama--Llama-2-7b-hf", "models--meta-llama--Llama-2-7b-hf/snapshots"])
def test_scan_of_one_repo_of_a_cache_names_it_too(tmp_path, below):
    hub = make_cache(tmp_path)
    rows = [json.loads(line) for line in run("scan", str(hub / below), "--jsonl").stdout.splitlines()]
    assert [(r["model"], r["total"]) for r in rows] == [("meta-llama/Llama-2-7b-hf", LLAMA2)]
