"""Which reads the local model is offered for a question that asks for a count (private to `local`).

Asked "How many parts are made of materials denser than 5?", Qwen2.5-Coder-1.5B
(temperature 0, one seed) read the rows with `query` and counted them itself: right on
the two rows it read, but a query returns a page of rows (50 by default), which a small
model miscounts, and whose `total_count` it then has to find. Offered `aggregate` in
place of `query`, it sent the count the database makes (`{"op": "count"}`, the same
filter) at once. So when the user's latest message asks how many (`asks_for_count`) and
asks for no rows besides (`_ROWS`: "list", "show", "which" ...), `query` is not offered
(`without_query_for_count`); every other tool is, `aggregate` among them. A count whose
filter names a value of another data set gets no `found_in` hint then (only `query`
gives one): the trade-off of this rule. The caller skips it for a message asking for a
change, whose row the write must look up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.local_template import latest_user_text

__all__ = ["asks_for_count", "without_query_for_count"]

_QUERY = "query"
_AGGREGATE = "aggregate"

_COUNT = re.compile(r"\bhow\s+many\b|\b(?:the|total)\s+number\s+of\b|^\W*count\b", re.IGNORECASE)
"""A question asking for a count: "how many", "the number of", "count ..." at the start
("the part number of the Bolt" and "a stock count above 5" ask for none)."""
_ROWS = re.compile(r"\b(?:list|show|which|name|names)\b", re.IGNORECASE)
"""Words asking for rows too ("list the projects and say how many materials there are")."""


def asks_for_count(messages: Sequence[Message]) -> bool:
    """Whether the latest user message asks how many (`_COUNT`), and for no rows (`_ROWS`)."""
    text = latest_user_text(messages)
    return bool(_COUNT.search(text)) and not _ROWS.search(text)


def without_query_for_count(
    messages: Sequence[Message], offered: Sequence[ToolDefinition]
) -> list[ToolDefinition]:
    """`offered` without `query` when the question asks for a count and `aggregate` is there."""
    names = {tool.name for tool in offered}
    if _AGGREGATE not in names or _QUERY not in names or not asks_for_count(messages):
        return list(offered)
    return [tool for tool in offered if tool.name != _QUERY]
