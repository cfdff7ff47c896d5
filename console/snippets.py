"""Snippets of conversation text for lists: the first words, as capture allows.

(Not mutation previews: those are `chatomon.preview`'s.)

A turn's report holds the user's message and the reply as ``capture_content`` says: the
text itself only with ``"full"`` (a hash with ``"hash"``, nothing with ``"none"``). Lists
show only full text, so a list never shows more than the turn page may.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SNIPPET_WORDS", "first_words", "report_snippets"]

SNIPPET_WORDS = 8


def first_words(text: str | None, count: int = SNIPPET_WORDS) -> str:
    """The first `count` words of `text`, with an ellipsis when it goes on ("" for none)."""
    words = (text or "").split()
    return " ".join(words[:count]) + ("…" if len(words) > count else "")


def report_snippets(report: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(asked, answered) snippets of a report; None for each when its text is not captured."""
    if report.get("capture_content") != "full":
        return None, None
    return first_words(report.get("user_message")), first_words(report.get("final_reply"))
