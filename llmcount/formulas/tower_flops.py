"""Forward FLOPs of the parts of a composite model that see images, per image, and the image tokens they give the
language model.

A tower or projector record (``towers/``) lists, in its ``[[flops]]``, the matmul-type operations of one forward pass
over one image at the config's image size, each the FLOPs of one of its ``layers`` layers, in the convention of
:mod:`.flops` (torch's ``FlopCounterMode``: 2 FLOPs per multiply-add; biases, norms, activations, softmax and
pooling not counted); its ``image_tokens`` gives the tokens each image puts into the language model. An entry of a
group (``head/...``) of which the config has no weight (an optional head it leaves out) is not run and not counted;
an entry of a group no term of the record has (a matmul without a weight: Gemma 4's pooler) always runs, and an
entry named as a term of the record runs only when the config has that term.
A part whose record has no ``[[flops]]``, or a weight of a group no entry covers, is refused by name; a record's
``no_flops`` says why its FLOPs cannot be stated from the config and the option (InstructBLIP's Q-Former also reads
the instruction), and is the refusal.

The whole forward for B sequences, each of S text tokens and N images of t tokens: the parts run B·N times, the
language model over S + N·t tokens per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sympy import Add, Expr, expand

from ..errors import LlmcountError
from .derivation import evaluate_int
from .flops import is_matmul_weight
from .symbols import H_img, L_aud, W_img

if TYPE_CHECKING:
    from .config import Model

MAX_IMAGES = 10**6
"""The most images per sequence ``--images`` takes (bounded before any work)."""


@dataclass(frozen=True)
class ImageTerm:
    """One matmul of a part, per image: ``expr`` FLOPs in each of ``layers`` layers, evaluated to ``flops``."""

    role: str  # "vision tower", "projector"
    path: str
    formula: Expr  # layers · expr: the FLOPs of all its layers per image
    note: str
    flops: int


@dataclass(frozen=True)
class ImageFlops:
    """The per-image forward FLOPs of a composite model's image parts on one config: exact integers."""

    parts: tuple[tuple[str, str], ...]  # (role, record title)
    terms: tuple[ImageTerm, ...]
    formula: Expr  # per image, over the parts' symbols
    per_image: int
    image_tokens_formula: Expr
    image_tokens: int
    not_run: tuple[str, ...] = ()  # the parts left out, each with why they do not run on an input image

    def data(self, images: int, batch: int) -> dict:
        """The JSON form: per image, for the images of B sequences, and the image tokens."""
        return {
            "images_per_sequence": images,
            "parts": [{"role": role, "title": title} for role, title in self.parts],
            **({"not_run": list(self.not_run)} if self.not_run else {}),
            "per_image_flops": self.per_image,
            "per_image_formula": str(self.formula),
            "image_tokens_per_image": self.image_tokens,
            "image_tokens_formula": str(self.image_tokens_formula),
            "image_flops": self.per_image * images * batch,
            "components": [
                {"role": t.role, "path": t.path, "formula": str(t.formula), "flops": t.flops} for t in self.terms
            ],
        }


def _whole(expr: Expr, values: dict, what: str, name: str, label: str) -> int:
    """``expr`` at ``values`` as a whole number, or LlmcountError naming ``what`` when the config makes it none (a
    pixel shuffle's tokens that do not divide, a size the config leaves out)."""
    try:
        return evaluate_int(expr, values, what)
    except ValueError as error:
        raise LlmcountError(f"{name}: {label}: {error}") from None


def _refuse(model: Model, why: str) -> LlmcountError:
    return LlmcountError(f"{model.whole_name or model.name}: FLOPs per image: {why}")


def takes_image_size(record: Any) -> bool:
    """Whether a part record's FLOPs or image tokens read the image's size (``H_img``, ``W_img``): a tower whose config
    names none (Qwen-VL's ViTs take images of any size)."""
    exprs = [*(e for op in record.flops for e in (op.expr, op.layers)), record.image_tokens]
    used = set().union(*(e.free_symbols for e in exprs if e is not None))
    return bool(record.image_values) or bool(used & {H_img, W_img})


