"""Running eval cases: every turn a real `ChatService` turn, then the judges.

A case runs in its own service and store (a fresh `MemoryStore` unless the environment
gives another), so cases never see each other's conversations. Each user turn goes through
`run_turn`; a `confirm_mutation` is answered the way the case expects (a confirmation the
case does not expect is rejected: an eval never writes unasked); the turn's TurnReport is
read back from the store. The observations go to the judges (`chatomon.evals.judges`).

```python
results = run_cases_sync(selected, ProviderChoice.scripted(), Environment())
# selected: chatomon.evals.selection.select_cases(...)
```
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.chat.loop import LoopLimits
from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.service import AtomConfig
from chatomon.chat.store import MemoryStore
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.registration import ManagerRegistry
from chatomon.evals.cases import CaseTurn, EvalCase
from chatomon.evals.fixtures import FIXTURES
from chatomon.evals.judges import CaseObservation, TurnObservation, Verdict, judge_case
from chatomon.evals.selection import SCRIPTED, ProviderChoice, Selected, scripted_roles
from chatomon.providers.testing import ScriptedProvider
from chatomon.schemas import TokenUsage, TurnReport

__all__ = [
    "EVAL_ACTOR_ID",
    "CaseResult",
    "Environment",
    "run_case",
    "run_cases",
    "run_cases_sync",
]

EVAL_ACTOR_ID = "chatomon-evals"
"""The user id every eval turn runs as."""


@dataclass(frozen=True)
class Environment:
    """What every case's service is built from, besides its provider.

    Attributes:
        atom_config: The atom (orbitals, capture) each turn runs in.
        limits: The tool loop's per-message limits (None: the defaults).
        system_prompt: Project instructions added to the built-in prompt.
        fixture: Runs every case on this built-in fixture ("toy", "large"); None: each
            case on its own fixture, and a case without one on `registry`.
        registry: Gives the project's own managers, for cases without a fixture.
        tools: The tool settings used with `registry`.
        store: Gives each case's conversation store.
        service_options: Any other `ChatService` keyword arguments (the redaction rule,
            the confirmation timeouts, ...), as the project's service is built with.
    """

    atom_config: AtomConfig = field(default_factory=AtomConfig)
    limits: LoopLimits | None = None
    system_prompt: str = ""
    fixture: str | None = None
    registry: Callable[[], ManagerRegistry] | None = None
    tools: ToolSettings | None = None
    store: Callable[[], ConversationStore] = MemoryStore
    service_options: Mapping[str, Any] = field(default_factory=dict)

    def toolset_for(self, case: EvalCase) -> Toolset:
        """The tools `case` runs with: the forced fixture's, its own, or the project's.

        Raises:
            ValueError: For a case without a fixture when no project registry is given.
        """
        fixture = self.fixture or case.fixture
        if fixture is not None:
            return FIXTURES[fixture].toolset()
        if self.registry is None:
            raise ValueError(
                f"case {case.name!r} names no fixture: run it with --fixture or Django "
                "settings whose managers it reads"
            )
        return Toolset(self.registry(), self.tools)


@dataclass(frozen=True)
class CaseResult:
    """One case run by one provider: the observation, the verdicts, or what went wrong.

    Attributes:
        dataset: The dataset the case came from.
        case: The case.
        provider: The provider's label.
        verdicts: The judges' verdicts (empty when the case could not run).
        observation: What the case's turns did (None when it could not run).
        error: Why the case could not run, or None.
    """

    dataset: str
    case: EvalCase
    provider: str
    verdicts: tuple[Verdict, ...] = ()
    observation: CaseObservation | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the case ran and every judge passed it."""
        return self.error is None and all(verdict.passed for verdict in self.verdicts)

    @property
    def failures(self) -> tuple[Verdict, ...]:
        """The failing verdicts."""
        return tuple(verdict for verdict in self.verdicts if not verdict.passed)

    @property
    def tool_calls(self) -> int:
        """Tool calls made over all turns."""
        if self.observation is None:
            return 0
        return sum(len(turn.tool_calls) for turn in self.observation.turns)

    @property
    def provider_rounds(self) -> int:
        """Provider rounds over all turns."""
        return 0 if self.observation is None else self.observation.provider_rounds

    @property
    def usage(self) -> TokenUsage:
        """Tokens used over all turns."""
        return TokenUsage() if self.observation is None else self.observation.usage

    @property
    def duration_ms(self) -> float:
        """Wall time of the case's turns, in milliseconds."""
        return 0.0 if self.observation is None else self.observation.duration_ms


