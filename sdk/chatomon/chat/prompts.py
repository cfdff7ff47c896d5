"""The texts the tool loop sends the model: the built-in system prompt and recovery prompts.

They are sent on every provider round, so they are kept short; the tool definitions carry
the details of each tool.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "NO_ANSWER_RECOVERY",
    "NO_TOOLS_RECOVERY",
    "REJECTED_RESULT",
    "TIMED_OUT_RESULT",
    "UNCHANGED_RESULT",
    "system_prompt",
]

BUILT_IN = (
    "You answer questions about this application's data with the tools. "
    "Answer only from tool results and never invent data; say when the data does not "
    "answer the question. Never guess a manager or field name: find data sets with "
    "search_managers, read their fields with get_manager_schema, then use query (rows) or "
    "aggregate (counts, sums, averages). A tool error says what to send instead: fix the "
    "call and try again rather than reporting the error. "
    "To change data call mutate with exactly one mutation and no other tool in the same "
    "step; a change may wait for the user's or a staff member's confirmation."
)
"""What every data turn tells the model first."""

NO_TOOLS_RECOVERY = (
    "You answered without using any tool. If the question needs the application's data, "
    "call the tools now; otherwise repeat your answer."
)
"""Sent once when the model answers a turn without calling any tool."""

NO_ANSWER_RECOVERY = "Answer the user's question now from the tool results above."
"""Sent once when the model returns no text after tool results."""

REJECTED_RESULT = "The change{change} was rejected, so nothing was written."
"""The tool result the model sees for a rejected mutation; `{change}` is " (what it
would have changed)" when its preview says, else "".

Written to be read to the user as it is, as UNCHANGED_RESULT: Qwen2.5-Coder-1.5B copied
the former "... Do not retry it." into its answer. That a rejection is final is said in
the mutate tool's description.
"""

TIMED_OUT_RESULT = "Nobody confirmed the change in time, so nothing was written."
"""The tool result the model sees for a mutation whose confirmation expired."""

UNCHANGED_RESULT = (
    "{reason}: nothing to change, so nothing was written and nobody needs to confirm."
)
"""The tool result the model sees for a mutation whose preview changes nothing.

Written to be read to the user as it is: Qwen2.5-Coder-1.5B copied it into its answer
(an instruction in it, "tell the user so", reached the user too). The mutate tool's
description asks the model to tell the user why.
"""


def system_prompt(project: str, guidance: Sequence[str], catalogue: str = "") -> str:
    """The system message: built-in and project instructions, catalogue, turn's guidance.

    The catalogue (`Toolset.catalogue`) comes before the guidance, which changes from turn
    to turn: a local model reads an unchanged start of the prompt from its cache.
    """
    parts = [BUILT_IN]
    if project.strip():
        parts.append(project.strip())
    if catalogue:
        parts.append(catalogue)
    if guidance:
        parts.append("For this reply:\n" + "\n".join(f"- {line}" for line in guidance))
    return "\n\n".join(parts)
