"""Lexical orbitals: words and phrases, regular expressions and a length limit.

They only look at characters, so they cost microseconds and can run first in any chain.
`Blocklist` and `MaxLength` also judge a growing prefix of a streamed reply correctly (the
engine cuts prefixes at whitespace, so a word is never judged half-written).

`WordMatcher` is the whole-word matching they share with `chatomon.orbitals.topics`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Unpack

from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital, OrbitalOptions
from chatomon.schemas import OrbitalContext, Verdict

__all__ = ["Blocklist", "MaxLength", "RegexGuard", "WordMatcher"]


def optional_text(field: str, value: object) -> str | None:
    """Check an optional text argument: None, or a string that is not blank."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return value
    raise ConfigurationError(
        f"{field} must be a non-empty string or None, got {value!r}", field=field, value=value
    )


def block_payload(reply: object, guidance: object) -> tuple[str | None, str | None]:
    """Check the `reply` and `guidance` of an orbital that blocks: each optional, not both."""
    checked = optional_text("reply", reply), optional_text("guidance", guidance)
    if None not in checked:
        raise ConfigurationError(
            "pass reply (sent as is) or guidance (the nucleus writes the answer), not both",
            field="guidance",
            value=guidance,
        )
    return checked


def items_of(field: str, value: object) -> list[object]:
    """The items of a list argument; a bare string is refused rather than split into letters."""
    if isinstance(value, str | bytes | re.Pattern) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{field} must be a list, got {type(value).__name__} (wrap a single item: [item])",
            field=field,
            value=value,
        )
    items = list(value)
    if not items:
        raise ConfigurationError(f"{field} must not be empty", field=field, value=items)
    return items


def _term_pattern(term: str) -> str:
    # \b would need a word character at each end of the term; lookarounds also bound
    # terms such as "c++" or "#tag", and \s+ lets the words of a phrase wrap lines.
    words = r"\s+".join(re.escape(word) for word in term.split(" "))
    return rf"(?<!\w){words}(?!\w)"


class WordMatcher:
    r"""Finds words and phrases in text as whole words, ignoring case.

    Terms and text are compared after `str.casefold` ("Straße" matches "strasse"); a term
    matches only where no letter, digit or underscore touches it, and the words of a
    phrase match across any run of whitespace.

    Args:
        terms: The words or phrases to find.
        field: Name of the argument the terms came from, for error messages.

    Raises:
        ConfigurationError: When `terms` is not a non-empty list of non-blank strings.

    Examples:
        >>> matcher = WordMatcher(["Acme", "big  deal"])
        >>> matcher.terms
        ('acme', 'big deal')
        >>> matcher.find("ACME Corp: a BIG\n deal, unlike acmeville")
        ['acme', 'big deal']
        >>> matcher.search("welcome to acmeville")
        False
    """

    def __init__(self, terms: Iterable[str], *, field: str = "terms") -> None:
        normalized: dict[str, None] = {}
        for term in items_of(field, terms):
            if not isinstance(term, str) or not term.strip():
                raise ConfigurationError(
                    f"{field} must hold non-empty strings, got {term!r}", field=field, value=term
                )
            normalized[" ".join(term.casefold().split())] = None
        self.terms: tuple[str, ...] = tuple(normalized)
        """The terms, casefolded with their whitespace collapsed, in the given order."""
        self._patterns = tuple(re.compile(_term_pattern(term)) for term in self.terms)
        # One alternation answers "any term?" in a single scan; most texts stop there.
        self._any = re.compile("|".join(pattern.pattern for pattern in self._patterns))

    def search(self, text: str) -> bool:
        """Whether any term occurs in `text`."""
        return self._any.search(text.casefold()) is not None

    def find(self, text: str) -> list[str]:
        """The terms that occur in `text`, normalized as in `terms`, in configuration order."""
        folded = text.casefold()
        if self._any.search(folded) is None:
            return []
        return [
            term
            for term, pattern in zip(self.terms, self._patterns, strict=True)
            if pattern.search(folded)
        ]


