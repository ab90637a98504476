"""Forward FLOPs of the parts of a composite model that see images, per image, and the image tokens they give the
language model.

A tower or projector record (``towers/``) lists, in its ``[[flops]]``, the matmul-type operations of one forward pass
over one image at the config's image size, each the FLOPs of one of its ``layers`` layers, in the convention of
:mod:`.flops` (torch's ``FlopCounterMode``: 2 FLOPs per multiply-add; biases, norms, activations, softmax and
pooling not counted); its ``image_tokens`` gives the tokens each image puts into the language model. An entry of a
group (``head/...``) of which the config has no weight (an optional head it leaves out) is not run and not counted;
an entry of a group no term of the record has (a matmul without a weight: Gemma 4's pooler) always runs.
A part whose record has no ``[[flops]]``, or a weight of a group no entry covers, is refused by name.

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
from .symbols import H_img, W_img

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

    def data(self, images: int, batch: int) -> dict:
        """The JSON form: per image, for the images of B sequences, and the image tokens."""
        return {
            "images_per_sequence": images,
            "parts": [{"role": role, "title": title} for role, title in self.parts],
            "per_image_flops": self.per_image,
            "per_image_formula": str(self.formula),
            "image_tokens_per_image": self.image_tokens,
            "image_tokens_formula": str(self.image_tokens_formula),
            "image_flops": self.per_image * images * batch,
            "components": [
                {"role": t.role, "path": t.path, "formula": str(t.formula), "flops": t.flops} for t in self.terms
            ],
        }


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
    record, values = part.architecture, dict(part.values)
    if not takes_image_size(record):
        return values
    if size is None:
        raise LlmcountError(
            f"{name}: FLOPs per image: the {record.title} ({record.name}) takes images of any size and its config "
            "names none: give it with --image-size HxW (pixels)"
        )
    values[H_img], values[W_img] = size
    namespace = {symbol.name: value for symbol, value in values.items()}
    for rule in record.image_checks:
        if not rule.test(namespace):
            raise LlmcountError(f"{name}: --image-size {size[0]}x{size[1]}: {rule.message.format_map(namespace)}")
    for symbol, test, text in record.image_values:
        value = test(namespace)
        if type(value) is not int or value < 0:
            raise LlmcountError(f"{name}: --image-size {size[0]}x{size[1]}: {symbol.name} = {text} is {value!r}")
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
    if not record.flops:
        raise LlmcountError(f"{name}: FLOPs per image: no formula for the {record.title} ({record.name}) yet")
    groups = {t.path.partition("/")[0] for t in part.terms}
    covered = {op.path.partition("/")[0] for op in record.flops}
    uncovered = [t.path for t in part.terms if is_matmul_weight(t) and t.path.partition("/")[0] not in covered]
    if uncovered:
        raise LlmcountError(
            f"{name}: FLOPs per image: no formula for {uncovered[0]} of the {record.title} ({record.name}) yet"
        )
    values = with_tower_tokens(part, sized_values(part, name, size), tokens)
    weighted = {choice.term.path.partition("/")[0] for choice in record.choices}
    terms = []
    for op in record.flops:
        group = op.path.partition("/")[0]
        if group in weighted and group not in groups:
            continue  # a group of which this config has no weight: not run
        total = expand(op.layers * op.expr)
        terms.append(ImageTerm(role, op.path, total, op.note, evaluate_int(total, values, f"{op.path} FLOPs")))
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
    parts = tuple(part for part in model.parts if part.role not in audio)
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
    for part in parts:
        name = model.whole_name or model.name
        sized = tokens[1] if tokens is not None and size is not None else None  # the tower's, at --image-size
        terms += part_flops(part.model, part.role, name, size, sized)
        record = part.model.architecture
        values = with_tower_tokens(part.model, sized_values(part.model, name, size), sized)
        if record.image_tokens is not None:  # the last part's: what enters the language model
            what = f"{record.name} image_tokens"
            tokens = (record.image_tokens, evaluate_int(record.image_tokens, values, what))
    if tokens is None:
        names = ", ".join(part.model.architecture.name for part in parts)
        raise _refuse(model, f"no record of the image tokens entering the language model ({names})")
    return ImageFlops(
        parts=tuple((part.role, part.model.architecture.title) for part in parts),
        terms=tuple(terms),
        formula=expand(Add(*(t.formula for t in terms))),
        per_image=sum(t.flops for t in terms),
        image_tokens_formula=tokens[0],
        image_tokens=tokens[1],
    )


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
    return lines


__all__ = ["MAX_IMAGES", "ImageFlops", "ImageTerm", "image_flops", "render_lines"]
