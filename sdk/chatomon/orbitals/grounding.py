"""Groundedness: does an answer state only figures and names its sources hold?

`claims(text)` finds what an answer asserts that could be made up: every number, and every
capitalized word that is not a common sentence opener (a proper name: "Steel", "Apollo",
"CLITIC-001"). `ungrounded(text, sources)` returns the claims that no source holds, where
sources are tool results (any JSON-ready values) and the user's question. A number is
held when a source number equals it, or rounds to it at the precision the answer wrote
("6.47" for 6.4666...); a name when a source text contains it, ignoring case.

The same check serves the eval judge `groundedness` (chatomon.evals.judges) and the
built-in output orbital `GroundingGuard`, which blocks such an answer with guidance to
write it again (or, with mode="annotate", lets it through with the claims annotated).

>>> ungrounded("Steel has a density of 7.8 and Titanium 4.5.", [{"name": "Steel", "density": 7.8}])
('4.5', 'Titanium')
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital
from chatomon.schemas import OrbitalContext, Verdict

__all__ = ["Claims", "GroundingGuard", "claims", "source_values", "ungrounded"]

_NUMBER = re.compile(
    r"(?<![0-9.,])[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|(?<![0-9.,])[0-9]+(?:\.[0-9]+)?"
)
_LIST_MARKER = re.compile(r"^[ \t]*[0-9]{1,3}[.)][ \t]+", re.MULTILINE)
_TOKEN = re.compile(r"[^\W\d_][\w'-]*|[^\w\s]|\n")
_OPENS = frozenset(".!?:;\n-*•")

COMMON_OPENERS = frozenset(
    """a about above according across actually after afterwards again all almost along also
    although altogether among an and another any anything are aren't as ask at average
    based basically because before below besides between both but by can can't cannot
    certainly check couldn't count currently did didn't do does doesn't don't done during
    each either else every everything feel finally find first for found from furthermore
    generally give good goodbye got great had has have he hello her here hi his how
    however i if in indeed instead is isn't it its just keep last let likewise look make
    many may maybe mean meanwhile median more moreover most my neither next no none nor
    not note nothing now of ok okay on once one only or other otherwise our out over
    overall perhaps please result results right second see she should shouldn't show since
    so some something sorry still sum sure tell than thank thanks that the their them then
    there therefore these they this those though three through thus to today together
    total try two typically under understood unfortunately unless until use usually we
    welcome well were what when where whether which while who why will with won't would
    wouldn't yes yet you your""".split()  # noqa: SIM905 - a word list reads better than 180 quoted strings
)
"""Words that open sentences without naming anything: not claims there."""


@dataclass(frozen=True)
class Claims:
    """What a text asserts: its numbers (as written) and its proper names."""

    numbers: tuple[str, ...]
    names: tuple[str, ...]


def claims(text: str) -> Claims:
    """The numbers and proper names `text` states, each once, in order.

    A capitalized word counts as a name unless it opens a sentence (or a list item) and is a
    common word there, or is "I" (with its contractions).
    """
    # A numbered list's markers ("1. Steel", "2) Iron") count the items; they are no claim.
    numbers = list(dict.fromkeys(_NUMBER.findall(_LIST_MARKER.sub(" ", text))))
    names: list[str] = []
    opening = True
    # Digits become spaces: "CLITIC-001" stays one name, a number never splits a word.
    plain = re.sub(r"[0-9]", " ", text.replace("\u2019", "'"))
    for match in _TOKEN.finditer(plain):
        token = match.group()
        if not token[0].isalpha():
            opening = opening or token in _OPENS
            continue
        word = re.sub(r"'s$", "", token).rstrip("-'")
        lowered = word.lower()
        # "You're", "Here's": the word before the apostrophe decides.
        common = opening and (lowered in COMMON_OPENERS or lowered.split("'")[0] in COMMON_OPENERS)
        pronoun = lowered == "i" or lowered.startswith("i'")
        if word[0].isupper() and not common and not pronoun:
            names.append(word)
        opening = False
    return Claims(tuple(numbers), tuple(dict.fromkeys(names)))


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _scalars(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _scalars(item)
    elif value is not None:
        yield value


@dataclass(frozen=True)
class _Sources:
    numbers: frozenset[Decimal]
    text: str


def source_values(sources: Iterable[Any]) -> _Sources:
    """Every number and the text of `sources` (JSON-ready values, strings, objects)."""
    numbers: set[Decimal] = set()
    texts: list[str] = []
    for value in _scalars(list(sources)):
        if isinstance(value, bool):
            texts.append(str(value).lower())
        elif isinstance(value, int | float | Decimal):
            numbers.add(_decimal(str(value)))
            texts.append(str(value))
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            texts.append(text)
            numbers.update(_decimal(found) for found in _NUMBER.findall(text))
    return _Sources(frozenset(n for n in numbers if n.is_finite()), "\n".join(texts).casefold())


def _decimal(written: str) -> Decimal:
    try:
        return Decimal(written.replace(",", "")).normalize()
    except InvalidOperation:
        return Decimal("NaN")


def _number_held(written: str, numbers: frozenset[Decimal]) -> bool:
    claimed = _decimal(written)
    if not claimed.is_finite():
        return True
    if claimed in numbers:
        return True
    places = len(written.partition(".")[2])
    step = Decimal(1).scaleb(-places)
    return any(
        number.quantize(step, rounding=rounding) == claimed
        for number in numbers
        for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN)
        if abs(number) < Decimal(10) ** 15
    )


