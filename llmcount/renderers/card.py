"""The check of a count against the size a model card states ("32.8B"), and what explains a difference.

A stated size is read as written: "32.8B" is 328 units of 10^8 parameters, "20,554,567,680" is exact. The count
agrees with it when it rounds to it, or when it is cut (truncated) to it at the stated precision; the total is
tried first, then the non-embedding count. What llmcount cannot compute (a multi-token-prediction module the
checkpoint holds, a vision encoder the card counts, the Hub page's figure) comes from the preset's ``card``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.symbols import V, d

UNITS = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
_STATED = re.compile(r"^(\d+)(?:\.(\d+))?([KMBT])$")
_EXACT = re.compile(r"^\d{1,3}(?:,\d{3})*$|^\d+$")


@dataclass(frozen=True)
class Stated:
    """A size as a card states it: ``digits`` units of ``unit`` parameters ("32.8B": 328 units of 10^8)."""

    text: str
    digits: int
    unit: int

    @property
    def value(self) -> int:
        return self.digits * self.unit

    def agrees(self, count: int) -> str | None:
        """How ``count`` agrees with this size: "exact", "rounds" (to the nearest unit), "cut" (truncated), or None."""
        if self.unit == 1:
            return "exact" if count == self.digits else None
        whole, rest = divmod(count, self.unit)
        if whole + (1 if 2 * rest >= self.unit else 0) == self.digits:
            return "rounds"
        return "cut" if whole == self.digits else None


def parse_stated(text: str) -> Stated:
    """ "32.8B" -> Stated("32.8B", 328, 10**8); "20,554,567,680" -> exact; anything else is refused."""
    match = _STATED.match(text)
    if match:
        whole, decimals, suffix = match.groups()
        decimals = decimals or ""
        return Stated(text, int(whole + decimals), UNITS[suffix] // 10 ** len(decimals))
    if _EXACT.match(text):
        return Stated(text, int(text.replace(",", "")), 1)
    raise LlmcountError(f"a stated model size must read like 32.8B or 20,554,567,680, not {text!r}")


@dataclass(frozen=True)
class CardCheck:
    """The card's size against the count. ``match``: which count agrees with the card and how, e.g.
    ("total", "rounds") or ("non_embedding", "cut"); None when neither does."""

    card: Stated
    total: int
    non_embedding: int
    match: tuple[str, str] | None
    hub: Stated | None = None
    hub_match: str | None = None  # how the total agrees with the Hub page's figure
    hub_tied_twice: int | None = None  # V·d, when the Hub's figure is the count plus the tied head stored again
    mtp: Stated | None = None
    has_mtp: bool = False  # the checkpoint holds an MTP module (its size may be unpublished)
    vision: bool = False

    @property
    def counted(self) -> int:
        """The count the card is compared with: the non-embedding count when that is what agrees."""
        return self.non_embedding if self.match and self.match[0] == "non_embedding" else self.total

    @property
    def relative(self) -> Fraction:
        """(card - total) / total."""
        return Fraction(self.card.value - self.total, self.total)


def card_check(model: Model, card: dict[str, Any] | None) -> CardCheck | None:
    """The check of ``model``'s count against its preset's ``card``; None without one."""
    if not card or "size" not in card:
        return None
    stated = parse_stated(card["size"])
    total, non_embedding = model.counts.total, model.counts.non_embedding
    if model.whole_total is not None:  # a whole composite model: the language model and its parts
        others = [part.model.counts for part in model.parts]
        total = model.whole_total
        non_embedding += sum(c.non_embedding for c in others)
    match = None
    for kinds in (("exact", "rounds"), ("cut",)):
        for which, count in (("total", total), ("non_embedding", non_embedding)):
            how = stated.agrees(count)
            if how in kinds:
                match = (which, how)
                break
        if match:
            break
    hub = parse_stated(card["hub"]) if card.get("hub") else None
    twice = None
    if hub is not None and model.tied and hub.unit == 1:
        head = model.values[V] * model.values[d]
        twice = head if hub.value - total == head else None
    return CardCheck(
        card=stated,
        total=total,
        non_embedding=non_embedding,
        match=match,
        hub=hub,
        hub_match=hub.agrees(total) if hub is not None else None,
        hub_tied_twice=twice,
        mtp=parse_stated(card["mtp"]) if card.get("mtp") else None,
        has_mtp="mtp" in card,
        vision=bool(card.get("vision")),
    )
