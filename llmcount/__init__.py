"""llmcount: exact symbolic parameter formulas for LLMs, evaluated on config.json."""

__version__ = "0.1.0"
