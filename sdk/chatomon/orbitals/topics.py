"""Keeping a conversation on topic with keyword lists.

A topic is a name and the words or phrases that reveal it, matched as whole words
ignoring case (`chatomon.orbitals.lexical.WordMatcher`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Unpack

from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital, OrbitalOptions
from chatomon.orbitals.lexical import WordMatcher, optional_text
from chatomon.schemas import OrbitalContext, Verdict

__all__ = ["DEFAULT_REDIRECT", "TopicGuard", "Topics"]

Topics = Mapping[str, Iterable[str]] | Iterable[str]
"""Topic name -> keywords, or a list of keywords that are each a topic of their own (named
by the keyword, casefolded)."""

DEFAULT_REDIRECT = "Sorry, I can't help with that topic. Is there anything else I can do for you?"
"""What `TopicGuard` answers unless given a `redirect`."""


def _topic_matchers(field: str, topics: Topics) -> dict[str, WordMatcher]:
    if not isinstance(topics, Mapping):
        # Validated as a whole first, so an error names the argument rather than one item.
        names = WordMatcher(topics, field=field).terms
        return {name: WordMatcher([name], field=field) for name in names}
    if not topics:
        raise ConfigurationError(f"{field} must not be empty", field=field, value={})
    matchers = {}
    for name, keywords in topics.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(
                f"{field}: topic names must be non-empty strings, got {name!r}",
                field=field,
                value=name,
            )
        matchers[name] = WordMatcher(keywords, field=f"{field}[{name!r}]")
    return matchers


class TopicGuard(Orbital):
    """Answers with a redirect when a message is on a forbidden topic or on no allowed one.

    A forbidden topic wins over an allowed one. The verdict is `Verdict.respond(redirect)`
    with reason "forbidden_topic" (annotations: the forbidden topics found) or "off_topic"
    (annotations: `{"topics": []}`); a message on an allowed topic is allowed with the
    allowed topics found as annotations. With `allowed`, even "hello" is off topic: put
    such words in an allowed topic of their own when greetings should reach the nucleus.

    Args:
        allowed: The topics the assistant is for; None for any topic not forbidden.
        forbidden: The topics it must not discuss.
        redirect: The answer sent instead of the nucleus' reply.
        **options: The common orbital options (`OrbitalOptions`).

    Raises:
        ConfigurationError: When neither `allowed` nor `forbidden` is given, or a topic
            has no keywords.

    Examples:
        >>> from chatomon import OrbitalContext
        >>> guard = TopicGuard(
        ...     allowed={"parcels": ["parcel", "delivery", "tracking number"]},
        ...     forbidden=["politics"],
        ...     redirect="I can only help with your parcels.",
        ... )
        >>> def ask(text):
        ...     ctx = OrbitalContext(side="input", message=text, annotations={}, turn_id="t")
        ...     return guard.check(ctx)
        >>> ask("Where is my parcel?").annotations
        {'topics': ['parcels']}
        >>> verdict = ask("Let's talk about the weather")
        >>> verdict.action, verdict.reply, verdict.reason
        ('respond', 'I can only help with your parcels.', 'off_topic')
        >>> ask("Politics and parcels").reason
        'forbidden_topic'
    """

    def __init__(
        self,
        *,
        allowed: Topics | None = None,
        forbidden: Topics | None = None,
        redirect: str = DEFAULT_REDIRECT,
        **options: Unpack[OrbitalOptions],
    ) -> None:
        super().__init__(**options)
        if allowed is None and forbidden is None:
            raise ConfigurationError(
                "TopicGuard needs allowed topics, forbidden topics or both",
                field="allowed",
                value=None,
            )
        self.allowed = None if allowed is None else _topic_matchers("allowed", allowed)
        self.forbidden = {} if forbidden is None else _topic_matchers("forbidden", forbidden)
        checked = optional_text("redirect", redirect)
        if checked is None:
            raise ConfigurationError(
                "redirect must be a non-empty string", field="redirect", value=redirect
            )
        self.redirect = checked

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Redirect a forbidden or off-topic message; allow the others."""
        forbidden = _found(self.forbidden, ctx.message)
        if forbidden:
            return Verdict.respond(
                self.redirect, reason="forbidden_topic", annotations={"topics": forbidden}
            )
        if self.allowed is None:
            return Verdict.allow()
        allowed = _found(self.allowed, ctx.message)
        if not allowed:
            return Verdict.respond(self.redirect, reason="off_topic", annotations={"topics": []})
        return Verdict.allow(annotations={"topics": allowed})


def _found(topics: dict[str, WordMatcher], text: str) -> list[str]:
    return [name for name, matcher in topics.items() if matcher.search(text)]