class Blocklist(Orbital):
    """Blocks text that contains any of the given words or phrases, as whole words.

    Matching follows `WordMatcher`: "acme" blocks "Acme Corp" but not "acmeville". The
    verdict's annotations list the configured terms that matched (casefolded).

    Args:
        terms: Words or phrases to block.
        reply: Text sent instead (on input) or in place of the reply (on output).
        guidance: Instead of `reply`, what the nucleus is told when it writes the refusal
            (on input) or regenerates (on output).
        **options: The common orbital options (`OrbitalOptions`).

    Examples:
        >>> from chatomon import OrbitalContext
        >>> guard = Blocklist(["acme", "globex corp"], reply="I can't talk about that.")
        >>> ctx = OrbitalContext(side="output", message="Globex  CORP", annotations={}, turn_id="t")
        >>> verdict = guard.check(ctx)
        >>> verdict.action, verdict.reply, verdict.annotations
        ('block', "I can't talk about that.", {'terms': ['globex corp']})
    """

    streaming = True

    def __init__(
        self,
        terms: Iterable[str],
        *,
        reply: str | None = None,
        guidance: str | None = None,
        **options: Unpack[OrbitalOptions],
    ) -> None:
        super().__init__(**options)
        self.matcher = WordMatcher(terms, field="terms")
        self.reply, self.guidance = block_payload(reply, guidance)

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Block when a term occurs in the message."""
        found = self.matcher.find(ctx.message)
        if not found:
            return Verdict.allow()
        return Verdict.block(
            self.reply, guidance=self.guidance, reason="blocklist", annotations={"terms": found}
        )


class RegexGuard(Orbital):
    r"""Blocks text in which any of the given regular expressions matches (`re.search`).

    The verdict's annotations list the sources of the patterns that matched. It does not
    stream: a pattern may match a whole reply differently from its prefixes.

    Args:
        patterns: Pattern strings or compiled `re.Pattern[str]` objects (keep their flags).
        reply: Text sent instead (on input) or in place of the reply (on output).
        guidance: Instead of `reply`, guidance for the nucleus.
        **options: The common orbital options (`OrbitalOptions`).

    Examples:
        >>> import re
        >>> from chatomon import OrbitalContext
        >>> guard = RegexGuard([r"\bTICKET-\d+\b", re.compile("secret", re.IGNORECASE)])
        >>> ctx = OrbitalContext(side="input", message="See TICKET-42", annotations={}, turn_id="t")
        >>> verdict = guard.check(ctx)
        >>> verdict.reason, verdict.annotations
        ('regex', {'patterns': ['\\bTICKET-\\d+\\b']})
    """

    def __init__(
        self,
        patterns: Iterable[str | re.Pattern[str]],
        *,
        reply: str | None = None,
        guidance: str | None = None,
        **options: Unpack[OrbitalOptions],
    ) -> None:
        super().__init__(**options)
        self.patterns = tuple(_compiled(pattern) for pattern in items_of("patterns", patterns))
        self.reply, self.guidance = block_payload(reply, guidance)

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Block when a pattern matches somewhere in the message."""
        matched = [pattern.pattern for pattern in self.patterns if pattern.search(ctx.message)]
        if not matched:
            return Verdict.allow()
        return Verdict.block(
            self.reply, guidance=self.guidance, reason="regex", annotations={"patterns": matched}
        )


def _compiled(pattern: object) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern
    if not isinstance(pattern, str) or not pattern:
        raise ConfigurationError(
            f"patterns must hold non-empty strings or compiled str patterns, got {pattern!r}",
            field="patterns",
            value=pattern,
        )
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ConfigurationError(
            f"patterns: {pattern!r} is not a valid regular expression ({error})",
            field="patterns",
            value=pattern,
        ) from error


class MaxLength(Orbital):
    """Blocks text longer than `max_chars` characters.

    Args:
        max_chars: The longest text allowed, in characters (`len`).
        reply: Text sent instead (on input) or in place of the reply (on output).
        **options: The common orbital options (`OrbitalOptions`).

    Raises:
        ConfigurationError: When `max_chars` is not a whole number of at least 1.

    Examples:
        >>> from chatomon import OrbitalContext
        >>> guard = MaxLength(5)
        >>> ctx = OrbitalContext(side="input", message="too long", annotations={}, turn_id="t")
        >>> guard.check(ctx).reason, guard.check(ctx).annotations
        ('max_length', {'length': 8, 'max_chars': 5})
    """

    streaming = True

    def __init__(
        self, max_chars: int, *, reply: str | None = None, **options: Unpack[OrbitalOptions]
    ) -> None:
        super().__init__(**options)
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ConfigurationError(
                f"max_chars must be a whole number of at least 1, got {max_chars!r}",
                field="max_chars",
                value=max_chars,
            )
        self.max_chars = max_chars
        self.reply = optional_text("reply", reply)

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Block when the message is longer than `max_chars`."""
        length = len(ctx.message)
        if length <= self.max_chars:
            return Verdict.allow()
        return Verdict.block(
            self.reply,
            reason="max_length",
            annotations={"length": length, "max_chars": self.max_chars},
        )
