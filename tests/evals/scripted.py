"""Run an eval case deterministically: its own scripts through ChatService on a MemoryStore.

The CI gate of the packaged datasets (tests/evals/test_datasets.py) and the judges' tests
use this; the evals runner does the same through the CLI's `scripted` provider.
"""

from __future__ import annotations

import time
from typing import Any

from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import MemoryStore
from chatomon.data.actor import SimpleActor
from chatomon.evals.cases import EvalCase
from chatomon.evals.fixtures import FIXTURES
from chatomon.evals.judges import CaseObservation, TurnObservation, Verdict, judge_case
from chatomon.providers.testing import ScriptedProvider
from chatomon.schemas import TokenUsage, TurnReport

ACTOR = SimpleActor(id=1, is_authenticated=True)


async def _turn_report(store: MemoryStore, events: list[dict[str, Any]]) -> TurnReport | None:
    turn_ids = [event["turn_id"] for event in events if event.get("turn_id")]
    if not turn_ids:
        return None
    record = await store.get_turn(turn_ids[-1])
    if record is None or record.report is None:
        return None
    return TurnReport.model_validate(record.report)


async def run_case(case: EvalCase, *, provider: Any = None) -> CaseObservation:
    """Play every turn of `case`, answering its confirmations as the case says."""
    assert case.fixture is not None, f"{case.name}: a packaged case names its fixture"
    store = MemoryStore()
    provider = provider or ScriptedProvider(case.completions())
    service = ChatService(store=store, provider=provider, toolset=FIXTURES[case.fixture].toolset())
    started = time.perf_counter()
    turns: list[TurnObservation] = []
    conversation: str | None = None
    usage = TokenUsage()
    for turn in case.turns:
        events = [e async for e in service.run_turn(ACTOR, turn.user, conversation)]
        decisions = [c.decision == "approve" for c in turn.expect.confirmations]
        while events and events[-1].get("type") == "confirm_mutation" and decisions:
            pending = events[-1]["id"]
            resumed = service.resolve_confirmation(ACTOR, pending, decisions.pop(0))
            events.extend([event async for event in resumed])
        conversation = next((e["conversation_id"] for e in events if "conversation_id" in e), None)
        for event in events:
            if event.get("type") == "done" and isinstance(event.get("usage"), dict):
                usage = usage + TokenUsage(**event["usage"])
        report = await _turn_report(store, events)
        turns.append(TurnObservation.from_events(turn.user, events, report))
    rounds = len(getattr(provider, "requests", ()))
    return CaseObservation(
        case=case,
        turns=tuple(turns),
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=usage,
        provider_rounds=rounds,
    )


async def judge_scripted(case: EvalCase) -> tuple[CaseObservation, tuple[Verdict, ...]]:
    """Run `case` on its scripts and judge it; the provider must play its whole script."""
    provider = ScriptedProvider(case.completions())
    observation = await run_case(case, provider=provider)
    provider.assert_consumed()
    return observation, judge_case(observation)


def failures(verdicts: tuple[Verdict, ...]) -> list[str]:
    """The failing verdicts, readably."""
    return [str(verdict) for verdict in verdicts if not verdict.passed]


def planned_available() -> bool:
    """Whether planned turns can run here (chatomon.planned's PlannedTurns and the service)."""
    import importlib  # noqa: PLC0415 - planned turns land apart from the evals
    import inspect  # noqa: PLC0415

    try:
        planned = importlib.import_module("chatomon.planned")
    except ImportError:
        return False
    parameters = inspect.signature(ChatService).parameters
    return hasattr(planned, "PlannedTurns") and "planned" in parameters


async def run_planned_case(case: EvalCase) -> tuple[CaseObservation, dict[str, ScriptedProvider]]:
    """Play a planned case: one ScriptedProvider per role, the legacy provider unused."""
    from chatomon.planned import (  # noqa: PLC0415
        REQUIRED_ROLES,
        PlannedTurns,
        get_planned_chat_settings,
    )

    assert case.planned is not None and case.fixture is not None
    providers = {role: ScriptedProvider(case.planned.completions(role)) for role in REQUIRED_ROLES}
    turns = PlannedTurns(
        providers, settings=get_planned_chat_settings({"planned": {"enabled": True}})
    )
    store = MemoryStore()
    service = ChatService(
        store=store,
        provider=ScriptedProvider([]),
        toolset=FIXTURES[case.fixture].toolset(),
        planned=turns,
    )
    observed: list[TurnObservation] = []
    conversation: str | None = None
    for turn in case.turns:
        events = [e async for e in service.run_turn(ACTOR, turn.user, conversation)]
        conversation = next((e["conversation_id"] for e in events if "conversation_id" in e), None)
        report = await _turn_report(store, events)
        observed.append(TurnObservation.from_events(turn.user, events, report))
    return CaseObservation(case=case, turns=tuple(observed)), providers
