"""Small random configs for the activation tests, one module per group of families.

Each module here defines ``DRAWS``: model_type -> a function of a ``random.Random`` giving a small config (with
``model_type``) that transformers builds and trains on the CPU, and may define ``CASES``: extra
``(model_type, seed, dtype, attention)`` cases with a comment on what each exercises. ``tests/test_activations.py``
draws a family's config from here when a module names it, and from its own generic rule otherwise.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections.abc import Callable

DRAWS: dict[str, Callable[[random.Random], dict]] = {}
CASES: list[tuple[str, int, str, str]] = []

for _module in pkgutil.iter_modules(__path__):
    _loaded = importlib.import_module(f"{__name__}.{_module.name}")
    DRAWS.update(getattr(_loaded, "DRAWS", {}))
    CASES.extend(getattr(_loaded, "CASES", []))