async def run_case(
    selected: Selected, choice: ProviderChoice, environment: Environment
) -> CaseResult:
    """Run one case's turns through a fresh service and judge them.

    A case that cannot run (no script, no fixture, a provider or store that raises outside
    a turn) is a failed result with its `error`, not an exception: the other cases go on.
    So is a scripted case whose turns left part of its script unplayed (a script that does
    not match what the pipeline asks is a dataset error, even when the judges pass).
    """
    case = selected.case
    try:
        provider = choice.build(case)
        options = dict(environment.service_options)
        played = [provider]
        if choice.label == SCRIPTED and (roles := scripted_roles(case)) is not None:
            options["planned"] = roles  # a planned case's roles play their own scripts
            played += list(roles.providers.values())
        service = ChatService(
            store=environment.store(),
            provider=provider,
            toolset=environment.toolset_for(case),
            atom_config=environment.atom_config,
            limits=environment.limits,
            system_prompt=environment.system_prompt,
            **options,
        )
        observation = await _observe(service, case)
    except Exception as error:  # noqa: BLE001 - reported as this case's failure
        return CaseResult(
            selected.dataset, case, choice.label, error=f"{type(error).__name__}: {error}"
        )
    return CaseResult(
        selected.dataset,
        case,
        choice.label,
        judge_case(observation),
        observation,
        _unplayed(played) if choice.shared is None else None,
    )


def _unplayed(providers: Iterable[Any]) -> str | None:
    """A case's own script that ran short: the case passed on fewer rounds than written."""
    remaining = sum(
        provider.remaining
        for provider in {id(p): p for p in providers}.values()  # roles may share one
        if isinstance(provider, ScriptedProvider)
    )
    if remaining > 0:
        return f"the script has {remaining} completion(s) the turns never asked for"
    return None


async def run_cases(
    selected: Iterable[Selected],
    choice: ProviderChoice,
    environment: Environment,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run the cases one after another (a provider may hold one connection or model)."""
    results: list[CaseResult] = []
    try:
        for one in selected:
            result = await run_case(one, choice, environment)
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        # A shared provider's clients belong to this event loop: release them with it.
        closing = getattr(choice.shared, "aclose", None)
        if closing is not None:
            await closing()
    return results


def run_cases_sync(
    selected: Sequence[Selected],
    choice: ProviderChoice,
    environment: Environment,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """`run_cases` from synchronous code (the CLI): its own event loop."""
    return asyncio.run(run_cases(selected, choice, environment, on_result=on_result))


async def _observe(service: ChatService, case: EvalCase) -> CaseObservation:
    actor = SimpleActor(id=EVAL_ACTOR_ID)
    conversation_id: str | None = None
    turns: list[TurnObservation] = []
    started = time.perf_counter()
    for turn in case.turns:
        observed, conversation_id = await _observe_turn(service, actor, turn, conversation_id)
        turns.append(observed)
    duration_ms = (time.perf_counter() - started) * 1000
    reports = [turn.report for turn in turns if turn.report is not None]
    usage = sum((report.usage for report in reports), TokenUsage())
    rounds = sum(1 for report in reports for step in report.steps if step.kind == "provider_round")
    return CaseObservation(
        case=case,
        turns=tuple(turns),
        duration_ms=duration_ms,
        usage=usage,
        provider_rounds=rounds,
    )


async def _observe_turn(
    service: ChatService, actor: SimpleActor, turn: CaseTurn, conversation_id: str | None
) -> tuple[TurnObservation, str | None]:
    # A case's first turn starts a conversation of its own: in a shared store (--record)
    # it must not continue the previous case's.
    turn_events = service.run_turn(
        actor, turn.user, conversation_id, new_conversation=conversation_id is None
    )
    events = [event async for event in turn_events]
    expected: list[tuple[str, str]] = [(c.mutation, c.decision) for c in turn.expect.confirmations]
    while events and events[-1].get("type") == "confirm_mutation":
        asked = events[-1]
        approve = _decision(expected, str(asked.get("mutation"))) == "approve"
        events += [
            event async for event in service.resolve_confirmation(actor, str(asked["id"]), approve)
        ]
    conversation_id = next(
        (str(e["conversation_id"]) for e in events if e.get("conversation_id")), conversation_id
    )
    observation = TurnObservation.from_events(turn.user, events, await _report(service, events))
    return observation, conversation_id


def _decision(expected: list[tuple[str, str]], mutation: str) -> str:
    """The case's decision for the next confirmation of `mutation`; unexpected: reject."""
    for index, (name, decision) in enumerate(expected):
        if name == mutation:
            del expected[index]  # a second confirmation of it takes the next expectation
            return decision
    return "reject"


async def _report(service: ChatService, events: list[dict[str, Any]]) -> TurnReport | None:
    turn_id = next((e["turn_id"] for e in reversed(events) if e.get("turn_id")), None)
    if turn_id is None:
        return None
    record = await service.store.get_turn(str(turn_id))
    if record is None or record.report is None:
        return None
    return TurnReport.model_validate(dict(record.report))
