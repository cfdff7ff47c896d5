"""Personal data: e-mail addresses, phone numbers, card numbers and IBANs.

Detection prefers precision over recall where numbers are concerned, because prices,
dates and order numbers are everywhere in chats: a card number must pass the Luhn check,
an IBAN the ISO 13616 mod-97 checksum, and a phone number must be international (+CC) or
written in a common national format with separators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Unpack, get_args

from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital, OrbitalOptions
from chatomon.orbitals.lexical import items_of, optional_text
from chatomon.schemas import OrbitalContext, Verdict

__all__ = ["PII_KINDS", "WITHHELD", "PIIGuard", "PIIKind", "PIIMatch", "find_pii", "redact_pii"]

PIIKind = Literal["email", "phone", "credit_card", "iban"]
"""A kind of personal data `find_pii` detects."""

PII_KINDS: tuple[PIIKind, ...] = get_args(PIIKind)
"""Every kind, in the order that wins when two matches cover the same text."""

PIIMode = Literal["block", "redact"]

_REDACT_PASSES = 4

WITHHELD = "[withheld: personal data]"
"""What a record keeps of a text that redaction could not clean (see `redact_record`)."""


@dataclass(frozen=True, slots=True)
class PIIMatch:
    """Where one piece of personal data is: `text[start:end]` is of kind `kind`."""

    kind: PIIKind
    start: int
    end: int


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?![\w-])")
# Each repetition takes exactly one digit or "(...)" group, so the scan never backtracks.
_INTERNATIONAL = re.compile(r"(?<![\w+])\+\d(?:[ .-]?(?:\d|\(\d{1,4}\)))+")
_ALONE = r"(?<![\w+(])(?<!\d[ .-])"  # not the tail of a longer number
_ENDS = r"(?!\w)(?![ .-]\d)"  # nor its head
_NORTH_AMERICAN = re.compile(
    rf"{_ALONE}(?:\(\d{{3}}\)[ .-]?|\d{{3}}[ .-])\d{{3}}[ .-]\d{{4}}{_ENDS}"
)
# Trunk prefix 0 and at least one separator: "020 7946 0958", "06 12 34 56 78".
_TRUNK = re.compile(rf"{_ALONE}(?:0\d{{1,4}}|\(0\d{{1,4}}\))(?:[ .-]\d{{2,8}}){{1,4}}{_ENDS}")
_PHONE_DIGITS = {_INTERNATIONAL: (8, 15), _NORTH_AMERICAN: (10, 10), _TRUNK: (9, 15)}

_DIGIT_RUN = re.compile(r"\d+(?:[ -]\d+)*")
_DIGIT = re.compile(r"\d+")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+(?: [A-Za-z0-9]+)*")
_ALNUM_GROUP = re.compile(r"[A-Za-z0-9]+")
_IBAN_HEAD = re.compile(r"[A-Za-z]{2}[0-9]{2}")
_IBAN_LETTERS = {ord(char): str(int(char, 36)) for char in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def _luhn_valid(digits: str) -> bool:
    values = [int(char) for char in reversed(digits)]
    doubled = sum(value * 2 - 9 if value > 4 else value * 2 for value in values[1::2])
    return (sum(values[::2]) + doubled) % 10 == 0


def _is_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and _luhn_valid(digits)


def _is_iban(text: str) -> bool:
    compact = text.upper()
    if not 15 <= len(compact) <= 34 or not _IBAN_HEAD.match(compact):
        return False
    return int((compact[4:] + compact[:4]).translate(_IBAN_LETTERS)) % 97 == 1


@dataclass(frozen=True, slots=True)
class _Grouped:
    """A kind written as groups separated by single separators (cards, IBANs).

    Every window of consecutive groups is tried, not just each whole run, so that a card
    followed by its CVV or an IBAN followed by more words is still found, while nothing
    ever matches inside a group.
    """

    kind: PIIKind
    runs: re.Pattern[str]
    groups: re.Pattern[str]
    head: re.Pattern[str]  # what the first group starts with
    shortest_group: int
    longest: int
    valid: Callable[[str], bool]

    def __call__(self, text: str) -> Iterator[PIIMatch]:
        for run in self.runs.finditer(text):
            spans = [group.span() for group in self.groups.finditer(text, *run.span())]
            first = 0
            while first < len(spans):
                last = self._longest_window(text, spans, first)
                if last is None:
                    first += 1
                    continue
                yield PIIMatch(self.kind, spans[first][0], spans[last][1])
                first = last + 1

    def _longest_window(self, text: str, spans: list[tuple[int, int]], first: int) -> int | None:
        if not self.head.match(text, spans[first][0]):
            return None
        windows = [""]
        for start, end in (spans[index] for index in range(first, len(spans))):
            if end - start < self.shortest_group or len(windows[-1]) + end - start > self.longest:
                break
            windows.append(windows[-1] + text[start:end])
        for size in range(len(windows) - 1, 0, -1):
            if self.valid(windows[size]):
                return first + size - 1
        return None


def _emails(text: str) -> Iterator[PIIMatch]:
    return (PIIMatch("email", *match.span()) for match in _EMAIL.finditer(text))


def _phones(text: str) -> Iterator[PIIMatch]:
    for pattern, (fewest, most) in _PHONE_DIGITS.items():
        for match in pattern.finditer(text):
            if fewest <= sum(char.isdecimal() for char in match.group()) <= most:
                yield PIIMatch("phone", *match.span())


_FINDERS: dict[PIIKind, Callable[[str], Iterator[PIIMatch]]] = {
    "email": _emails,
    "phone": _phones,
    # Cards are printed in groups of 4 to 6: a run of short groups is a list of numbers.
    "credit_card": _Grouped("credit_card", _DIGIT_RUN, _DIGIT, _DIGIT, 3, 19, _is_card),
    "iban": _Grouped("iban", _ALNUM_RUN, _ALNUM_GROUP, _IBAN_HEAD, 1, 34, _is_iban),
}


def _kinds(kinds: object) -> tuple[PIIKind, ...]:
    wanted = items_of("kinds", kinds)
    unknown = [kind for kind in wanted if kind not in PII_KINDS]
    if unknown:
        message = f"kinds must be among {PII_KINDS}, got {unknown!r}"
        raise ConfigurationError(message, field="kinds", value=unknown, allowed=PII_KINDS)
    return tuple(kind for kind in PII_KINDS if kind in wanted)


def find_pii(text: str, kinds: Iterable[PIIKind] = PII_KINDS) -> list[PIIMatch]:
    """Find personal data in `text`, as non-overlapping matches in text order.

    When matches overlap, the one starting first wins, then the longer one, then the kind
    listed first in `PII_KINDS`.

    Raises:
        ConfigurationError: When `kinds` is empty or holds a kind not in `PII_KINDS`.

    Examples:
        >>> text = "Mail ada@example.org, card 4111 1111 1111 1111, not 4111 1111 1111 1112."
        >>> [(match.kind, text[match.start : match.end]) for match in find_pii(text)]
        [('email', 'ada@example.org'), ('credit_card', '4111 1111 1111 1111')]
        >>> find_pii("Call +44 20 7946 0958 on 2024-01-15", ["phone"])
        [PIIMatch(kind='phone', start=5, end=21)]
    """
    found = [match for kind in _kinds(kinds) for match in _FINDERS[kind](text)]
    found.sort(key=lambda match: (match.start, match.start - match.end))
    kept: list[PIIMatch] = []
    for match in found:
        if not kept or match.start >= kept[-1].end:
            kept.append(match)
    return kept


def redact_pii(
    text: str, kinds: Iterable[PIIKind] = PII_KINDS, replacement: str = "[{kind} removed]"
) -> str:
    """Replace each piece of personal data in `text` by `replacement.format(kind=...)`.

    Removing a match can change what its neighbours look like, so the text is searched
    again after each pass (up to four passes); `PIIGuard` blocks text that still holds
    personal data after that.

    Examples:
        >>> redact_pii("Write to ada@example.org or call (555) 123-4567.")
        'Write to [email removed] or call [phone removed].'
    """
    kinds = _kinds(kinds)
    for _ in range(_REDACT_PASSES):
        matches = find_pii(text, kinds)
        if not matches:
            break
        pieces: list[str] = []
        position = 0
        for match in matches:
            pieces += [text[position : match.start], replacement.format(kind=match.kind)]
            position = match.end
        text = "".join([*pieces, text[position:]])
    return text


class PIIGuard(Orbital):
    """Blocks or redacts e-mail addresses, phone numbers, card numbers and IBANs.

    With `mode="block"` a message holding personal data is blocked (reason "pii",
    annotations `{"kinds": [...]}`, never the values). With `mode="redact"`, on the output
    side, the reply is sent with each value replaced (reason "pii_redacted"); redaction
    means nothing for a user message, so on the input side a redacting guard blocks.

    Args:
        kinds: The kinds of `PII_KINDS` to look for.
        mode: "block" or "redact".
        replacement: Text that stands for a redacted value; `{kind}` names its kind.
        reply: Text sent when the guard blocks; None for the atom's refusal.
        **options: The common orbital options (`OrbitalOptions`).

    Raises:
        ConfigurationError: For an unknown kind or mode, a redacting guard on the input
            side, or a replacement that is empty, malformed or itself personal data.

    Examples:
        >>> from chatomon import OrbitalContext
        >>> guard = PIIGuard(mode="redact", side="output")
        >>> reply = "Your IBAN is GB82 WEST 1234 5698 7654 32."
        >>> ctx = OrbitalContext(side="output", message=reply, annotations={}, turn_id="t")
        >>> verdict = guard.check(ctx)
        >>> verdict.reply, verdict.reason, verdict.annotations
        ('Your IBAN is [iban removed].', 'pii_redacted', {'kinds': ['iban']})
    """

    def __init__(
        self,
        kinds: Iterable[PIIKind] = ("email", "phone", "credit_card", "iban"),
        *,
        mode: PIIMode = "block",
        replacement: str = "[{kind} removed]",
        reply: str | None = None,
        **options: Unpack[OrbitalOptions],
    ) -> None:
        super().__init__(**options)
        self.kinds = _kinds(kinds)
        modes = get_args(PIIMode)
        if mode not in modes:
            message = f"mode must be 'block' or 'redact', got {mode!r}"
            raise ConfigurationError(message, field="mode", value=mode, allowed=modes)
        if mode == "redact" and self.side == "input":
            message = "mode='redact' rewrites replies: use side='output' (or no side)"
            raise ConfigurationError(message, field="side", value=self.side, allowed=("output",))
        self.mode: PIIMode = mode
        self.replacement = _checked_replacement(replacement)
        self.reply = optional_text("reply", reply)

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Allow text without personal data; otherwise redact (output) or block."""
        matches = find_pii(ctx.message, self.kinds)
        if not matches:
            return Verdict.allow()
        annotations = {"kinds": sorted({match.kind for match in matches})}
        if self.mode == "redact" and ctx.side == "output":
            redacted = redact_pii(ctx.message, self.kinds, self.replacement)
            if not find_pii(redacted, self.kinds):
                return Verdict.block(reply=redacted, reason="pii_redacted", annotations=annotations)
        return Verdict.block(self.reply, reason="pii", annotations=annotations)

    def redact_record(self, text: str) -> str:
        """`text` as reports and the audit trail may keep it: this guard's kinds replaced.

        Records never keep what the guard looks for, whatever it decided (a blocked
        message included); text still holding personal data after redaction is withheld.

        Examples:
            >>> PIIGuard().redact_record("card 4111 1111 1111 1111, thanks")
            'card [credit_card removed], thanks'
        """
        redacted = redact_pii(text, self.kinds, self.replacement)
        return WITHHELD if find_pii(redacted, self.kinds) else redacted


def _checked_replacement(replacement: str) -> str:
    try:
        texts = [replacement.format(kind=kind) for kind in PII_KINDS]
    except (AttributeError, IndexError, KeyError, ValueError):
        texts = []
    if not texts or not all(texts) or any(find_pii(text) for text in texts):
        raise ConfigurationError(
            "replacement must be a non-empty string whose only field is {kind} and which "
            f"does not itself look like personal data, got {replacement!r}",
            field="replacement",
            value=replacement,
        )
    return replacement
