"""The Python API, re-exported by ``llmcount``: :func:`load`, :func:`flops`, :func:`memory`, :func:`training`,
:func:`fit`, :func:`conventions`, :func:`mfu`, :func:`check`, :func:`approx`, :func:`writeup`.

    >>> import llmcount
    >>> m = llmcount.load("qwen3-32b")
    >>> m.counts.total
    32762123264
    >>> m.derivation.total            # a sympy expression over the glossary's symbols
    3*N*d*d_ff + 2*N*d*h*h_d + 2*N*d*h_d*h_kv + 2*N*d + 2*N*h_d + 2*V*d + d

Each function takes what ``llmcount count`` takes (a preset, a config.json, a folder, a Hub id, ``-``
for stdin) or a model already loaded; each raises :class:`llmcount.LlmcountError` on bad input. In a notebook
every result shows itself as a table (``_repr_html_``, ``_repr_markdown_``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Union

from .errors import LlmcountError
from .shown import Shown, ShownList
from .sizes import parse_size

if TYPE_CHECKING:
    from .analysis.approx import Approximation
    from .analysis.check import Check
    from .counting import Counted
    from .formulas.capacity import Fit
    from .formulas.config import Model
    from .formulas.conventions import Convention, Utilisation
    from .formulas.derivation import Counts, Derivation
    from .formulas.flops import FlopCounts
    from .formulas.memory import Memory
    from .formulas.training import Training
    from .serving import Shard

DEFAULT_SEQ = 4096


class Loaded(Shown):
    """A model read from its config: ``.counts`` (exact integers), ``.derivation`` (sympy expressions)
    and ``.model``, the :class:`llmcount.formulas.config.Model` the CLI uses. In a notebook it shows
    its counts and formula (``_repr_markdown_``, ``_repr_latex_``), or its counts as a table (``_repr_html_``).

    A config the compiled path counts (:mod:`llmcount.counting`) is held as its
    :class:`~llmcount.counting.Counted`: ``.counts.total`` and the other sums, ``.values``, ``.name``, ``.family``,
    ``.source`` and ``to_dict()`` are computed without sympy; ``.model``, ``.derivation``, the components (each with
    its formula as a sympy expression) and the notebook's formula read the config through the sympy path when first
    asked for, once."""

    def __init__(self, model: Model | Counted) -> None:
        self._read = model

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Loaded) and (self is other or self.model == other.model)

    __hash__ = None  # type: ignore[assignment]

    @cached_property
    def model(self) -> Model:
        """The sympy path's :class:`~llmcount.formulas.config.Model` of the config (imports sympy)."""
        read = self._read
        return read.full() if _is_counted(read) else read

    @cached_property
    def counts(self) -> Counts | PlainCounts:
        """``.total``, ``.activated``, ``.embedding``, ``.non_embedding``, ``.components``, ``.values``."""
        read = self._read
        return PlainCounts(self) if _is_counted(read) else read.counts

    @property
    def derivation(self) -> Derivation:
        """``.total``, ``.activated``, ``.per_layer`` as sympy expressions; ``.terms`` in reader's order."""
        return self.model.derivation

    @property
    def name(self) -> str:
        return self._read.name

    @property
    def family(self) -> str:
        """The config's ``model_type``: ``qwen3``, ``llama``, ``deepseek_v3`` …"""
        return self._read.architecture.name

    @property
    def source(self) -> str:
        return self._read.source

    @property
    def values(self) -> dict[str, int]:
        """The config's value of each symbol: ``{"N": 64, "V": 151936, "d": 5120, …}``."""
        return self.counts.values

    def to_dict(self) -> dict[str, Any]:
        """What ``llmcount count --json`` prints: exact integers, components, formulas."""
        read = self._read
        if _is_counted(read):
            from .counting import Fallback

            try:
                return read.count_data()  # the compiled snapshot's formulas: no sympy
            except Fallback:
                pass
        from .renderers import count_data

        return count_data(self.model)

    def __repr__(self) -> str:
        return f"<llmcount {self.name}: {self.family}, {self.counts.total:,} parameters>"

    def _repr_markdown_(self) -> str:
        from .renderers import notebook

        return notebook.markdown(self.model)

    def _repr_latex_(self) -> str:
        from .renderers import notebook

        return notebook.latex(self.model)


def _is_counted(read: Any) -> bool:
    return type(read).__name__ == "Counted"  # counting.Counted, without importing the module for the test


