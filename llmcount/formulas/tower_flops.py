"""Forward FLOPs of the parts of a composite model that see images, per image, and the image tokens they give the
language model.

A tower or projector record (``towers/``) lists, in its ``[[flops]]``, the matmul-type operations of one forward pass
over one image at the config's image size, each the FLOPs of one of its ``layers`` layers, in the convention of
:mod:`.flops` (torch's ``FlopCounterMode``: 2 FLOPs per multiply-add; biases, norms, activations, softmax and
pooling not counted); its ``image_tokens`` gives the tokens each image puts into the language model. An entry of a
group (``head/...``) of which the config has no weight (an optional head it leaves out) is not run and not counted.
A part whose record has no ``[[flops]]``, or a weight of a group no entry covers, is refused by name.

The whole forward for B sequences, each of S text tokens and N images of t tokens: the parts run B·N times, the
language model over S + N·t tokens per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sympy import Add, Expr, expand

from ..errors import LlmcountError
from .derivation import evaluate_int
from .flops import is_matmul_weight

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


def part_flops(part: Model, role: str, name: str) -> list[ImageTerm]:
    """The matmuls of one part (a tower or a projector read with its record) per image, evaluated on its config;
    refused by name when its record has no ``[[flops]]`` or leaves a weight's group without an entry."""
    record, values = part.architecture, part.values
    if not record.flops:
        raise LlmcountError(f"{name}: FLOPs per image: no formula for the {record.title} ({record.name}) yet")
    groups = {t.path.partition("/")[0] for t in part.terms}
    covered = {op.path.partition("/")[0] for op in record.flops}
    uncovered = [t.path for t in part.terms if is_matmul_weight(t) and t.path.partition("/")[0] not in covered]
    if uncovered:
        raise LlmcountError(
            f"{name}: FLOPs per image: no formula for {uncovered[0]} of the {record.title} ({record.name}) yet"
        )
    terms = []
    for op in record.flops:
        if op.path.partition("/")[0] not in groups:
            continue  # a group of which this config has no weight: not run
        total = expand(op.layers * op.expr)
        terms.append(ImageTerm(role, op.path, total, op.note, evaluate_int(total, values, f"{op.path} FLOPs")))
    return terms


def image_flops(model: Model) -> ImageFlops:
    """The per-image FLOPs of ``model``'s vision tower and projector and the tokens per image entering its language
    model; refused by name when the model has no tower, or a part has no FLOPs formula yet."""
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
    terms: list[ImageTerm] = []
    tokens: tuple[Expr, int] | None = None
    for part in parts:
        terms += part_flops(part.model, part.role, model.whole_name or model.name)
        record, values = part.model.architecture, part.model.values
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
