"""Each provider round of a report names its model and carries its own usage.

The console prices a turn per model round (CHATOMON_CONSOLE['prices']): it needs each
round's tokens and model, not only the turn's sum.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from chatomon import Atom
from chatomon.chat.pipeline import AtomConfig
from chatomon.chat.store import MemoryStore
from chatomon.nucleus import NucleusReply, NucleusRequest, StepTiming, provider_model
from chatomon.providers import ScriptedProvider
from chatomon.schemas import TokenUsage, TurnReport
from tests.chat.services import RENAME, USER, collect, confirm_settings, service


class NamedModel(ScriptedProvider):
    """A scripted provider that names its model, as the vendor adapters' settings do."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.settings = {"model": "scripted-1"}


async def test_each_round_of_a_suspended_and_resumed_turn_has_its_model_and_usage() -> None:
    first, second = TokenUsage(input_tokens=10, output_tokens=2), TokenUsage(input_tokens=20)
    provider = NamedModel([[RENAME, first], ["Done.", second]])
    reports: list[TurnReport] = []
    config = AtomConfig(options={"on_turn": [reports.append]})
    chat = service(MemoryStore(), provider, settings=confirm_settings(), atom_config=config)
    pending = (await collect(chat.run_turn(USER, "Rename material 1 to Iron")))[-1]
    await collect(chat.resolve_confirmation(USER, pending["id"], True))
    (report,) = reports
    rounds = [s for s in report.steps if s.kind == "provider_round"]
    assert [(s.model, s.usage) for s in rounds] == [("scripted-1", first), ("scripted-1", second)]
    assert all(s.usage is None and s.model is None for s in report.steps if s.kind == "tool_call")
    assert report.usage == first + second  # the rounds add up to the turn


def test_provider_model_reads_the_model_setting() -> None:
    assert provider_model(NamedModel([])) == "scripted-1"
    assert provider_model(ScriptedProvider([])) is None
    assert provider_model(object()) is None


class RoundNucleus:
    """A nucleus reporting one timed round with its usage and model."""

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        usage = TokenUsage(input_tokens=5, output_tokens=2)
        yield usage
        yield StepTiming("provider_round", "P", 0.0, 0.001, model="m", usage=usage)
        yield NucleusReply("hi")


async def test_a_reports_round_usage_survives_its_json() -> None:
    result = await Atom("a", nucleus=RoundNucleus()).chat("hello")
    (step,) = result.report.steps
    assert step.model == "m" and step.usage == TokenUsage(input_tokens=5, output_tokens=2)
    again = TurnReport.model_validate_json(result.report.model_dump_json())
    assert again.steps == result.report.steps
