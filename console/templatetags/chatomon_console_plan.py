"""``{% load chatomon_console_plan %}``: the element id of a tool call's card (`tool_anchor`).

The plan tree of a planned turn links each task's tool calls to their cards on the turn
page; the cards carry this id.
"""

from __future__ import annotations

from django import template

from ..plan_tree import tool_anchor as _tool_anchor

__all__ = ["register", "tool_anchor"]

register = template.Library()


@register.filter
def tool_anchor(call_id: object) -> str:
    """The card id of a tool call (see `chatomon.console.plan_tree.tool_anchor`)."""
    return _tool_anchor(str(call_id))