def sized_values(part: Model, name: str, size: tuple[int, int] | None) -> dict:
    """The values a part's FLOPs and image tokens are evaluated with: its config's, and for a record that reads the
    image's size, ``H_img`` and ``W_img`` from ``size`` (checked by its ``image_checks``) and the sizes its ``[image]``
    computes from them; LlmcountError naming --image-size when it is missing or refused."""
    record = part.architecture
    if not takes_image_size(record):
        return input_values(part, name, {}, "FLOPs per image")  # its image_checks: widths a forward needs to meet
    if size is None:
        raise LlmcountError(
            f"{name}: FLOPs per image: the {record.title} ({record.name}) takes images of any size and its config "
            "names none: give it with --image-size HxW (pixels)"
        )
    return input_values(part, name, {H_img: size[0], W_img: size[1]}, f"--image-size {size[0]}x{size[1]}")


def input_values(part: Model, name: str, given: dict, option: str) -> dict:
    """A part's config values with the sizes of one input (``given``: an image's ``H_img`` and ``W_img``, an audio's
    ``L_aud``), checked by its record's ``image_checks``, and the sizes its ``[image]`` table computes from them, in
    order; LlmcountError naming ``option`` when a check fails or a size is not a whole number of at least 0."""
    record, values = part.architecture, {**part.values, **given}
    namespace = {spec.symbol.name: None for spec in record.symbols}  # a symbol the config leaves unset (window_size 0)
    namespace |= {symbol.name: value for symbol, value in values.items()}
    for rule in record.image_checks:
        if not rule.test(namespace):
            raise LlmcountError(f"{name}: {option}: {rule.message.format_map(namespace)}")
    for symbol, test, text in record.image_values:
        value = test(namespace)
        if type(value) is not int or value < 0:
            raise LlmcountError(f"{name}: {option}: {symbol.name} = {text} is {value!r}")
        values[symbol] = namespace[symbol.name] = value
    return values


def with_tower_tokens(part: Model, values: dict, tokens: int | None) -> dict:
    """``values`` with the tower's tokens per image (``tokens``, at the image size of --image-size) under the symbol
    a projector reads them with (the key ``vision_config.image_tokens``), when it reads them and they are given."""
    from .parts import TOWER_TOKENS

    if tokens is None:
        return values
    for spec in part.architecture.symbols:
        if spec.key == TOWER_TOKENS:
            values = {**values, spec.symbol: tokens}
    return values


def part_flops(
    part: Model, role: str, name: str, size: tuple[int, int] | None = None, tokens: int | None = None
) -> list[ImageTerm]:
    """The matmuls of one part (a tower or a projector read with its record) per image, evaluated on its config (and
    the image's size, for a tower whose config names none; ``tokens``: the tower's tokens per image at that size, for
    a projector that reads them); refused by name when its record has no ``[[flops]]`` or leaves a weight's group
    without an entry."""
    record = part.architecture
    if record.no_flops:
        raise LlmcountError(f"{name}: FLOPs per image: the {record.title} ({record.name}) {record.no_flops}")
    if not record.flops:
        raise LlmcountError(f"{name}: FLOPs per image: no formula for the {record.title} ({record.name}) yet")
    values = with_tower_tokens(part, sized_values(part, name, size), tokens)
    return _evaluated(part, role, name, values, "FLOPs per image")


def _evaluated(part: Model, role: str, name: str, values: dict, what: str) -> list[ImageTerm]:
    """The ``[[flops]]`` entries of a part at ``values``, each over its layers (not those of a group of which the
    config has no weight); a weight of a group no entry covers is refused by name."""
    record = part.architecture
    groups = {t.path.partition("/")[0] for t in part.terms}
    covered = {op.path.partition("/")[0] for op in record.flops}
    uncovered = [t.path for t in part.terms if is_matmul_weight(t) and t.path.partition("/")[0] not in covered]
    if uncovered:
        raise LlmcountError(f"{name}: {what}: no formula for {uncovered[0]} of the {record.title} ({record.name}) yet")
    weighted = {choice.term.path.partition("/")[0] for choice in record.choices}
    paths, present = {choice.term.path for choice in record.choices}, {t.path for t in part.terms}
    terms = []
    for op in record.flops:
        group = op.path.partition("/")[0]
        if group in weighted and group not in groups:
            continue  # a group of which this config has no weight: not run
        if op.path in paths and op.path not in present:
            continue  # the matmul of a term this config does not have (SAM's relative positions): not run
        total = expand(op.layers * op.expr)
        terms.append(ImageTerm(role, op.path, total, op.note, _whole(total, values, f"{op.path} FLOPs", name, what)))
    return terms


