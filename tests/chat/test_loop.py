"""The ToolLoop nucleus: rounds, concurrent reads, the mutation batch rule, limits, recovery."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from chatomon import Atom, NucleusError, TokenUsage, Verdict, orbital
from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.loop import LoopLimits, ToolLoop
from chatomon.chat.prompts import NO_ANSWER_RECOVERY, NO_TOOLS_RECOVERY
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.errors import ConfigurationError, ToolLoopError
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import Delay, tool_call

from .services import RENAME, Budget, confirm_settings

USER = SimpleActor(id=7, is_authenticated=True)


class Rename(BaseModel):
    material_id: int
    name: str


def registry_with_rename(log: list[dict[str, Any]]) -> Any:
    registry = toy_registry()

    @mutation(name="renameMaterial", input=Rename, manager="MaterialManager")
    def rename(actor: Any, data: Rename) -> dict[str, Any]:
        log.append(data.model_dump())
        return {"id": data.material_id, "name": data.name}

    registry.register(rename)
    return registry


def loop(
    provider: ScriptedProvider, *, settings: ToolSettings | None = None, **options: Any
) -> ToolLoop:
    registry = options.pop("registry", None) or toy_registry()
    return ToolLoop(provider, Toolset(registry, settings), actor=USER, **options)


async def run(atom: Atom, text: str = "Which parts are there?") -> tuple[list[Any], Any]:
    events = [e async for e in atom.stream(text)]
    return events, events[-1]


async def test_a_read_round_then_an_answer() -> None:
    provider = ScriptedProvider(
        [
            [
                tool_call("query", {"manager": "PartManager", "fields": ["name"]}),
                TokenUsage(input_tokens=100, output_tokens=10),
            ],
            ["Bolt, Bearing and Gear.", TokenUsage(input_tokens=150, output_tokens=8)],
        ]
    )
    events, done = await run(Atom("data", loop(provider)))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ToolCallStarted", "ToolResult", "TextChunk", "TurnDone"]
    result = events[1]
    assert result.result["total_count"] == 3
    assert [row["name"] for row in result.result["data"]] == ["Bolt", "Bearing", "Gear"]
    assert done.reply == "Bolt, Bearing and Gear."
    assert done.report.usage == TokenUsage(input_tokens=250, output_tokens=18)
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2].tool_calls[0].name == "query"
    assert second[3].tool_call_id == second[2].tool_calls[0].id
    assert "query" in provider.requests[0].tool_names
    provider.assert_consumed()


async def test_read_calls_of_one_completion_run_concurrently_results_in_call_order() -> None:
    started: list[str] = []
    registry = toy_registry()
    toolset = Toolset(registry)
    real_call = toolset.call

    async def slow_call(name: str, args: Any, context: Any) -> Any:
        started.append(args.get("manager", name))
        await asyncio.sleep(0.05 if args.get("manager") == "MaterialManager" else 0)
        return await real_call(name, args, context)

    toolset.call = slow_call  # type: ignore[method-assign]
    provider = ScriptedProvider(
        [
            [
                tool_call("query", {"manager": "MaterialManager"}),
                tool_call("query", {"manager": "ProjectManager"}),
            ],
            ["done"],
        ]
    )
    atom = Atom("data", ToolLoop(provider, toolset, actor=USER))
    events, _ = await run(atom)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.result["data"][0]["name"] for r in results] == ["Steel", "Apollo"]
    assert started == ["MaterialManager", "ProjectManager"]


async def test_mutate_with_another_call_is_refused_before_any_tool_runs() -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider(
        [
            [
                tool_call("query", {"manager": "PartManager"}),
                tool_call(
                    "mutate",
                    {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}},
                ),
            ]
        ]
    )
    settings = ToolSettings(allowed_mutations=["renameMaterial"])
    atom = Atom("data", loop(provider, settings=settings, registry=registry_with_rename(log)))
    with pytest.raises(NucleusError) as caught:
        await run(atom)
    assert isinstance(caught.value.__cause__, ToolLoopError)
    assert caught.value.__cause__.code == "mutation_batch_unsupported"
    assert caught.value.report.final_action == "aborted"
    assert log == []


async def test_a_mutation_runs_and_its_result_goes_back_to_the_model() -> None:
    log: list[dict[str, Any]] = []
    call = RENAME
    provider = ScriptedProvider([[call], ["Renamed."]])
    settings = ToolSettings(allowed_mutations=["renameMaterial"])
    events, done = await run(
        Atom("data", loop(provider, settings=settings, registry=registry_with_rename(log)))
    )
    assert log == [{"material_id": 1, "name": "Iron"}]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.result["status"] == "executed"
    assert done.reply == "Renamed."


@pytest.mark.parametrize("approve", [True, False])
async def test_a_confirmed_mutation_waits_for_the_confirmer(approve: bool) -> None:
    log: list[dict[str, Any]] = []
    asked: list[ConfirmMutation] = []

    async def confirmer(pending: ConfirmMutation) -> bool:
        asked.append(pending)
        return approve

    call = RENAME
    provider = ScriptedProvider([[call], ["ok"]])
    settings = confirm_settings()
    atom = Atom(
        "data",
        loop(provider, settings=settings, registry=registry_with_rename(log), confirmer=confirmer),
    )
    events, _ = await run(atom)
    (pending,) = asked
    assert pending in events
    assert pending.type == "confirm_mutation"
    assert pending.mutation == "renameMaterial"
    assert pending.approver == "client"
    assert log == ([{"material_id": 1, "name": "Iron"}] if approve else [])
    result = next(e for e in events if isinstance(e, ToolResult)).result
    assert result["status"] == ("executed" if approve else "rejected")
    if not approve:  # read to the user as it is: what was not changed, no instruction
        assert result["message"] == (
            "The change (name from Steel to Iron on MaterialManager #1) was rejected, "
            "so nothing was written."
        )


async def test_without_a_confirmer_a_confirmed_mutation_needs_another_transport() -> None:
    call = RENAME
    settings = confirm_settings()
    log: list[dict[str, Any]] = []
    atom = Atom(
        "data",
        loop(ScriptedProvider([[call]]), settings=settings, registry=registry_with_rename(log)),
    )
    with pytest.raises(NucleusError) as caught:
        await run(atom)
    assert caught.value.__cause__.code == "confirmation_required_transport"
    assert log == []


async def test_tool_errors_go_back_to_the_model_and_count_as_retries() -> None:
    provider = ScriptedProvider(
        [
            [tool_call("query", {"manager": "PartManagr"})],
            [tool_call("query", {"manager": "PartManager"})],
            ["Three parts."],
        ]
    )
    events, done = await run(Atom("data", loop(provider)))
    first = next(e for e in events if isinstance(e, ToolResult))
    assert first.result["status"] == "error"
    assert first.result["code"] == "unknown_manager"
    assert done.reply == "Three parts."
    assert provider.requests[1].messages[-1].role == "tool"


async def run_to_error(atom: Atom) -> tuple[list[Any], ToolLoopError]:
    """The events of a turn that a ToolLoopError ends, and that error."""
    events: list[Any] = []

    async def read_all() -> None:
        async for event in atom.stream("Which parts are there?"):
            events.append(event)  # noqa: PERF401 - kept one by one: the stream ends raising

    with pytest.raises(NucleusError) as caught:
        await read_all()
    cause = caught.value.__cause__
    assert isinstance(cause, ToolLoopError)
    return events, cause


READ_ROUNDS = [
    [tool_call("search_managers", {"query": "parts"})],
    [tool_call("get_manager_schema", {"manager": "PartManager"})],
    [tool_call("query", {"manager": "PartManager"})],
]


async def test_every_round_of_read_calls_is_a_retry_and_one_beyond_the_limit_is_refused() -> None:
    """The reference: "max_retries_per_message | 3 | Maximum non-mutation tool-loop retries
    in one user turn." and "tool_retry_limit | The model exceeded max_retries_per_message;
    the turn is terminal."

    Successful reads are retries too: the third read round is refused before its tool runs.
    """
    provider = ScriptedProvider([*READ_ROUNDS, ["never asked"]])
    limits = LoopLimits(max_retries_per_message=2)
    events, error = await run_to_error(Atom("data", loop(provider, limits=limits)))
    assert error.code == "tool_retry_limit"
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == [
        "search_managers",
        "get_manager_schema",
    ]
    assert len(provider.requests) == 3


async def test_a_turn_may_spend_every_retry_then_answer() -> None:
    provider = ScriptedProvider([*READ_ROUNDS, ["Three parts."]])
    _, done = await run(Atom("data", loop(provider, limits=LoopLimits(max_retries_per_message=3))))
    assert done.reply == "Three parts."


async def test_the_read_calls_of_one_completion_are_one_retry() -> None:
    both = [
        tool_call("query", {"manager": "PartManager"}),
        tool_call("query", {"manager": "MaterialManager"}),
    ]
    provider = ScriptedProvider([both, ["Parts and materials."]])
    _, done = await run(Atom("data", loop(provider, limits=LoopLimits(max_retries_per_message=1))))
    assert done.reply == "Parts and materials."


async def test_mutation_rounds_are_not_retries() -> None:
    """The reference counts "non-mutation tool-loop retries": a write is no retry."""
    log: list[dict[str, Any]] = []
    call = RENAME
    atom = Atom(
        "data",
        loop(
            ScriptedProvider([[call], ["Renamed."]]),
            settings=ToolSettings(allowed_mutations=["renameMaterial"]),
            registry=registry_with_rename(log),
            limits=LoopLimits(max_retries_per_message=0),
        ),
    )
    _, done = await run(atom)
    assert done.reply == "Renamed."
    assert log == [{"material_id": 1, "name": "Iron"}]


async def test_failed_tool_rounds_counts_only_rounds_whose_results_held_an_error() -> None:
    """chatomon's option (max_retries_counts="failed_tool_rounds"): successful reads are free."""
    limits = LoopLimits(max_retries_per_message=1, max_retries_counts="failed_tool_rounds")
    provider = ScriptedProvider([*READ_ROUNDS, ["Three parts."]])
    _, done = await run(Atom("data", loop(provider, limits=limits)))
    assert done.reply == "Three parts."
    bad = [tool_call("query", {"manager": "Nope"})]
    provider = ScriptedProvider([bad, bad, bad])
    _, error = await run_to_error(Atom("data", loop(provider, limits=limits)))
    assert error.code == "tool_retry_limit"
    assert len(provider.requests) == 2, "the second failed round is one beyond the limit"