class PlainCounts:
    """The counts of a config the compiled path read (no sympy): ``.total``, ``.activated``, ``.embedding``,
    ``.non_embedding`` and ``.values`` as the sympy path's :class:`~llmcount.formulas.derivation.Counts` gives them;
    ``.components`` are that ``Counts``' own (each term's formula a sympy expression), read when first asked for."""

    __slots__ = ("_loaded", "activated", "embedding", "non_embedding", "total", "values")

    def __init__(self, loaded: Loaded) -> None:
        counted = loaded._read
        self._loaded = loaded
        self.total = counted.total
        self.activated = counted.activated
        self.embedding = counted.embedding
        self.non_embedding = self.total - self.embedding
        self.values = counted.values

    @property
    def components(self) -> tuple:
        return self._loaded.model.counts.components

    def __eq__(self, other: object) -> bool:
        fields = ("total", "activated", "embedding", "values")
        return all(getattr(self, f) == getattr(other, f, None) for f in fields) and (
            self.components == getattr(other, "components", None)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"PlainCounts(total={self.total}, activated={self.activated}, embedding={self.embedding}, "
            f"values={self.values})"
        )


Spec = Union[str, "os.PathLike[str]", Loaded, "Model"]


def load(spec: Spec, discover: bool = False) -> Loaded:
    """The model ``spec`` names: a bundled preset (``"qwen3-32b"``), a config.json or a folder holding one
    (a ``str`` or a ``Path``), a Hub id, or ``"-"`` for a config on stdin. ``discover=True``: a model_type with
    no bundled record is read with a record derived from transformers' code (as ``count --discover``).

    >>> llmcount.load("llama-2-7b").counts.total
    6738415616
    """
    if isinstance(spec, Loaded):
        return spec
    if _is_model(spec):
        return Loaded(spec)
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise LlmcountError(f"a model is a preset name, a path or a Hub id, got {type(spec).__name__}")
    if discover:
        from .sources import load as load_model

        return Loaded(load_model(spec, discover))
    from .sources import load_counted

    return Loaded(load_counted(spec))  # the compiled path when it takes the config (no sympy), else the sympy path's


def _is_model(spec: Any) -> bool:
    """Whether ``spec`` is a :class:`~llmcount.formulas.config.Model` (one exists only once its module, which
    imports sympy, is imported: it is not imported to answer)."""
    config = sys.modules.get("llmcount.formulas.config")
    return config is not None and isinstance(spec, config.Model)


def flops(spec: Spec, seq: int | str = DEFAULT_SEQ, batch: int | str = 1, causal: bool = False) -> FlopCounts:
    """Forward FLOPs of ``batch`` sequences of ``seq`` tokens, as ``llmcount flops`` computes them:
    ``.forward``, ``.per_token``, ``.training`` (3 × forward), ``.rule_of_thumb`` (6·N·tokens),
    ``.components``. ``seq`` and ``batch`` may be ``"32k"`` (= 32,768; k = 1024).

    >>> llmcount.flops("llama-2-7b", seq="2k").seq
    2048
    """
    seq_, batch_ = parse_size(seq, "seq"), parse_size(batch, "batch")
    counted = _counted(spec)
    if counted is not None:
        from .counting import Fallback

        try:
            return counted.flops(seq_, batch_, bool(causal))  # the compiled formula: no sympy
        except Fallback:
            spec = counted.full()
    from .formulas.flops import Flops

    model = load(spec).model
    return Flops(model.derivation, causal=causal).evaluate(model.values, seq_, batch_)


def _counted(spec: Spec) -> Counted | None:
    """``spec`` read by the compiled path (:func:`llmcount.sources.load_counted`, which says what ``load`` says about
    it) when it names a config (not a model already loaded) and the compiled path takes it; else None."""
    if isinstance(spec, Loaded) and _is_counted(spec._read):
        return spec._read
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        return None
    from .counting import Counted
    from .sources import load_counted

    model = load_counted(spec)
    return model if isinstance(model, Counted) else None