def image_flops(model: Model, size: tuple[int, int] | None = None) -> ImageFlops:
    """The per-image FLOPs of ``model``'s vision tower and projector and the tokens per image entering its language
    model (``size``: the image's height and width in pixels, for a tower whose config names none); refused by name
    when the model has no tower, or a part has no FLOPs formula yet."""
    # an image runs through the vision parts: not through an audio encoder or its projector (the first tower's
    # "projector" when the composite's first tower is read from audio_config)
    audio = {"audio tower", "audio projector"}
    if model.composite is not None and model.composite.tower_config == "audio_config":
        audio.add("projector")
    # a tower that does not read the input image (Janus's VQ-VAE and generation head: its towers' not_run) is left
    # out, and said so
    idle = {}
    for tower in model.composite.towers if model.composite is not None else ():
        if tower.not_run:
            idle |= {f"{tower.kind} tower": tower.not_run, f"{tower.kind} projector": tower.not_run}
    not_run = tuple(
        f"the {part.role} ({part.model.architecture.title}): {idle[part.role]}"
        for part in model.parts
        if part.role in idle
    )
    parts = tuple(part for part in model.parts if part.role not in audio and part.role not in idle)
    left_out = model.composite.left_out if model.composite is not None else ""
    if left_out and not any(part.role == "vision tower" for part in parts):
        raise _refuse(model, f"llmcount does not count its vision tower yet (left out: {left_out})")
    if not parts:
        raise _refuse(model, "the model has no vision tower (--images needs a multimodal model whose tower is counted)")
    if size is not None and not any(takes_image_size(part.model.architecture) for part in parts):
        titles = ", ".join(part.model.architecture.title for part in parts)
        raise _refuse(model, f"--image-size: its parts ({titles}) take the image size their config names")
    terms: list[ImageTerm] = []
    tokens: tuple[Expr, int] | None = None
    projected: list[tuple[str, int]] = []  # each projector's tokens per image
    for part in parts:
        name = model.whole_name or model.name
        sized = tokens[1] if tokens is not None and size is not None else None  # the tower's, at --image-size
        terms += part_flops(part.model, part.role, name, size, sized)
        record = part.model.architecture
        values = with_tower_tokens(part.model, sized_values(part.model, name, size), sized)
        if record.image_tokens is not None:  # the last part's: what enters the language model
            what = f"{record.name} image_tokens"
            tokens = (record.image_tokens, _whole(record.image_tokens, values, what, name, "FLOPs per image"))
            if part.role.endswith("projector"):
                projected.append((part.role, tokens[1]))
    if len({count for _, count in projected}) > 1:  # two projectors whose outputs are joined token by token
        given = ", ".join(f"the {role} {count:,}" for role, count in projected)
        raise _refuse(
            model, f"its projectors give different numbers of tokens per image ({given}): the model cannot join them"
        )
    if tokens is None:
        names = ", ".join(part.model.architecture.name for part in parts)
        raise _refuse(model, f"no record of the image tokens entering the language model ({names})")
    return _summed(parts, terms, tokens, not_run)


def _summed(parts: tuple, terms: list[ImageTerm], tokens: tuple[Expr, int], not_run: tuple = ()) -> ImageFlops:
    """The :class:`ImageFlops` of ``parts``: their terms summed, with the tokens the last part hands on."""
    return ImageFlops(
        parts=tuple((part.role, part.model.architecture.title) for part in parts),
        terms=tuple(terms),
        formula=expand(Add(*(t.formula for t in terms))),
        per_image=sum(t.flops for t in terms),
        image_tokens_formula=tokens[0],
        image_tokens=tokens[1],
        not_run=not_run,
    )


AUDIO_ROLES = ("audio tower", "audio projector")
MAX_AUDIO_FRAMES = 10**7
"""The most log-mel frames of one audio ``--audio-frames`` takes (a day of audio at 100 frames a second; bounded
before any work)."""


