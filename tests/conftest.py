"""The suite's known differences from the oracle: cases the records do not yet follow. Each is an expected failure,
strict (a case that starts to pass fails the run, so that its entry is removed), with the reason; docs/families.md
lists the same limits for users."""

import pytest

KNOWN: dict[str, str] = {}  # a test's node id -> why it differs


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        reason = KNOWN.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
