"""build_context: recent window, summaries with exact markers, whole tool windows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from chatomon import TokenUsage
from chatomon.chat.context import SUMMARY_PROMPT, build_context
from chatomon.chat.store import ConversationSummary, MessageItem, StoredMessage
from chatomon.errors import ToolLoopError
from chatomon.providers.base import ToolCall
from chatomon.providers.testing import ScriptedProvider

from .services import Budget

CONVERSATION = uuid.uuid4()
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def stored(items: list[MessageItem]) -> list[StoredMessage]:
    return [StoredMessage(100 + i, CONVERSATION, i, NOW, item) for i, item in enumerate(items)]


def chat(count: int) -> list[MessageItem]:
    return [
        MessageItem.user(f"q{i}") if i % 2 == 0 else MessageItem.assistant(f"a{i}")
        for i in range(count)
    ]


async def test_short_histories_are_kept_verbatim_without_a_provider_call() -> None:
    with ScriptedProvider([]) as provider:
        built = await build_context(stored(chat(20)), provider=provider)
    assert [m.content for m in built.messages] == [
        f"{'q' if i % 2 == 0 else 'a'}{i}" for i in range(20)
    ]
    assert built.summary is None and not built.summary_changed


async def test_summarize_after_counts_the_conversations_messages() -> None:
    """The reference: "summarize_after | 10 | Message count after which older history may be
    summarized by the provider." and "max_recent_messages | 20 | Recent persisted messages
    retained verbatim when conversation context is built."

    25 messages are more than 10: the 5 older than the 20 recent ones are summarized (it
    used to take more than 10 older messages, 31 in all).
    """
    items = stored(chat(25))
    with ScriptedProvider([["Earlier: q0 to q4."]]) as provider:
        built = await build_context(items, provider=provider)
    assert built.summary == ConversationSummary("Earlier: q0 to q4.", 104, 4)
    assert [m.content for m in built.messages[1:]] == [m.item.content for m in items[5:]]
    assert "q4" in provider.requests[0].messages[1].content
    assert "a5" not in provider.requests[0].messages[1].content


async def test_up_to_summarize_after_messages_nothing_is_summarized() -> None:
    """The reference: older history "may be summarized" only after summarize_after messages.

    With summarize_after above max_recent_messages, a conversation of 25 messages (not
    more than 30) is sent whole: nothing is summarized, and nothing is dropped.
    """
    with ScriptedProvider([]) as provider:
        built = await build_context(
            stored(chat(25)), provider=provider, max_recent_messages=20, summarize_after=30
        )
    assert [m.content for m in built.messages] == [m.item.content for m in stored(chat(25))]
    assert built.summary is None


async def test_a_summarys_usage_is_recorded_on_the_budget() -> None:
    """The reference: "Once a token budget is exhausted, GeneralManager records the completed
    provider usage and rejects the next tool, confirmation write, summary, or provider round."

    A summary is provider usage: it is recorded like a round's.
    """
    budget = Budget(allowed=5)
    usage = TokenUsage(input_tokens=300, output_tokens=40)
    with ScriptedProvider([["Summary.", usage]]) as provider:
        built = await build_context(stored(chat(40)), provider=provider, budget=budget)
    assert built.summary_changed
    assert budget.recorded == [usage]


async def test_an_exhausted_budget_rejects_the_summary() -> None:
    """The reference: an exhausted token budget "rejects the next tool, confirmation write,
    summary, or provider round." A rate_limited event includes retry_after_seconds."""
    with ScriptedProvider([]) as provider, pytest.raises(ToolLoopError) as caught:
        await build_context(stored(chat(40)), provider=provider, budget=Budget(allowed=0))
    assert (caught.value.code, caught.value.retry_after_seconds) == ("rate_limited", 13)
    assert provider.requests == []


async def test_a_reused_summary_needs_no_budget() -> None:
    summary = ConversationSummary("Known.", 119, 19)
    with ScriptedProvider([]) as provider:
        built = await build_context(
            stored(chat(40)), provider=provider, summary=summary, budget=Budget(allowed=0)
        )
    assert built.summary == summary


async def test_an_older_prefix_beyond_summarize_after_is_summarized_with_its_marker() -> None:
    items = stored(chat(40))
    with ScriptedProvider([["They talked ", "about parts."]]) as provider:
        built = await build_context(items, provider=provider)
    assert built.summary == ConversationSummary("They talked about parts.", 119, 19)
    assert built.summary_changed
    assert built.messages[0].role == "system" and "about parts" in built.messages[0].content
    assert [m.content for m in built.messages[1:]] == [m.item.content for m in items[20:]]
    request = provider.requests[0]
    assert request.messages[0].content == SUMMARY_PROMPT and "q0" in request.messages[1].content
    assert "q20" not in request.messages[1].content and request.tools == ()


async def test_a_summary_with_the_exact_marker_is_reused() -> None:
    summary = ConversationSummary("Known.", 119, 19)
    with ScriptedProvider([]) as provider:
        built = await build_context(stored(chat(40)), provider=provider, summary=summary)
    assert built.summary == summary and not built.summary_changed


@pytest.mark.parametrize("marker", [(117, 17), (119, 18), (999, 19)])
async def test_an_outdated_or_wrong_marker_is_regenerated(marker: tuple[int, int]) -> None:
    with ScriptedProvider([["Fresh."]]) as provider:
        built = await build_context(
            stored(chat(40)), provider=provider, summary=ConversationSummary("Old.", *marker)
        )
    assert built.summary == ConversationSummary("Fresh.", 119, 19) and built.summary_changed


async def test_a_tool_window_is_never_cut_from_its_results() -> None:
    calls = [ToolCall("c1", "query", {"manager": "Part"}), ToolCall("c2", "find_path", {})]
    items = stored([
        MessageItem.user("q"),
        MessageItem.calls(calls),
        MessageItem.tool_result("c1", "query", {"data": []}),
        MessageItem.tool_result("c2", "find_path", {"path": None}),
        MessageItem.assistant("none"),
    ])  # fmt: skip
    built = await build_context(items, provider=None, max_recent_messages=3)
    # The group (3 items) does not fit beside the answer: it moves to the older part whole.
    roles = [m.role for m in built.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assert built.messages[1].tool_calls == tuple(calls)
    assert [m.tool_call_id for m in built.messages[2:4]] == ["c1", "c2"]
    assert built.messages[2].content == '{"data": []}'


async def test_rows_without_a_call_identity_become_assistant_context_text() -> None:
    items = stored([
        MessageItem.user("q"),
        MessageItem.tool_result(None, "query", {"total_count": 3}),
        MessageItem.calls([ToolCall("c9", "query", {})]),  # its result was never stored
        MessageItem.tool_result("other", "query", {"x": 1}),
    ])  # fmt: skip
    built = await build_context(items, provider=None)
    assert all(m.role != "tool" and not m.tool_calls for m in built.messages)
    assert "Earlier result of tool query" in built.messages[1].content
    assert "[Called query({})]" in built.messages[2].content
    assert '{"x": 1}' in built.messages[3].content


async def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_recent_messages"):
        await build_context([], provider=None, max_recent_messages=0)