def audio_flops(model: Model, frames: int) -> ImageFlops:
    """The FLOPs of ``model``'s audio encoder and its projector on one audio of ``frames`` log-mel frames (the
    encoder's ``input_features`` along time: the unit its config reads, while seconds depend on the feature
    extractor's hop) and the audio tokens entering its language model; refused by name when the model has no audio
    encoder counted, or a part has no FLOPs formula yet."""
    roles = set(AUDIO_ROLES)
    if model.composite is not None and model.composite.tower_config == "audio_config":
        roles |= {"audio tower", "projector"}
    parts = tuple(part for part in model.parts if part.role in roles)
    name = model.whole_name or model.name
    if not parts:
        raise LlmcountError(f"{name}: FLOPs per audio: the model has no audio encoder (--audio-frames needs one)")
    terms: list[ImageTerm] = []
    tokens: tuple[Expr, int] | None = None
    option = f"--audio-frames {frames}"
    for part in parts:
        record = part.model.architecture
        if record.no_flops:
            raise LlmcountError(f"{name}: FLOPs per audio: the {record.title} ({record.name}) {record.no_flops}")
        if not record.flops:
            raise LlmcountError(f"{name}: FLOPs per audio: no formula for the {record.title} ({record.name}) yet")
        values = input_values(part.model, name, {L_aud: frames}, option)
        sized = tokens[1] if tokens is not None else None
        values = with_tower_tokens(part.model, values, sized)
        terms += _evaluated(part.model, part.role, name, values, "FLOPs per audio")
        if record.image_tokens is not None:
            what = f"{record.name} audio tokens"
            tokens = (record.image_tokens, _whole(record.image_tokens, values, what, name, "FLOPs per audio"))
    if tokens is None:
        names = ", ".join(part.model.architecture.name for part in parts)
        raise LlmcountError(
            f"{name}: FLOPs per audio: no record of the audio tokens entering the language model ({names})"
        )
    return _summed(parts, terms, tokens)


def audio_data(found: ImageFlops, frames: int, batch: int) -> dict:
    """The JSON form of one audio of ``frames`` frames per sequence: per audio, for B sequences, and its tokens."""
    return {
        "audio_frames": frames,
        "parts": [{"role": role, "title": title} for role, title in found.parts],
        "per_audio_flops": found.per_image,
        "per_audio_formula": str(found.formula),
        "audio_tokens": found.image_tokens,
        "audio_tokens_formula": str(found.image_tokens_formula),
        "audio_flops": found.per_image * batch,
        "components": [
            {"role": t.role, "path": t.path, "formula": str(t.formula), "flops": t.flops} for t in found.terms
        ],
    }


def render_audio_lines(found: ImageFlops, frames: int, batch: int) -> list[str]:
    """The plain-text lines of the audio parts: each matmul per audio, the per-audio total and its formula."""
    from ..renderers.filters import text

    lines = [f"Audio (audio encoder and projector, one audio of {frames:,} log-mel frames per sequence):"]
    width = max(len(t.path) for t in found.terms)
    for t in found.terms:
        lines.append(f"  {t.role:<15} {t.path:<{width}}  {t.flops:>22,}  {text(t.formula)}")
    lines.append(f"  per audio: {found.per_image:,} FLOPs = {text(found.formula)}")
    lines.append(
        f"  audio tokens entering the language model: {found.image_tokens:,} = {text(found.image_tokens_formula)}"
    )
    lines.append(f"  1 audio × {batch} sequence(s): {found.per_image * batch:,} FLOPs")
    return lines


def render_lines(found: ImageFlops, images: int, batch: int) -> list[str]:
    """The plain-text lines of the image parts: each matmul per image, the per-image total and its formula."""
    from ..renderers.filters import text

    lines = ["Images (vision tower and projector, per image at the config's image size):"]
    width = max(len(t.path) for t in found.terms)
    for t in found.terms:
        lines.append(f"  {t.role:<12} {t.path:<{width}}  {t.flops:>22,}  {text(t.formula)}")
    lines.append(f"  per image: {found.per_image:,} FLOPs = {text(found.formula)}")
    tokens = f"{found.image_tokens:,} = {text(found.image_tokens_formula)}"
    lines.append(f"  image tokens per image entering the language model: {tokens}")
    lines.append(f"  {images} image(s) × {batch} sequence(s): {found.per_image * images * batch:,} FLOPs")
    lines += [f"  not run per image: {why}" for why in found.not_run]
    return lines


__all__ = [
    "MAX_AUDIO_FRAMES",
    "MAX_IMAGES",
    "ImageFlops",
    "ImageTerm",
    "audio_data",
    "audio_flops",
    "image_flops",
    "render_audio_lines",
    "render_lines",
]
