"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class LlmcountError(Exception):
    """Bad input: a missing file, a malformed config, an unknown name. The message says which."""
