"""The one builder of the chat event contract's wire events (JSON-ready dicts).

Every surface (HTTP envelope, SSE frames, WebSocket frames, the console, the notebook
widget, evals) sends these dicts and invents none of its own:

| type                    | built from                                             |
|-------------------------|--------------------------------------------------------|
| `text_chunk`            | the engine's `TextChunk` (`streamed_event`)            |
| `tool_call`             | the tool loop's `ToolCallStarted` (`streamed_event`)   |
| `tool_result`           | the tool loop's `ToolResult` (`streamed_event`)        |
| `confirm_mutation`      | the stored `PendingConfirmation` (`confirmation_event`) |
|                         | or, with no store, the tool loop's `ConfirmMutation`   |
|                         | (`asked_confirmation_event`)                           |
| `confirmation_resolved` | the decided `PendingConfirmation` (`resolved_event`)   |
|                         | or an answered `ConfirmMutation` (`answered_event`)    |
| `done`                  | the engine's `TurnDone` (`done_event`)                 |
|                         | or a planned read's usage and coverage (`coverage_done_event`) |
| `error`                 | a stable code and a public message (`error_event`)     |
|                         | or a failed turn's `PublicChatError` (`public_error_event`) |
|                         | or the conversation's open confirmation (`pending_event`) |

The pipeline adds `conversation_id` and `turn_id` to each event of a turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.store.records import PendingConfirmation
from chatomon.events import TextChunk, TurnDone
from chatomon.preview import preview_table
from chatomon.public_errors import GENERIC_ERROR_MESSAGE, PublicChatError
from chatomon.redaction import DEFAULT_REDACTION, Redaction
from chatomon.schemas import PlannedCoverage, TokenUsage

__all__ = [
    "CLIENT_DECIDER_LABEL",
    "GENERIC_ERROR_MESSAGE",
    "INVALID_CONFIRMATION_MESSAGE",
    "PENDING_MESSAGE",
    "STAFF_DECIDER_LABEL",
    "STORE_UNAVAILABLE_REASON",
    "TERMINAL_TYPES",
    "UNAVAILABLE_MESSAGE",
    "answered_event",
    "asked_confirmation_event",
    "confirmation_event",
    "coverage_done_event",
    "coverage_payload",
    "decider_label",
    "done_event",
    "error_event",
    "pending_event",
    "public_error_event",
    "resolved_event",
    "store_unavailable_event",
    "streamed_event",
]

UNAVAILABLE_MESSAGE = "This confirmation is no longer available."
"""The message of `confirmation_unavailable`: a known confirmation already decided or expired."""
INVALID_CONFIRMATION_MESSAGE = "This is not a confirmation you can decide."
"""The message of `bad_event` for a confirmation id that is malformed, unknown or foreign.

One message for all three, so that an id tells nobody whether it exists for someone else.
"""
PENDING_MESSAGE = "Confirm or reject the pending change first."
"""The message of `confirmation_pending`: a message to a conversation whose client
confirmation is still open (`pending_event`)."""
CLIENT_DECIDER_LABEL = "you"
"""Who decided a client confirmation, as the asker reads it: only the asker decides one, and
the stored owner label (`session:<session key>`, `user:<pk>`) is not for the page (a session
key in an event would undo an HttpOnly cookie)."""
STAFF_DECIDER_LABEL = "a staff member"
"""Who decided a staff approval, as `confirmation_resolved` says it: the staff member's
username is for the staff console (which reads the stored confirmation), not for the asker."""
STORE_UNAVAILABLE_REASON = "store_unavailable"
"""The `reason` of a `chat_error` whose turn could not be opened or recorded because the
store's database could not be reached: the client may send the message again later (HTTP
answers such a refusal with 503)."""
TERMINAL_TYPES = frozenset({"done", "error", "confirm_mutation"})
"""The event types that end a turn's stream (a confirm_mutation suspends the turn)."""


def streamed_event(
    event: object, redaction: Redaction = DEFAULT_REDACTION
) -> dict[str, Any] | None:
    """The wire form of an engine event streamed as it happens; None for the rest.

    A tool call's arguments and a tool result pass the redaction rule (chatomon.redaction).

    Examples:
        >>> streamed_event(TextChunk("Hi"))
        {'type': 'text_chunk', 'content': 'Hi'}
    """
    if isinstance(event, TextChunk):
        return event.to_dict()
    if isinstance(event, ToolCallStarted):  # a mutation's arguments hold its input
        return {**event.to_dict(), "args": redaction.value(dict(event.args))}
    if isinstance(event, ToolResult):
        return {**event.to_dict(), "result": redaction.value(event.result)}
    return None  # nothing else of the engine is part of the event contract


