"""``python -m llmcount.discover MODEL_TYPE [-o PATH]``: write a draft family record and check it.

Example: ``python -m llmcount.discover qwen3 -o /tmp/qwen3.toml``
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmcount.discover", description=__doc__.splitlines()[0])
    parser.add_argument("model_type", help="a transformers model_type, e.g. llama")
    parser.add_argument("-o", "--output", help="where to write the record (default: ./<model_type>.toml)")
    args = parser.parse_args(argv)
    try:
        from .core import Discoverer
        from .verify import verify
    except ImportError as error:
        print(
            f"discover needs torch and transformers ({error.name} is missing): pip install '.[test]'", file=sys.stderr
        )
        return 2
    import transformers

    from ..formulas.records import newer_transformers

    newer = newer_transformers(transformers.__version__)
    if newer:
        print(newer, file=sys.stderr)
    start = time.monotonic()
    try:
        discoverer = Discoverer(args.model_type, log=lambda text: print(text, file=sys.stderr))
        discovery = discoverer.run()
    except Exception as error:  # a model the method cannot handle: say why in one line
        print(f"discover {args.model_type}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    path = args.output or f"{args.model_type}.toml"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(discovery.text)
    print(f"wrote {path} ({time.monotonic() - start:.1f} s)")
    for note in discovery.notes:
        print(f"note: {note}")
    checks = verify(discoverer, path)
    for check in checks:
        print(check.line())
    from .verify import first_failure

    wrong = first_failure(checks)
    if wrong:
        print(f"discover {args.model_type}: not exact: {wrong}", file=sys.stderr)
    return 0 if all(c.exact for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
