"""build_context: recent window, summaries with exact markers, whole tool windows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from chatomon.chat.context import SUMMARY_PROMPT, build_context
from chatomon.chat.store import ConversationSummary, MessageItem, StoredMessage
from chatomon.providers.base import ToolCall
from chatomon.providers.testing import ScriptedProvider

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
        built = await build_context(stored(chat(25)), provider=provider)
    assert [m.content for m in built.messages] == [
        f"{'q' if i % 2 == 0 else 'a'}{i}" for i in range(25)
    ]
    assert built.summary is None and not built.summary_changed


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
