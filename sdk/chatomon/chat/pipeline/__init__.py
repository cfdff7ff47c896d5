"""The one turn pipeline: every surface runs its turns through `ChatService`.

Read top to bottom, a turn goes through these modules:

1. `service` — `ChatService.run_turn` opens the turn (continuing or starting the owner's
   conversation), builds its bounded context and runs the Atom (input orbitals, the tool
   loop nucleus, output orbitals); `resolve_confirmation` and `expire_due` resume a
   suspended turn through the same path.
2. `driver` — `TurnDriver` turns the atom's events into wire events, stores what the turn
   adds, suspends it for a confirmation, and closes it: completed, awaiting confirmation
   or aborted. A turn ends there and nowhere else.
3. `run` — `TurnRun`, the state of the turn being driven, and `TurnItems`, the
   conversation items it collects.
4. `activity` — the `Activity` of each observable step, delivered to listeners (signals,
   audit, the console's live view).
5. `wire` — the one builder of the event contract's dicts (`text_chunk`, `tool_call`,
   `tool_result`, `confirm_mutation`, `confirmation_resolved`, `done`, `error`).
6. `recovery` — `TurnCloser`: a turn whose end the store could not record (its database
   down) is recorded `aborted` in the background once the store answers again.

Surfaces (HTTP, SSE, WebSocket, the console, the notebook widget, evals) only frame these
events; none opens, closes or resumes a turn itself.
"""

from chatomon.chat.pipeline.activity import Activity, ActivityKind, ActivityListener
from chatomon.chat.pipeline.driver import EventPublisher
from chatomon.chat.pipeline.service import AtomConfig, ChatService, owner_of

__all__ = [
    "Activity",
    "ActivityKind",
    "ActivityListener",
    "AtomConfig",
    "ChatService",
    "EventPublisher",
    "owner_of",
]