def _name_held(name: str, text: str) -> bool:
    # A plural of a held name is held too: "Bolts" when a result says "Bolt".
    return name in text or (name.endswith("s") and len(name) > 3 and name[:-1] in text)


def ungrounded(text: str, sources: Iterable[Any], *, allow: Iterable[str] = ()) -> tuple[str, ...]:
    """The numbers and names `text` states that no source holds (numbers first).

    Args:
        text: The answer.
        sources: Tool results (JSON-ready values) and the question.
        allow: Terms always accepted (case-insensitive), such as the product's name.
    """
    found = source_values(sources)
    allowed = {term.casefold() for term in allow}
    stated = claims(text)
    missing = [n for n in stated.numbers if not _number_held(n, found.numbers)]
    missing += [
        name
        for name in stated.names
        if name.casefold() not in allowed and not _name_held(name.casefold(), found.text)
    ]
    return tuple(term for term in missing if term.casefold() not in allowed)


SourceFunction = Callable[[OrbitalContext], Iterable[Any]]

GUIDANCE = (
    "Your answer states {terms}, which no tool result of this turn holds. Answer again "
    "using only figures and names from the tool results (call a tool if you need more), "
    "or say that you could not find them."
)


class GroundingGuard(Orbital):
    """Output orbital: an answer may state only figures and names the turn's tools returned.

    The sources are the tool results of the turn (`ctx.tool_results`) and the user's
    question (the last message of `ctx.history`). It suits atoms whose nucleus runs tools
    (a ChatService turn, a planned turn); for any other nucleus, give `sources`. Names
    are found by a heuristic (capitalized words that do not open a sentence as common
    words do): pass `allow` for the names your answers may always use.

    Args:
        mode: "block" (default): block with guidance, so the nucleus writes the answer
            again; "annotate": allow, with the ungrounded terms in the annotations.
        allow: Terms always accepted (the product's own name, units spelled as words).
        sources: Optional `sources(ctx)` returning the values to ground in, instead of
            the context's tool results.

    Examples:
        >>> guard = GroundingGuard(sources=lambda ctx: [{"name": "Bolt", "count": 3}])
        >>> ctx = OrbitalContext(side="output", message="There are 4 Bolts.",
        ...                      annotations={}, turn_id="t")
        >>> verdict = guard.check(ctx)
        >>> verdict.action, verdict.reason, verdict.annotations
        ('block', 'ungrounded', {'ungrounded': ['4']})
    """

    side = "output"

    def __init__(
        self,
        mode: Literal["block", "annotate"] = "block",
        *,
        allow: Iterable[str] = (),
        sources: SourceFunction | None = None,
    ) -> None:
        if mode not in ("block", "annotate"):
            raise ConfigurationError(
                f"GroundingGuard mode must be 'block' or 'annotate', got {mode!r}",
                field="mode",
                value=mode,
                allowed=("block", "annotate"),
            )
        self.mode = mode
        self.allow = tuple(allow)
        self.sources = sources

    def _sources(self, ctx: OrbitalContext) -> list[Any]:
        found = ctx.tool_results if self.sources is None else self.sources(ctx)
        question = [m.content for m in ctx.history[-1:] if m.role == "user"]
        return [*found, *question]

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Allow a grounded answer; block (or annotate) one stating unsupported terms."""
        missing = ungrounded(ctx.message, self._sources(ctx), allow=self.allow)
        if not missing:
            return Verdict.allow()
        annotations = {"ungrounded": list(missing)}
        if self.mode == "annotate":
            return Verdict.allow(reason="ungrounded", annotations=annotations)
        terms = ", ".join(repr(term) for term in missing)
        return Verdict.block(
            guidance=GUIDANCE.format(terms=terms), reason="ungrounded", annotations=annotations
        )
