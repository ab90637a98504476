"""The suite's known differences from the oracle: cases that transformers 5.24 changed and the records do not yet
follow. Each is an expected failure, strict (a case that starts to pass fails the run, so that its entry is removed),
with the reason; docs/families.md lists the same limits for users."""

import pytest

INKLING2_524 = (
    "transformers 5.24 reworked Inkling2 (a log scaling on the full-attention layers, separate key and value inputs, "
    "q_proj.linear modules): inkling2_text's FLOPs and its fp32 activation table are not yet re-derived"
)
DSV4_CACHE = (
    "transformers 5.24 keeps more in DeepSeek-V4's compressed sparse attention cache in bf16 than the record's "
    "cache table says (48 bytes at B = 1, S = 2): not yet re-derived"
)
KNOWN = {
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-6-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-10-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-4-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-19-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-12-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-21-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-37-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-23-fp32-eager]": INKLING2_524,
    "tests/test_activations.py::test_activations_equal_what_autograd_saves[inkling2_text-32-fp32-eager]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_bf16_with_the_fp32_modules_from_pretrained_keeps[6]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_bf16_with_the_fp32_modules_from_pretrained_keeps[10]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_bf16_with_the_fp32_modules_from_pretrained_keeps[12]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_bf16_with_the_fp32_modules_from_pretrained_keeps[21]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_bf16_with_the_fp32_modules_from_pretrained_keeps[32]": INKLING2_524,
    "tests/test_inkling2_activations.py::test_the_logits_and_the_loss_have_unpadded_vocab_size_columns": INKLING2_524,
    "tests/test_state_flops.py::test_small_config_equals_flop_counter[inkling2_text-1-1]": INKLING2_524,
    "tests/test_state_flops.py::test_small_config_equals_flop_counter[inkling2_text-1-4]": INKLING2_524,
    "tests/test_state_flops.py::test_small_config_equals_flop_counter[inkling2_text-1-7]": INKLING2_524,
    "tests/test_state_flops.py::test_small_config_equals_flop_counter[inkling2_text-2-9]": INKLING2_524,
    "tests/test_state_flops.py::test_small_config_equals_flop_counter[inkling2_text-3-16]": INKLING2_524,
    "tests/test_state_flops.py::test_drawn_config_equals_flop_counter[inkling2_text]": INKLING2_524,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-2-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-3-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-4-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-5-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-6-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-7-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-9-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[default-layout-13-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-3-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-4-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-5-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-6-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-7-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-9-bf16]": DSV4_CACHE,
    "tests/test_compressed_costs.py::test_cache_per_kind_equals_transformers[mixed-13-bf16]": DSV4_CACHE,
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        reason = KNOWN.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
