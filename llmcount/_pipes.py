"""A reader that stops reading (``llmcount count ... | head -1``) ends llmcount quietly.

Python ignores SIGPIPE and raises BrokenPipeError on the next write instead, and again when it flushes
stdout at exit; click turns the first into ``exit 1`` but not the second. Here both end the process
with no message and status 141 (128 + SIGPIPE), what the shell reports for a C tool killed by SIGPIPE,
so ``set -o pipefail`` scripts see the same thing for llmcount as for ``yes | head -1``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TypeVar

EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE

F = TypeVar("F", bound=Callable[..., None])


def quiet_broken_pipe(entry: F) -> F:
    """Wrap a console entry point: a closed stdout ends it quietly with status 141."""

    @functools.wraps(entry)
    def wrapper(*args, **kwargs):
        try:
            entry(*args, **kwargs)
            sys.stdout.flush()  # a write still buffered fails here, not in the interpreter's exit
        except BrokenPipeError:
            _exit_quietly()
        except SystemExit:
            if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click saw EPIPE and exits 1
                _exit_quietly()
            raise

    return wrapper  # type: ignore[return-value]


def _exit_quietly() -> None:
    # Point stdout at /dev/null so that the flush at exit has nowhere to fail (the recipe of Python's
    # signal module documentation), then leave with the shell's status for SIGPIPE.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)
