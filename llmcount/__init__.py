"""llmcount: exact symbolic parameter formulas for LLMs, evaluated on config.json.

The Python API (docs/api.md)::

    import llmcount
    m = llmcount.load("qwen3-32b")       # a preset, a config.json, a folder, a Hub id
    m.counts.total                       # 32762123264, an exact int
    m.derivation.total                   # the sympy expression
    llmcount.flops("llama-3-8b", seq="8k").forward
    llmcount.memory("qwen3-32b", "bf16", seq="32k", batch=8).total_bytes

``import llmcount`` is light: sympy and the formulas load on the first call.
"""

__version__ = "0.1.0"

__all__ = [
    "Counts",
    "Derivation",
    "LlmcountError",
    "Loaded",
    "Model",
    "Post",
    "__version__",
    "approx",
    "check",
    "conventions",
    "fit",
    "flops",
    "load",
    "memory",
    "mfu",
    "training",
    "writeup",
]

# name -> module it comes from, imported on first use (PEP 562)
_LAZY = {
    "load": "api",
    "flops": "api",
    "memory": "api",
    "training": "api",
    "conventions": "api",
    "mfu": "api",
    "fit": "api",
    "check": "api",
    "approx": "api",
    "writeup": "api",
    "Loaded": "api",
    "Post": "api",
    "Model": "formulas.config",
    "Counts": "formulas.derivation",
    "Derivation": "formulas.derivation",
    "LlmcountError": "errors",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'llmcount' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
