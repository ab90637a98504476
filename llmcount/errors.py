"""The one exception type the CLI turns into a one-line message and a non-zero exit."""

CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), *range(127, 160)]}
CONTROL |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): " "}
CONTROL |= {c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}
"""Control characters in a message (a file name with a newline, an escape sequence in a config value) as escapes: C0
and C1 controls, the Unicode line and paragraph separators (which end a line for ``str.splitlines``) and the
bidirectional overrides, so that the message stays one line and cannot drive the terminal or reorder what it shows."""


class LlmcountError(Exception):
    """Bad input: a missing file, a malformed config, an unknown name. The message says which, on one line (control
    characters from the input escaped by :data:`CONTROL`), through the API as through the CLI."""

    def __str__(self) -> str:
        return super().__str__().translate(CONTROL)


class OptionError(LlmcountError):
    """A value typed for an option that is not one the option takes (``--seq x``, ``--gpus -1``, an option given without
    the one it needs): a usage error, which the CLI reports as click reports its own (one line, exit 2); through the API
    an LlmcountError like any other bad input."""


class UnknownName(OptionError):
    """A name that is none of the known ones (an engine, a GPU), with the closest names."""
