"""The arguments and options many commands share, declared once, and the parsing of the values they take."""

from __future__ import annotations

from typing import Annotated

import typer

from ..sizes import parse_size

ACTIVATED_HELP = (
    "Activated (MoE) = every parameter except the routed experts, plus k/n of the routed experts; "
    "the router and shared experts count fully. For dense models activated = total."
)

SPEC_HELP = "A bundled preset (see `llmcount list`), a config.json, a folder holding one, or a Hub id."

# The arguments and options many commands share, declared once.
ModelArgument = Annotated[str, typer.Argument(help=SPEC_HELP, metavar="MODEL")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ActivatedOption = Annotated[
    bool, typer.Option("--activated", help="The activated count (MoE), as `llmcount --help` defines it.")
]
CsvOption = Annotated[
    bool, typer.Option("--csv", help="One CSV row per model with a header: model,family,source,total,...")
]
JsonlOption = Annotated[bool, typer.Option("--jsonl", help="One JSON object per line, one line per model.")]
GpuMemoryUtilizationOption = Annotated[
    str | None,
    typer.Option(
        "--gpu-memory-utilization",
        help="With --engine and a GPU: the share of each GPU the engine fills, applied as the engine applies it "
        "(vLLM gpu_memory_utilization and SGLang mem_fraction_static: of the GPU for weights and KV cache; "
        "TensorRT-LLM free_gpu_memory_fraction and LMDeploy cache_max_entry_count: of what the weights leave). "
        "A fraction in (0, 1]. Without it the engine's default (vLLM 0.92, TensorRT-LLM 0.9, LMDeploy 0.8; "
        "SGLang's depends on the device: the whole GPU, said so).",
        metavar="F",
    ),
]
AttentionBackendOption = Annotated[
    str | None,
    typer.Option(
        "--attention-backend",
        help="With --engine sglang: the attention backend, which sets the page size (trtllm_mha 64, fa4 128, "
        "flashmla 64 ...; default page_size 1).",
        metavar="NAME",
    ),
]
DiscoverOption = Annotated[
    bool,
    typer.Option(
        "--discover",
        help="A model_type with no bundled record: derive one from transformers' model code (needs torch and"
        " transformers; checked exact against them, cached, and said so on stderr).",
    ),
]
RediscoverOption = Annotated[
    bool,
    typer.Option(
        "--rediscover",
        help="As --discover, deriving the record again even when one (or the reason a discovery failed) is cached.",
    ),
]


def positive_int(option: str, value: str) -> int:
    """A positive integer typed by the user, without size suffixes; LlmcountError naming the option otherwise."""
    return parse_size(value, option, suffixes=False)