def memory(
    spec: Spec,
    dtype: str = "bf16",
    *,
    kv_dtype: str | None = None,
    seq: int | str = DEFAULT_SEQ,
    batch: int | str = 1,
    group_size: int | None = None,
    scale_dtype: str = "fp16",
    overhead: int = 0,
    training: bool = False,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
) -> Memory | Training | Shard:
    """Memory in exact bytes, as ``llmcount memory`` computes it: weights + KV cache for ``batch`` × ``seq``
    tokens (``.total_bytes``, ``.total_gib``, ``.lines``), or with ``training=True`` what :func:`training`
    gives with its defaults (mixed-precision AdamW on one GPU). With ``tp``, ``pp``, ``dp`` or ``ep`` above 1,
    inference per GPU as ``memory --tp ...`` gives it (:class:`llmcount.serving.Shard`: ``.weights_bytes``,
    ``.kv_bytes``, ``.total_bytes`` of one GPU).

    >>> llmcount.memory("llama-2-7b", seq="4k").kv_per_token_bytes
    524288
    """
    if training:
        return _training(spec, dtype, seq=seq, batch=batch)
    seq_, batch_ = parse_size(seq, "seq"), parse_size(batch, "batch")
    degrees = {
        name: parse_size(value, name, suffixes=False)
        for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep))
    }
    if group_size is None and overhead == 0 and all(value == 1 for value in degrees.values()):
        counted = _counted(spec)
        if counted is not None:  # the compiled snapshot's memory: no sympy
            from . import plain_memory
            from .counting import Fallback

            try:
                positions = plain_memory.max_positions(counted.config)
                return plain_memory.inference(counted, dtype, kv_dtype, seq_, batch_, positions)
            except Fallback:
                spec = counted.full()
    from .formulas import memory as mem

    model = load(spec).model
    if any(value > 1 for value in degrees.values()):
        from . import serving

        return serving.shard(model, serving.Layout(**degrees), dtype, kv_dtype, seq_, batch_)
    groups = parse_size(group_size, "group_size", suffixes=False) if group_size is not None else None
    percent = 0 if overhead == 0 else parse_size(overhead, "overhead", suffixes=False)
    result = mem.inference(
        model.derivation, model.values, dtype, kv_dtype, seq_, batch_, groups, scale_dtype, percent, model.max_positions
    )
    from .formulas.tower_memory import with_parts

    return with_parts(model, result, percent)  # a composite's vision tower and projector: the whole model, as the CLI


def training(
    spec: Spec,
    dtype: str = "bf16",
    *,
    seq: int | str = DEFAULT_SEQ,
    batch: int | str = 1,
    optimizer: str = "adamw",
    zero: int = 0,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    sequence_parallel: bool = False,
    lora: int | None = None,
    lora_targets: str | tuple[str, ...] = ("attention", "mlp"),
    attention: str = "sdpa",
    recompute: str = "none",
    freeze_vision: bool = False,
) -> Training:
    """Training memory per GPU, as ``llmcount memory --training`` computes it: model states after ZeRO and
    tp/pp/ep sharding (``.lines``, ``.model_states_bytes``), the activations of ``batch`` × ``seq`` tokens
    (``.activations``), ``.total_bytes``. Options as the command's (docs/training.md); a composite's vision tower and
    projector are trained with the language model, or with ``freeze_vision`` held as weights only (``--freeze-vision``).

    >>> llmcount.training("llama-2-7b", seq="4k").model_states_bytes == 16 * 6_738_415_616
    True
    """
    seq_, batch_ = parse_size(seq, "seq"), parse_size(batch, "batch")
    if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
        raise LlmcountError(f"zero {zero!r}: choices: 0, 1, 2, 3")
    for name, value in (("dtype", dtype), ("optimizer", optimizer), ("attention", attention), ("recompute", recompute)):
        if not isinstance(value, str):  # a list or a number where a name is expected: refused, not a TypeError
            raise LlmcountError(f"{name} must be a name (a string), got {type(value).__name__} {str(value)[:40]!r}")
    if not isinstance(lora_targets, (str, list, tuple)):
        raise LlmcountError(f"lora_targets must be names, a,b or a list, got {type(lora_targets).__name__}")
    degrees = {
        name: parse_size(value, name, suffixes=False)
        for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep))
    }
    targets = lora_targets.split(",") if isinstance(lora_targets, str) else lora_targets  # "attention,mlp" too
    targets = tuple(str(t).strip() for t in targets if str(t).strip())
    if lora is not None and not targets:
        raise LlmcountError("lora_targets: give at least one group or module name")
    rank = None if lora is None else parse_size(lora, "lora", suffixes=False)
    counted = _counted(spec)
    if counted is not None:  # the training snapshot's estimate: no sympy
        from . import plain_training as plain
        from .counting import Fallback

        try:
            result = plain.estimate(
                counted,
                dtype,
                seq_,
                batch_,
                optimizer,
                plain.Parallel(zero=zero, sequence_parallel=bool(sequence_parallel), **degrees),
                attention,
                recompute,
                None if rank is None else plain.Lora(rank, targets),
            )
        except (LlmcountError, Fallback):  # not taken, or refused: the sympy path words it
            spec = counted.full()
        else:
            if freeze_vision:  # the compiled path reads language models only, as formulas.tower_memory says
                raise LlmcountError(
                    f"--freeze-vision: {counted.name} has no vision tower counted (a language model only)"
                )
            return result
    from .formulas import training as tr

    model = load(spec).model
    parallel = tr.Parallel(zero=zero, sequence_parallel=bool(sequence_parallel), **degrees)
    adapters = None if rank is None else tr.Lora(rank, targets)
    result = tr.estimate(model, dtype, seq_, batch_, optimizer, parallel, adapters, attention, recompute)
    from .formulas.tower_memory import with_parts_training

    return with_parts_training(model, result, optimizer, freeze_vision, adapters)  # as memory --training counts them


