"""Write-up commands: writeup, chart."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..errors import LlmcountError
from ..sizes import SUFFIX_HELP, parse_size
from .app import app, fail, print_json, usage_error
from .options import SPEC_HELP, ModelArgument
from .training import (
    AttentionKind,
    AttentionOption,
    DpOption,
    EpOption,
    LoraOption,
    LoraTargetsOption,
    Optimizer,
    OptimizerOption,
    PpOption,
    Recompute,
    RecomputeOption,
    SequenceParallelOption,
    TpOption,
    ZeroOption,
)


class WriteupFormat(str, Enum):
    markdown = "markdown"
    latex = "latex"
    html = "html"


class Flavor(str, Enum):
    dollars = "dollars"
    commonmark = "commonmark"


class MathRenderer(str, Enum):
    mathml = "mathml"
    katex = "katex"


class Lang(str, Enum):
    en = "en"
    zh = "zh"


@app.command()
def writeup(
    spec: ModelArgument,
    fmt: Annotated[
        WriteupFormat,
        typer.Option(
            "--format",
            "-f",
            help="Markdown with $…$ math and a Mermaid pie, a LaTeX article, or one self-contained HTML page "
            "(math pre-rendered by KaTeX, chart inline; needs node with katex, and matplotlib).",
        ),
    ] = WriteupFormat.markdown,
    lang: Annotated[Lang, typer.Option("--lang", "-l", help="Language of the prose: en or zh (中文).")] = Lang.en,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write the post to this file (default, or -: stdout).")
    ] = None,
    chart: Annotated[
        str | None, typer.Option("--chart", help="Also draw the parameter shares to this .png/.svg/.pdf and link it.")
    ] = None,
    index: Annotated[
        str | None,
        typer.Option(
            "--index", help="A model.safetensors.index.json: add a section checking total_size against the count."
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="The checkpoint's dtype for --index (default: the config's torch_dtype); with --training, the "
            "compute dtype, as for memory --training (default bf16).",
        ),
    ] = None,
    sections: Annotated[
        str | None,
        typer.Option(
            "--sections",
            help="The parts of the post, comma-separated: tree (the module tree as print(model) shows it), params "
            "(notation, each component's formula, total, activated, the model card), weights (each component's table "
            "of weights), formula (the total as one formula of the config's sizes), embedding (embedding and "
            "non-embedding parameters), leading (one layer to leading order), shares (where the parameters sit), "
            "flops (forward FLOPs per token at S), memory (weights per dtype, the KV cache per token), attention (MHA, "
            "GQA, MQA and MLA compared), training (model states and activations per GPU; also with --training), quant "
            "(the quantisation scheme, bits per weight by tensor class); all: every part but training and quant (the "
            "long form). Default: tree,params,shares (a post).",
        ),
    ] = None,
    seq: Annotated[
        str,
        typer.Option(
            "--seq",
            "-s",
            help=f"Sequence length S of the flops and memory sections: 4096, 8k; {SUFFIX_HELP}.",
            metavar="SIZE",
        ),
    ] = "4096",
    flavor: Annotated[
        Flavor,
        typer.Option(
            "--flavor",
            help="Markdown math: dollars ($…$, $$…$$ for KaTeX/MathJax) or commonmark ($`…`$ and ```math fences, "
            "kept whole by a renderer with no math extension).",
        ),
    ] = Flavor.dollars,
    math: Annotated[
        MathRenderer,
        typer.Option(
            "--math",
            help="HTML math: mathml (written in Python, shown natively by every current browser; needs nothing "
            "more) or katex (KaTeX's typesetting and fonts; needs Node.js and `npm install katex`).",
        ),
    ] = MathRenderer.mathml,
    family_sizes: Annotated[
        str | None,
        typer.Option(
            "--family-sizes",
            help="Instead of one model's post, compare sizes of the family MODEL names (its model_type): a,b,c as "
            "presets, config files or Hub ids; a table and a chart of how the shares of the components move.",
            metavar="A,B,...",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the write-up's numbers and text as JSON.")] = False,
    author: Annotated[
        str | None, typer.Option("--author", help="The author under the title (LaTeX \\author; a byline otherwise).")
    ] = None,
    date: Annotated[
        str | None, typer.Option("--date", help="The date under the title, as written (none by default).")
    ] = None,
    training: Annotated[
        bool,
        typer.Option(
            "--training",
            help="Add the training-memory section: model states and activations per GPU, derived (docs/training.md).",
        ),
    ] = False,
    batch: Annotated[
        str, typer.Option("--batch", "-b", help="With --training: sequences per step, B.", metavar="SIZE")
    ] = "1",
    optimizer: OptimizerOption = Optimizer.adamw,
    zero: ZeroOption = "0",
    dp: DpOption = "1",
    tp: TpOption = "1",
    pp: PpOption = "1",
    ep: EpOption = "1",
    attention: AttentionOption = AttentionKind.sdpa,
    recompute: RecomputeOption = Recompute.none,
    sequence_parallel: SequenceParallelOption = False,
    lora: LoraOption = None,
    lora_targets: LoraTargetsOption = "attention,mlp",
) -> None:
    """Write a blog-ready derivation of a model's parameter count: variables, one section per component,
    the total with the numbers substituted, activated parameters (MoE), the leading-order term per layer,
    a parameter distribution and, with --index, a check against the checkpoint; with --training, the
    memory of training it per GPU (model states under an optimizer and ZeRO, activations).

    With --family-sizes, MODEL is a family (model_type) and the post compares its sizes.

    Example: llmcount writeup qwen3-235b-a22b --lang zh -o qwen3-moe.md

    Example: llmcount writeup llama-3-8b --training --batch 4 --seq 4096 --zero 3 --dp 8

    Example: llmcount writeup qwen3 --family-sizes qwen3-0.6b,qwen3-8b,qwen3-32b
    """
    from ..renderers.writeup import ALL, ALL_SECTIONS, build, save
    from ..renderers.writeup_training import Settings
    from . import training as cli_training

    parallel = {
        "--optimizer": optimizer,
        "--zero": zero,
        "--dp": dp,
        "--tp": tp,
        "--pp": pp,
        "--ep": ep,
        "--attention": attention,
        "--recompute": recompute,
        "--sequence-parallel": sequence_parallel,
        "--lora": lora,
        "--lora-targets": lora_targets,
    }
    if family_sizes is not None:  # an option of one model's post is refused, not ignored
        one_post = (("--index", index), ("--dtype", dtype), ("--sections", sections), ("--training", training))
        one_post += (("--math", math != MathRenderer.mathml), ("--author", author), ("--date", date))
        given = [name for name, value in one_post if value]
        given += ["--seq"] * (seq != "4096") + ["--batch"] * (batch != "1")
        given += [option for option, value in parallel.items() if value != cli_training.DEFAULTS[option]]
        if given:
            raise usage_error(f"{given[0]} is for one model's post, not for --family-sizes")
        _write_sizes(spec, family_sizes, fmt, lang, output, chart, flavor, as_json)
        return

    choices = (*ALL_SECTIONS, ALL)
    unknown = [part.strip() for part in (sections or "").split(",") if part.strip() not in choices]
    if sections is not None and unknown:  # a usage error, as for an unknown --format
        message = f"unknown --sections value {unknown[0]!r} in {sections!r}; choose from {', '.join(choices)}"
        raise usage_error(message)
    given = parallel
    shown = training or "training" in [part.strip() for part in (sections or "").split(",")]
    if not shown:
        if batch != "1":
            raise usage_error("--batch needs --training")
        for option, value in given.items():
            if value != cli_training.DEFAULTS[option]:
                raise usage_error(f"{option} needs --training")
    try:
        if dtype is not None:  # a name checked where it is given, also when neither --index nor --training reads it
            from ..dtypes import lookup

            try:
                lookup(dtype)
            except LlmcountError as exc:
                raise LlmcountError(f"--dtype: {exc}") from None
        seq_ = parse_size(seq, "--seq")
        settings = None
        if shown:
            settings = Settings(
                batch=parse_size(batch, "--batch"),
                optimizer=optimizer.value,
                parallel=cli_training.parallel_from(given),
                attention=attention.value,
                recompute=recompute.value,
                dtype=dtype or Settings.dtype,
                lora=cli_training.lora_from(given),
            )
        post = build(
            spec,
            fmt.value,
            lang.value,
            output=output,
            chart=chart,
            index=index,
            dtype=dtype,
            flavor=flavor.value,
            math=math.value,
            sections=sections,
            seq=seq_,
            training=settings,
            author=author,
            date=date,
        )
        save(post.files)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json({**post.data, "text": post.text})
    elif post.data["output"] is None:  # no -o, or -o -
        typer.echo(post.text, nl=False)


def _write_sizes(
    family: str,
    sizes: str,
    fmt: WriteupFormat,
    lang: Lang,
    output: str | None,
    chart: str | None,
    flavor: Flavor,
    as_json: bool,
) -> None:
    from ..renderers.family import build_sizes
    from ..renderers.writeup import save

    try:
        post = build_sizes(family, sizes, fmt.value, lang.value, output=output, chart=chart, flavor=flavor.value)
        save(post.files)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json({**post.data, "text": post.text})
    elif post.data["output"] is None:
        typer.echo(post.text, nl=False)


@app.command(name="chart")
def chart_(
    specs: Annotated[list[str], typer.Argument(help="One or more models. " + SPEC_HELP, metavar="MODEL...")],
    output: Annotated[str, typer.Option("--output", "-o", help="The image to write: .png, .svg or .pdf.")],
    activated: Annotated[
        bool, typer.Option("--activated", help="Add a bar of activated parameters per token for each MoE model.")
    ] = False,
    lang: Annotated[
        Lang, typer.Option("--lang", "-l", help="Language of the title, axis, legend and labels: en or zh.")
    ] = Lang.en,
    as_json: Annotated[bool, typer.Option("--json", help="Also print the counts and shares drawn, as JSON.")] = False,
) -> None:
    """Draw where the parameters sit: one stacked bar of component shares per model (needs matplotlib:
    pip install 'llmcount[plot]').

    Example: llmcount chart qwen3-30b-a3b qwen3-235b-a22b --activated --lang zh -o moe.svg
    """
    from ..renderers.charts import chart
    from ..renderers.writeup import save

    try:
        drawn = chart(specs, output, activated, lang.value)
        save(drawn.files)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(drawn.data)
