"""The suite's known differences from the oracle: cases the records do not yet follow. Each is an expected failure,
strict (a case that starts to pass fails the run, so that its entry is removed), with the reason; docs/families.md
lists the same limits for users."""

import pytest

PRINTED_LAYERS = (
    "shared transformer blocks (counted num_mem_blocks times) that print inside every hybrid layer using them: the "
    "record has no [printed] tree yet and the write-up shows the generic one"
)
PRINTED = {
    name: PRINTED_LAYERS
    for name in (
        "zamba2",
    )
}  # fmt: skip

KNOWN: dict[str, str] = {}  # a test's node id -> why it differs
KNOWN |= {
    f"tests/test_printed.py::test_tree_equals_print_model_for_the_class_defaults[{name}]": reason
    for name, reason in PRINTED.items()
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        reason = KNOWN.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
