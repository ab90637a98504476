"""Analysis of the exact formulas: leading-order approximations, checks of hand-written formulas,
side-by-side comparison, solving for one size, and sweeps over grids of sizes.

Each module computes a frozen result object with a ``data()`` JSON form; the CLI renders it through
the ``analysis_*.j2`` templates.
"""

from __future__ import annotations

from sympy import Expr, Rational

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.derivation import Derivation


def subject(spec: str) -> tuple[Derivation, Model | None]:
    """A model (preset, file, folder or Hub id) or a bare family such as ``qwen3``.

    A preset wins over a family of the same name, so ``gpt2`` is the GPT-2 config.
    """
    from ..formulas import records
    from ..presets import find
    from ..sources import load

    family = records.family(spec) if find(spec) is None else None
    if family is not None:
        return Derivation(family), None
    model = load(spec)
    return model.derivation, model


def subject_and_base(spec: str, base_spec: str | None) -> tuple[Derivation, dict | None, str]:
    """``(derivation, base values, title)`` for solve and sweep: the sizes not set come from ``base_spec``
    (``--from``), else from the model itself. A family takes the switches (tied head, biases) of a base
    config of the same family."""
    from ..sources import load

    derivation, model = subject(spec)
    base = load(base_spec) if base_spec is not None else model
    if model is None and base is not None and base.architecture == derivation.architecture:
        derivation = base.derivation
    title = model.name if model is not None else derivation.architecture.title
    return derivation, (base.values if base is not None else None), title


def number(value: Expr | int) -> int | float:
    """A JSON number: an int when exact, else a float (an approximation's non-integral value)."""
    value = Rational(value)
    return int(value) if value.is_Integer else float(value)


def relative(value: Expr | int, exact: int) -> float:
    """``(value - exact) / exact`` as a float: the sign says over (+) or under (-)."""
    if exact == 0:
        raise LlmcountError("the exact count is 0; a relative error is undefined")
    return float((Rational(value) - exact) / exact)