def conventions(spec: Spec, seq: int | str = DEFAULT_SEQ) -> list[Convention]:
    """Training FLOPs per token at S = ``seq`` as each named convention counts them (Kaplan, Chinchilla, PaLM,
    Megatron with and without recompute, torchtitan, MaxText, llmcount eager and causal), as ``flops --conventions``:
    ``.name``, ``.training_flops_per_token``, ``.formula``, ``.source``."""
    from .counting import Fallback
    from .formulas.conventions import conventions as every
    from .formulas.conventions import rows
    from .plain_glance import ingredients

    seq_ = parse_size(seq, "seq")
    counted = _counted(spec)
    if counted is not None:
        try:
            return ShownList(rows(ingredients(counted, seq_)), kind="conventions")  # from the snapshot: no sympy
        except Fallback:
            spec = counted.full()
    return ShownList(every(load(spec).model, seq_), kind="conventions")


def mfu(
    spec: Spec,
    tokens_per_second: float | str,
    *,
    gpu: str | None = None,
    peak_tflops: float | str | None = None,
    gpus: int = 1,
    seq: int | str = DEFAULT_SEQ,
    dtype: str = "bf16",
    convention: str = "palm",
) -> Utilisation:
    """Model FLOPs utilisation, as ``llmcount mfu``: ``tokens_per_second`` (all GPUs together) × training FLOPs per
    token under ``convention`` over ``gpus`` × the dense peak of ``gpu`` (or ``peak_tflops``); ``.mfu`` is exact."""
    from .dtypes import canonical
    from .formulas.conventions import utilisation
    from .gpus import peak
    from .sizes import parse_positive

    rate = parse_positive(str(tokens_per_second), "tokens_per_second")
    if not isinstance(convention, str):
        raise LlmcountError(f"convention must be a name (palm, kaplan, ...), got {type(convention).__name__}")
    dtype_ = canonical(dtype)
    if dtype_ not in ("bf16", "fp8"):
        raise LlmcountError(f"dtype: the peaks are of bf16 or fp8, got {dtype!r}")
    per_gpu, name = peak(gpu, peak_tflops, dtype_)
    count = parse_size(gpus, "gpus", suffixes=False)
    args = (parse_size(seq, "seq"), rate, count, per_gpu, name, dtype_, convention)
    counted = _counted(spec)
    if counted is not None:
        from .counting import Fallback
        from .plain_glance import ingredients

        try:
            return utilisation(counted, *args, read=ingredients)  # from the snapshot: no sympy
        except Fallback:
            spec = counted.full()
    return utilisation(load(spec).model, *args)


def fit(
    spec: Spec,
    gpu_memory: str,
    dtype: str = "bf16",
    *,
    kv_dtype: str | None = None,
    seq: int | str = DEFAULT_SEQ,
    overhead: int = 0,
    group_size: int | None = None,
    scale_dtype: str = "fp16",
) -> Fit:
    """What fits in ``gpu_memory`` (``"80GiB"``, ``"24GB"``), as ``memory --gpu-memory``: ``.max_seq`` at B = 1 and
    ``.max_batch`` at S = ``seq`` (``None``: memory sets no limit, the cache stops growing)."""
    from .sizes import parse_bytes

    capacity = parse_bytes(gpu_memory, "gpu_memory")
    groups = parse_size(group_size, "group_size", suffixes=False) if group_size is not None else None
    percent = 0 if overhead == 0 else parse_size(overhead, "overhead", suffixes=False)
    seq_ = parse_size(seq, "seq")
    counted = _counted(spec) if groups is None and percent == 0 else None
    if counted is not None:  # searched over the compiled snapshot's memory: no sympy
        from . import plain_memory
        from .counting import Fallback

        try:
            positions = plain_memory.max_positions(counted.config)
            return plain_memory.fit(counted, capacity, dtype, kv_dtype, seq_, positions)
        except (LlmcountError, Fallback):  # not taken, or refused: the sympy path words it
            spec = counted.full()
    from .formulas.capacity import fit as search
    from .tower_parallel import whole_memory

    model = load(spec).model
    return search(
        model.derivation,
        model.values,
        capacity,
        dtype,
        kv_dtype,
        seq_,
        percent,
        groups,
        scale_dtype,
        model.max_positions,
        whole=whole_memory(model, percent),  # a composite's vision tower and projector in the weights
    )