def error_event(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """An `error` event: a stable code and a message safe to show."""
    return {"type": "error", "code": code, "message": message, **fields}


def pending_event(confirmation_id: object, conversation_id: object | None) -> dict[str, Any]:
    """The `confirmation_pending` refusal of a message while that confirmation waits for the user.

    The one builder for every surface: `ChatService` gives it from the store, a socket from
    a confirmation it announced itself (no store read); a socket that does not know the
    conversation leaves `conversation_id` out.

    Examples:
        >>> pending_event("c-1", None)["code"], pending_event("c-1", "k")["conversation_id"]
        ('confirmation_pending', 'k')
    """
    fields = {"confirmation_id": str(confirmation_id)}
    if conversation_id:
        fields["conversation_id"] = str(conversation_id)
    return error_event("confirmation_pending", PENDING_MESSAGE, **fields)


def store_unavailable_event(**fields: Any) -> dict[str, Any]:
    """The `chat_error` of a turn the store could not open or record (database unreachable).

    Examples:
        >>> store_unavailable_event()["reason"]
        'store_unavailable'
    """
    return error_event(
        "chat_error", GENERIC_ERROR_MESSAGE, reason=STORE_UNAVAILABLE_REASON, **fields
    )


def public_error_event(error: PublicChatError, **fields: Any) -> dict[str, Any]:
    """The `error` event of a failed turn; `reason` is added when chatomon refines `code`.

    Examples:
        >>> public_error_event(PublicChatError("provider_failed", "m", "provider_auth"))
        {'type': 'error', 'code': 'provider_failed', 'message': 'm', 'reason': 'provider_auth'}
    """
    if error.reason is not None:
        fields = {"reason": error.reason, **fields}
    return error_event(error.code, error.message, **fields)


def done_event(done: TurnDone, conversation_id: str | None) -> dict[str, Any]:
    """The `done` event: the engine's wire form plus usage and the conversation id.

    `conversation_id` is None for an Atom's own turn, which no conversation holds (the
    notebook's `AtomSession`).

    A planned read adds its `coverage`: status ("complete" or "partial"), resolved and
    total task counts, and the unresolved task ids with their stable reasons.
    """
    event = {
        **done.to_dict(),
        "conversation_id": conversation_id,
        "escalated": done.report.escalated,
        "usage": _usage_payload(done.report.usage),
    }
    planned = done.report.planned
    if planned is not None and planned.coverage is not None:
        event["coverage"] = coverage_payload(planned.coverage)
    return event


def coverage_done_event(usage: TokenUsage, coverage: PlannedCoverage) -> dict[str, Any]:
    """The `done` of a planned read streamed outside a ChatService turn: usage and coverage.

    A custom transport's (`chatomon.planned.stream.iter_planned_read_events`, the
    reference's `planned_done_event`): no turn, conversation or reply is known there; a
    ChatService turn ends with `done_event`, which carries the same two fields.
    """
    return {"type": "done", "usage": _usage_payload(usage), "coverage": coverage_payload(coverage)}


def _usage_payload(usage: TokenUsage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def coverage_payload(coverage: PlannedCoverage) -> dict[str, Any]:
    """The JSON form of a planned answer's coverage, as `done` carries it."""
    return {
        "status": coverage.status,
        "resolved": coverage.resolved,
        "total": coverage.total,
        "unresolved": [{"task_id": u.task_id, "reason": u.reason} for u in coverage.unresolved],
    }


def confirmation_event(
    confirmation: PendingConfirmation, preview: Any, redaction: Redaction = DEFAULT_REDACTION
) -> dict[str, Any]:
    """The `confirm_mutation` event; `id` is the public confirmation id to resolve.

    Its input and preview pass the redaction rule (chatomon.redaction): the asker sees
    which fields change, never a password or token again; the stored confirmation keeps
    the real input for the write. `preview_table` is the redacted preview read by
    `chatomon.preview.preview_table` (caption, Field / Before / After rows as text, the
    rest): a client draws it as the console does, with no parser of its own.
    """
    return _confirm_mutation(
        confirmation_id=str(confirmation.id),
        call_id=confirmation.call_id,
        mutation=confirmation.mutation,
        mutation_input=confirmation.input,
        preview=preview,
        approver=confirmation.approver,
        expires_at=confirmation.expires_at.isoformat(),
        conversation_id=str(confirmation.conversation_id),
        redaction=redaction,
    )


def asked_confirmation_event(
    pending: ConfirmMutation, redaction: Redaction = DEFAULT_REDACTION
) -> dict[str, Any]:
    """The `confirm_mutation` of a tool loop that asks its own confirmer, with no store.

    An Atom's turn outside a ChatService (the notebook's `AtomSession`): the confirmation
    is the tool call itself (`id` and `call_id` are its id), nothing expires it and no
    conversation holds it, so `expires_at` and `conversation_id` are None; every other
    field is `confirmation_event`'s, redacted alike.

    Examples:
        >>> event = asked_confirmation_event(ConfirmMutation("c1", "createPart", {"name": "x"}))
        >>> event["id"], event["call_id"], event["expires_at"], event["conversation_id"]
        ('c1', 'c1', None, None)
    """
    return _confirm_mutation(
        confirmation_id=pending.id,
        call_id=pending.id,
        mutation=pending.mutation,
        mutation_input=pending.input,
        preview=pending.preview,
        approver=pending.approver,
        expires_at=None,
        conversation_id=None,
        redaction=redaction,
    )


def _confirm_mutation(
    *,
    confirmation_id: str,
    call_id: str,
    mutation: str,
    mutation_input: Mapping[str, Any],
    preview: Any,
    approver: str,
    expires_at: str | None,
    conversation_id: str | None,
    redaction: Redaction,
) -> dict[str, Any]:
    # The one shape of `confirm_mutation`, stored or not; input and preview redacted here.
    shown = redaction.value(preview)
    return {
        "type": "confirm_mutation",
        "id": confirmation_id,
        "call_id": call_id,
        "mutation": mutation,
        "input": redaction.value(dict(mutation_input)),
        "preview": shown,
        "preview_table": preview_table(shown),
        "approver": approver,
        "expires_at": expires_at,
        "conversation_id": conversation_id,
    }


def resolved_event(confirmation: PendingConfirmation) -> dict[str, Any]:
    """The `confirmation_resolved` event: how a confirmation was decided, and by whom.

    It reaches the asker's pages (the conversation's channel group): `decided_by` reads
    "a staff member" or "you" (`decider_label`), never a username or an owner's key.
    """
    return _resolved(
        str(confirmation.id),
        confirmation.status,
        confirmation.mutation,
        decider_label(confirmation),
        confirmation.reason,
    )


def answered_event(pending: ConfirmMutation, approved: bool) -> dict[str, Any]:
    """The `confirmation_resolved` of a confirmation with no store, answered by its asker.

    The counterpart of `asked_confirmation_event`: whoever answers an Atom's own confirmer
    is the one who asked (`CLIENT_DECIDER_LABEL`), and gives no reason.

    Examples:
        >>> answered_event(ConfirmMutation("c1", "createPart", {}), approved=False)["status"]
        'rejected'
    """
    status = "approved" if approved else "rejected"
    return _resolved(pending.id, status, pending.mutation, CLIENT_DECIDER_LABEL, None)


def _resolved(
    confirmation_id: str, status: str, mutation: str, decided_by: str | None, reason: str | None
) -> dict[str, Any]:
    return {
        "type": "confirmation_resolved",
        "id": confirmation_id,
        "status": status,
        "mutation": mutation,
        "decided_by": decided_by,
        "reason": reason,
    }


def decider_label(confirmation: PendingConfirmation) -> str | None:
    """Who decided, as the asker may read it; None when nobody decided.

    `STAFF_DECIDER_LABEL` for any staff member, `CLIENT_DECIDER_LABEL` for the asker. The
    stored label stays for the console and the audit, which read the stored confirmation.
    """
    if not confirmation.decided_by:
        return None
    return STAFF_DECIDER_LABEL if confirmation.approver == "staff" else CLIENT_DECIDER_LABEL
