"""Which reads the local model is offered for a question that asks for a count (private to `local`).

Asked "How many parts are made of materials denser than 5?", Qwen2.5-Coder-1.5B
(temperature 0, one seed) read the rows with `query` and counted them itself: right on
the eval's three rows, but a query returns a page of rows (50 by default), which a small
model miscounts, and whose `total_count` it then has to find. Offered `aggregate` in
place of `query`, it sent the count the database makes (`{"op": "count"}`, the same
filter) at once. So when the user's latest message asks how many (`asks_for_count`),
`query` is not offered (`counts_for`); every other tool is, `aggregate` among them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.local_template import latest_user_text

__all__ = ["AGGREGATE", "QUERY", "asks_for_count", "counts_for"]

QUERY = "query"
AGGREGATE = "aggregate"

_COUNT = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b", re.IGNORECASE)
"""A question asking for a count: "how many", "the number of", "count"."""


def asks_for_count(messages: Sequence[Message]) -> bool:
    """Whether the latest user message asks how many (`_COUNT`)."""
    return bool(_COUNT.search(latest_user_text(messages)))


def counts_for(
    messages: Sequence[Message], offered: Sequence[ToolDefinition]
) -> list[ToolDefinition]:
    """`offered` without `query` when the question asks for a count and `aggregate` is there."""
    names = {tool.name for tool in offered}
    if AGGREGATE not in names or QUERY not in names or not asks_for_count(messages):
        return list(offered)
    return [tool for tool in offered if tool.name != QUERY]