def check(spec: Spec, formula: str, activated: bool = False) -> Check:
    """A hand-written formula against the exact count, as ``llmcount check``: ``.exact``, ``.claimed``,
    ``.relative_error``, ``.missing`` and ``.extra`` (the terms one side has, by component). The formula is written
    as people write it: ``"12 N d^2"``, ``"12·N·d²"``, ``"2*V*d + 11.5*d**2*N"``.

    >>> llmcount.check("gpt2-xl", "12 N d^2").claimed
    1474560000
    """
    from .analysis.check import check as check_formula

    if not isinstance(formula, str):
        raise LlmcountError(f"formula must be a string, got {type(formula).__name__}")
    return check_formula(load(spec).model, formula, activated=activated)


def approx(
    spec: Spec,
    assume: str | tuple[str, ...] | list[str] = (),
    over: tuple[Spec, ...] | list[Spec] = (),
    activated: bool = False,
    embedding: bool = True,
) -> Approximation:
    """The leading term of the count as d grows, under the config's ratios or ``assume``d ones (``"d_ff=4d"``),
    with its error on the model and on ``over``, as ``llmcount approx``: ``.leading_per_layer``, ``.leading_total``,
    ``.evaluations``, ``.shares``."""
    from .analysis.approx import approximate
    from .analysis.parse import Vocabulary, parse_setting

    texts = [assume] if isinstance(assume, str) else assume
    if not isinstance(texts, (list, tuple)) or not all(isinstance(text, str) for text in texts):
        raise LlmcountError(f"assume must be a string or a list of strings (d_ff=4*d), got {type(assume).__name__}")
    one = isinstance(over, (str, os.PathLike, Loaded)) or type(over).__name__ == "Model"
    over = [over] if one else over  # one model given alone, not read as a sequence of its characters
    if not isinstance(over, (list, tuple)):
        raise LlmcountError(f"over must be a model or a list of models, got {type(over).__name__}")
    model = load(spec).model
    derivation = model.derivation
    known = Vocabulary.of(derivation.symbols, model.name)
    settings = [parse_setting(text, "assume", known=known) for text in texts]
    others = [load(other).model for other in over]
    return approximate(derivation, model, settings, others, activated=activated, embedding=embedding)


@dataclass(frozen=True)
class Post(Shown):
    """A write-up: ``.text`` in ``.format`` (markdown, latex or html), ``.data`` (what ``writeup --json`` gives).
    A notebook shows a Markdown post as Markdown and an HTML page as the page."""

    model: str
    format: str
    text: str
    data: dict[str, Any]

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text if self.format == "markdown" else f"```{self.format}\n{self.text}\n```"

    def _repr_html_(self) -> str | None:  # type: ignore[override]
        return self.text if self.format == "html" else None


def writeup(
    spec: str,
    format: str = "markdown",
    lang: str = "en",
    *,
    sections: str | None = None,
    index: str | None = None,
    dtype: str | None = None,
    seq: int | str = DEFAULT_SEQ,
) -> Post:
    """A blog-ready derivation of the model's parameter count, as ``llmcount writeup`` prints it (nothing is
    written to a file): ``format`` markdown, latex or html, ``lang`` en or zh, ``sections`` as ``--sections``.

    >>> llmcount.writeup("gpt2").text.startswith("# How many parameters does GPT-2 have?")
    True
    """
    from .renderers.writeup import build

    if not isinstance(spec, str):
        raise LlmcountError(f"a write-up's model is a preset name, a path or a Hub id, got {type(spec).__name__}")
    if sections is not None and not isinstance(sections, str):
        raise LlmcountError(f"sections must be a string (params,shares), got {type(sections).__name__}")
    post = build(spec, format, lang, sections=sections, index=index, dtype=dtype, seq=parse_size(seq, "seq"))
    return Post(post.data.get("model", spec), format, post.text, post.data)


_training = training  # for memory(), whose flag of the same name hides it
