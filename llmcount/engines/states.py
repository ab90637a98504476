"""The fixed states of Mamba and linear-attention layers as vLLM keeps them, and the page size it unifies them with.

vLLM 0.33.0 (commit 4ba787ec9) gives each such layer a ``MambaSpec`` (``vllm/v1/kv_cache_interface.py``) whose
page is the layer's state on one TP rank: the shapes ``MambaStateShapeCalculator`` gives
(``vllm/model_executor/layers/mamba/mamba_utils.py``) in the dtypes ``MambaStateDtypeCalculator`` gives. Which
calculator a model type uses, and which config values it passes, is the engine record's ``[states.<model_type>]``
table, transcribed from the model file's ``get_mamba_state_shape_from_config``; the calculators themselves are
the functions below. ``Platform._align_hybrid_block_size`` (``vllm/platforms/interface.py``) then raises the
attention block size until an attention page holds at least the largest state page, and pads every state page
to the attention page (:func:`unified_block`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import LlmcountError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class StatePage:
    """One state layer's page on one TP rank: ``conv`` and ``temporal`` elements and their bytes each."""

    conv: int
    conv_bytes: int
    temporal: int
    temporal_bytes: int
    calculator: str
    temporal_dtype: str

    @property
    def bytes(self) -> int:
        return self.conv * self.conv_bytes + self.temporal * self.temporal_bytes


def _divide(numerator: int, tp: int, what: str) -> int:
    """vllm.distributed.divide: an exact division, asserted."""
    if numerator % tp:
        raise LlmcountError(f"--tp {tp} does not divide the {numerator:,} {what} of the state layers")
    return numerator // tp


def _mamba1(tp: int, a: Mapping[str, int]) -> tuple[int, int]:
    """mamba1_state_shape: conv (conv_kernel − 1, I/tp), temporal (I/tp, state_size)."""
    width = _divide(a["intermediate_size"], tp, "channels (intermediate_size)")
    return width * (a["conv_kernel"] - 1), width * a["state_size"]


def _mamba2(tp: int, a: Mapping[str, int]) -> tuple[int, int]:
    """mamba2_state_shape: n_groups extended by tp − n_groups when tp does not divide them (extra_groups_for_head_
    shards); conv ((I + 2·n_groups·state_size)/tp, conv_kernel − 1), temporal (num_heads/tp, head_dim, state_size)."""
    groups = a["n_groups"] + (0 if a["n_groups"] % tp == 0 else tp - a["n_groups"])
    conv = _divide(a["intermediate_size"] + 2 * groups * a["state_size"], tp, "conv channels") * (a["conv_kernel"] - 1)
    return conv, _divide(a["num_heads"], tp, "heads (num_heads)") * a["head_dim"] * a["state_size"]


def _gated_delta_net(tp: int, a: Mapping[str, int]) -> tuple[int, int]:
    """gated_delta_net_state_shape: conv ((2·h_k·d_k + h_v·d_v)/tp, conv_kernel − 1), temporal (h_v/tp, d_v, d_k)."""
    channels = 2 * a["num_k_heads"] * a["head_k_dim"] + a["num_v_heads"] * a["head_v_dim"]
    conv = _divide(channels, tp, "conv channels") * (a["conv_kernel"] - 1)
    return conv, _divide(a["num_v_heads"], tp, "value heads (num_v_heads)") * a["head_v_dim"] * a["head_k_dim"]


CALCULATORS = {"mamba1": _mamba1, "mamba2": _mamba2, "gated_delta_net": _gated_delta_net}
ARGUMENTS = {
    "mamba1": ("intermediate_size", "state_size", "conv_kernel"),
    "mamba2": ("intermediate_size", "n_groups", "num_heads", "head_dim", "state_size", "conv_kernel"),
    "gated_delta_net": ("num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim", "conv_kernel"),
}


def state_page(
    table: Mapping[str, Any],
    values: Mapping[Any, int],
    keys: Mapping[str, Any],
    tp: int,
    model_bytes: int,
    engine_title: str = "vLLM",
):
    """The state page of a model type's record table (``[states.<model_type>]``) on one of ``tp`` ranks.
    ``model_bytes``: bytes of the model's dtype (mamba_cache_dtype ``auto``: the conv state, and the temporal state
    unless the table names an ssm dtype of its own); a ``conv_dtype`` in the table is the conv state's own dtype
    (SGLang: bfloat16 whatever the model's)."""
    from ..formulas.derivation import evaluate_int
    from ..formulas.expressions import formula

    calculator = table["calculator"]
    arguments = {
        name: evaluate_int(formula(table[name], f"[states] {name}"), values, name) for name in ARGUMENTS[calculator]
    }
    conv, temporal = CALCULATORS[calculator](tp, arguments)
    ssm = table.get("ssm_dtype")  # the model's own default of mamba_ssm_cache_dtype (NemotronH: float32)
    if ssm is not None:
        ssm = str(keys.get(table.get("ssm_dtype_key", ""), None) or ssm)
        if ssm not in DTYPE_BYTES:
            raise LlmcountError(f"{table.get('ssm_dtype_key')}: {ssm[:40]!r} is not a state dtype {engine_title} takes")
    temporal_bytes = DTYPE_BYTES[ssm] if ssm else model_bytes
    conv_bytes = DTYPE_BYTES[table["conv_dtype"]] if "conv_dtype" in table else model_bytes
    return StatePage(conv, conv_bytes, temporal, temporal_bytes, calculator, ssm or "the model's dtype")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def unified_block(block: int, kernel_block: int, attention_token_bytes: int, largest_state_page: int) -> int:
    """Platform._align_hybrid_block_size: the attention block size (tokens) whose page holds the largest state
    page: kernel_block · cdiv(state page, kernel_block · attention bytes per token), never below ``block``."""
    needed = kernel_block * cdiv(largest_state_page, kernel_block * attention_token_bytes)
    return max(block, needed)