async def test_zero_mutations_forbids_writes() -> None:
    log: list[dict[str, Any]] = []
    call = RENAME
    settings = ToolSettings(allowed_mutations=["renameMaterial"])
    atom = Atom(
        "data",
        loop(
            ScriptedProvider([[call]]),
            settings=settings,
            registry=registry_with_rename(log),
            limits=LoopLimits(max_mutations_per_message=0),
        ),
    )
    with pytest.raises(NucleusError) as caught:
        await run(atom)
    assert caught.value.__cause__.code == "mutation_limit"
    assert log == []


async def test_the_round_cap_defaults_to_retries_plus_mutations_plus_two() -> None:
    limits = LoopLimits(max_retries_per_message=5, max_mutations_per_message=0)
    assert limits.total_rounds == 7
    read = [tool_call("search_managers", {"query": "parts"})]
    provider = ScriptedProvider([read] * 3)
    atom = Atom("data", loop(provider, limits=LoopLimits(max_total_rounds_per_message=3)))
    with pytest.raises(NucleusError) as caught:
        await run(atom)
    assert caught.value.__cause__.code == "turn_limit"
    assert len(provider.requests) == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"max_retries_per_message": -1},
        {"max_total_rounds_per_message": 0},
        {"max_mutations_per_message": True},
        {"max_retries_counts": "every_round"},
    ],
)
def test_limits_are_validated(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        LoopLimits(**bad)


async def test_recovery_when_the_model_answers_without_any_tool() -> None:
    provider = ScriptedProvider(
        [
            ["There are 12 parts."],
            [tool_call("query", {"manager": "PartManager"})],
            ["There are 3 parts."],
        ]
    )
    atom = Atom("data", loop(provider, limits=LoopLimits(recover_missing_tool_calls=True)))
    events, done = await run(atom)
    assert provider.requests[1].messages[-1].content == NO_TOOLS_RECOVERY
    assert done.reply == "There are 3 parts."
    shown = "".join(e.content for e in events if type(e).__name__ == "TextChunk")
    assert "12" not in shown, "the unchecked first answer is never shown"


async def test_recovery_happens_at_most_once() -> None:
    provider = ScriptedProvider([["Hello!"], ["Hello again!"]])
    atom = Atom("data", loop(provider, limits=LoopLimits(recover_missing_tool_calls=True)))
    _, done = await run(atom, "Hi")
    assert done.reply == "Hello again!"
    provider.assert_consumed()


async def test_recovery_when_no_answer_follows_tool_results() -> None:
    provider = ScriptedProvider(
        [[tool_call("query", {"manager": "PartManager"})], [""], ["Three parts."]]
    )
    atom = Atom("data", loop(provider, limits=LoopLimits(recover_missing_tool_calls=True)))
    _, done = await run(atom)
    assert provider.requests[2].messages[-1].content == NO_ANSWER_RECOVERY
    assert done.reply == "Three parts."


async def test_no_recovery_when_disabled() -> None:
    provider = ScriptedProvider([["No tools needed."]])
    _, done = await run(Atom("data", loop(provider)), "Hi")
    assert done.reply == "No tools needed."


async def test_system_prompt_project_text_and_orbital_guidance_reach_the_provider() -> None:
    hint = orbital(side="input", name="tone")(lambda ctx: Verdict.allow("Answer in French."))
    provider = ScriptedProvider([["Bonjour."]])
    atom = Atom("data", loop(provider, system_prompt="Company: Acme Machines."), input=[hint])
    await run(atom, "Hi")
    system = provider.requests[0].messages[0]
    assert system.role == "system"
    assert "never invent data" in system.content
    assert "Company: Acme Machines." in system.content
    assert "Answer in French." in system.content
    # The data catalogue sits between the project's text and this turn's guidance, so the
    # start of the prompt stays the same from turn to turn (a local model's cache).
    catalogue = "- PartManager: id, name; relations: material -> MaterialManager"
    order = [system.content.index(t) for t in ("Acme Machines", catalogue, "Answer in French")]
    assert order == sorted(order)


async def test_output_orbitals_regenerate_a_data_answer_with_guidance() -> None:
    guard = orbital(side="output", name="no_guess")(
        lambda ctx: (
            Verdict.block(guidance="Use the data.") if "maybe" in ctx.message else Verdict.allow()
        )
    )
    provider = ScriptedProvider(
        [["maybe 5"], [tool_call("query", {"manager": "PartManager"})], ["3 parts."]]
    )
    _, done = await run(Atom("data", loop(provider), output=[guard]))
    assert done.reply == "3 parts."
    assert [a.decision for a in done.report.output] == ["regenerate", "accept"]
    assert "Use the data." in provider.requests[1].messages[0].content


async def test_provider_stall_is_a_provider_timeout() -> None:
    provider = ScriptedProvider([["start", Delay(2), "late"]])
    atom = Atom("data", loop(provider, stream_timeout_seconds=0.1))
    with pytest.raises(NucleusError) as caught:
        await run(atom)
    assert caught.value.report.error_type == "ProviderTimeoutError"


def test_events_have_the_contract_wire_form() -> None:
    assert ToolCallStarted(id="c1", name="query", args={"a": 1}).to_dict() == {
        "type": "tool_call",
        "id": "c1",
        "name": "query",
        "args": {"a": 1},
    }
    assert ToolResult(id="c1", name="query", result={"data": []}).to_dict() == {
        "type": "tool_result",
        "id": "c1",
        "name": "query",
        "result": {"data": []},
    }


async def test_a_failing_read_lets_its_siblings_finish_before_the_turn_ends() -> None:
    finished: list[str] = []
    toolset = Toolset(toy_registry())

    async def flaky_call(name: str, args: Any, context: Any) -> Any:
        if args.get("manager") == "MaterialManager":
            raise RuntimeError("database down")
        await asyncio.sleep(0.05)
        finished.append(args["manager"])
        return {"data": [], "total_count": 0, "has_more": False}

    toolset.call = flaky_call  # type: ignore[method-assign]
    provider = ScriptedProvider(
        [
            [
                tool_call("query", {"manager": "MaterialManager"}),
                tool_call("query", {"manager": "PartManager"}),
            ]
        ]
    )
    with pytest.raises(NucleusError) as caught:
        await run(Atom("data", ToolLoop(provider, toolset, actor=USER)))
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert finished == ["PartManager"]


@pytest.mark.parametrize("approve", [True, False])
async def test_a_decided_mutation_is_audited(approve: bool) -> None:
    audit: list[tuple[str, dict[str, Any]]] = []

    async def confirmer(pending: ConfirmMutation) -> bool:
        return approve

    call = RENAME
    settings = confirm_settings()
    atom = Atom(
        "data",
        loop(
            ScriptedProvider([[call], ["ok"]]),
            settings=settings,
            registry=registry_with_rename([]),
            confirmer=confirmer,
            audit=lambda kind, payload: audit.append((kind, dict(payload))),
        ),
    )
    await run(atom)
    decided = [payload for kind, payload in audit if kind == "mutation_executed"]
    assert decided == [
        {"mutation": "renameMaterial", "status": "executed" if approve else "rejected"}
    ]


async def test_an_exhausted_budget_rejects_the_next_tool() -> None:
    """The reference: "Once a token budget is exhausted, GeneralManager records the completed
    provider usage and rejects the next tool, confirmation write, summary, or provider round.
    A rate_limited event includes retry_after_seconds."

    The round that exhausts the budget is recorded; the tool it asked for does not run.
    """
    usage = TokenUsage(input_tokens=90, output_tokens=20)
    toolset = Toolset(toy_registry())
    ran: list[str] = []
    real_call = toolset.call

    async def watched_call(name: str, args: Any, context: Any) -> Any:
        ran.append(name)
        return await real_call(name, args, context)

    toolset.call = watched_call  # type: ignore[method-assign]
    provider = ScriptedProvider([[tool_call("query", {"manager": "PartManager"}), usage]])
    budget = Budget(allowed=1, wait=41.2)
    atom = Atom("data", ToolLoop(provider, toolset, actor=USER, budget=budget))
    events, error = await run_to_error(atom)
    assert (error.code, error.retry_after_seconds) == ("rate_limited", 42)
    assert budget.recorded == [usage]
    assert ran == []
    assert not any(isinstance(e, ToolCallStarted | ToolResult) for e in events)


async def test_an_exhausted_budget_rejects_the_next_provider_round() -> None:
    """The reference: an exhausted token budget rejects the next "provider round"."""
    provider = ScriptedProvider([["never asked"]])
    _, error = await run_to_error(Atom("data", loop(provider, budget=Budget(allowed=0, wait=41.2))))
    assert error.code == "rate_limited"
    assert provider.requests == []


async def test_an_exhausted_budget_rejects_a_confirmed_write() -> None:
    """The reference: an exhausted token budget rejects the next "confirmation write".

    The budget runs out while the confirmation waits (the same user's other turns spent
    it): the approved mutation is not executed.
    """
    log: list[dict[str, Any]] = []
    budget = Budget(allowed=5, wait=41.2)

    async def confirmer(pending: ConfirmMutation) -> bool:
        budget.allowed = 0  # spent elsewhere meanwhile
        return True

    call = RENAME
    settings = confirm_settings()
    atom = Atom(
        "data",
        loop(
            ScriptedProvider([[call], ["never asked"]]),
            settings=settings,
            registry=registry_with_rename(log),
            confirmer=confirmer,
            budget=budget,
        ),
    )
    _, error = await run_to_error(atom)
    assert error.code == "rate_limited"
    assert log == []
