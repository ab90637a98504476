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
PRINTED_SAME_TERMS = (
    "layers with the same weights print differently (DeepSeek-V4's hash-routed and compressed layers, Llama 4's "
    "layers without RoPE, RWKV's first layer with its pre-norm): the record's terms do not tell them apart, so it has "
    "no [printed] tree yet and the write-up shows the generic one"
)
PRINTED_LAYERS = (
    "a weight counted on layers the config does not name one by one (N - 1 layers, layers of a sub-stack or of a "
    "pattern the record counts as a number): the record has no [printed] tree yet and the write-up shows the "
    "generic one"
)
PRINTED = {"deepseek_v4": PRINTED_SAME_TERMS, "llama4_text": PRINTED_SAME_TERMS, "rwkv": PRINTED_SAME_TERMS}
PRINTED |= {
    name: PRINTED_LAYERS
    for name in (
        "blt", "gemma3n_text", "git", "hrm_text", "inkling2_text", "longcat_flash", "mimo_v2_flash",
        "modernbert-decoder", "phi4_multimodal", "zamba2", "zaya",
    )
}  # fmt: skip

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
KNOWN |= {
    f"tests/test_printed.py::test_tree_equals_print_model_for_the_class_defaults[{name}]": reason
    for name, reason in PRINTED.items()
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        reason = KNOWN.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
