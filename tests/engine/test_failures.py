"""Orbital failures and timeouts follow on_error; a nucleus failure aborts with a report."""

from __future__ import annotations

import asyncio
import time

import pytest

from chatomon import (
    DEFAULT_REFUSAL,
    Atom,
    NucleusError,
    OrbitalContext,
    TurnReport,
    Verdict,
    orbital,
)
from tests.engine.conftest import ScriptNucleus


def failing(side: str, **options):
    @orbital(side=side, name=f"failing_{side}", **options)
    def check(ctx: OrbitalContext) -> Verdict:
        raise RuntimeError("boom: secret user text")

    return check


def sleeping(side: str, seconds: float, **options):
    @orbital(side=side, name=f"sleepy_{side}", **options)
    async def check(ctx: OrbitalContext) -> Verdict:
        await asyncio.sleep(seconds)
        return Verdict.allow()

    return check


async def test_error_with_block_policy_blocks(nucleus: ScriptNucleus) -> None:
    result = await Atom("a", nucleus, input=[failing("input", on_error="block")]).chat("Hi")
    assert result.reply == DEFAULT_REFUSAL
    assert result.report.final_action == "blocked"
    (record,) = result.report.input
    assert record.action == "block"
    assert record.error_type == "RuntimeError"
    assert record.error_policy == "block"
    assert record.error_message is None
    assert nucleus.calls == 0


async def test_error_with_allow_policy_continues(nucleus: ScriptNucleus) -> None:
    result = await Atom("a", nucleus, output=[failing("output", on_error="allow")]).chat("Hi")
    assert result.reply == "Hello!"
    assert result.report.final_action == "answered"
    record = result.report.output[0].results[0]
    assert (record.action, record.error_type, record.error_policy) == (
        "allow",
        "RuntimeError",
        "allow",
    )


async def test_error_message_is_recorded_only_with_full_capture(nucleus: ScriptNucleus) -> None:
    for capture, expected in (("none", None), ("hash", None), ("full", "boom: secret user text")):
        atom = Atom("a", nucleus, input=[failing("input")], capture_content=capture)
        result = await atom.chat("Hi")
        assert result.report.input[0].error_message == expected


async def test_atom_default_on_error_applies_and_orbital_setting_wins(
    nucleus: ScriptNucleus,
) -> None:
    result = await Atom("a", nucleus, input=[failing("input")], on_error="allow").chat("Hi")
    assert result.report.final_action == "answered"
    atom = Atom("a", nucleus, input=[failing("input", on_error="block")], on_error="allow")
    assert (await atom.chat("Hi")).report.final_action == "blocked"
    assert (await Atom("a", nucleus, input=[failing("input")]).chat("Hi")).reply == DEFAULT_REFUSAL


async def test_async_timeout_applies_the_policy(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, input=[sleeping("input", 5, timeout=0.02, on_error="block")])
    started = time.perf_counter()
    result = await atom.chat("Hi")
    assert time.perf_counter() - started < 2
    assert result.report.final_action == "blocked"
    record = result.report.input[0]
    assert record.error_type == "TimeoutError"
    assert record.reason == "orbital_timeout"
    assert record.error_policy == "block"


async def test_atom_orbital_timeout_is_the_default(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, output=[sleeping("output", 5)], orbital_timeout=0.02)
    result = await atom.chat("Hi")
    assert result.report.final_action == "fallback_refusal"
    assert result.report.output[0].results[0].error_type == "TimeoutError"


async def test_sync_check_overrunning_its_timeout_is_a_timeout(nucleus: ScriptNucleus) -> None:
    @orbital(side="input", timeout=0.01, on_error="allow")
    def slow(ctx: OrbitalContext) -> Verdict:
        time.sleep(0.03)
        return Verdict.block(reply="late verdicts are discarded")

    result = await Atom("a", nucleus, input=[slow]).chat("Hi")
    assert result.report.final_action == "answered"
    assert result.report.input[0].error_type == "TimeoutError"


async def test_sync_check_in_a_thread_is_interrupted_by_its_timeout(
    nucleus: ScriptNucleus,
) -> None:
    @orbital(side="input", timeout=0.05, run_in_thread=True, on_error="block")
    def blocking(ctx: OrbitalContext) -> Verdict:
        time.sleep(0.5)
        return Verdict.allow()

    started = time.perf_counter()
    result = await Atom("a", nucleus, input=[blocking]).chat("Hi")
    assert time.perf_counter() - started < 0.4
    assert result.report.input[0].error_type == "TimeoutError"


async def test_a_check_returning_something_else_is_an_error(nucleus: ScriptNucleus) -> None:
    bad = orbital(side="input", name="bad", on_error="block")(lambda ctx: "allow")
    result = await Atom("a", nucleus, input=[bad]).chat("Hi")
    assert result.report.input[0].error_type == "TypeError"
    assert result.report.final_action == "blocked"


async def test_nucleus_failure_aborts_with_a_report_and_raises() -> None:
    reports: list[TurnReport] = []

    def broken(messages, guidance):
        raise ConnectionError("vendor down")

    atom = Atom("a", broken, on_turn=[reports.append], capture_content="full")
    with pytest.raises(NucleusError) as caught:
        await atom.chat("Hi")
    report = caught.value.report
    assert report.final_action == "aborted"
    assert report.error_type == "ConnectionError"
    assert report.error_message == "vendor down"
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert reports == [report]


async def test_nucleus_failure_message_is_withheld_without_full_capture() -> None:
    def broken(messages, guidance):
        raise ConnectionError("vendor down")

    with pytest.raises(NucleusError) as caught:
        await Atom("a", broken).chat("Hi")
    assert caught.value.report.error_message is None
    assert "vendor down" not in str(caught.value)


async def test_cancelled_turn_leaves_an_aborted_report() -> None:
    reports: list[TurnReport] = []
    started = asyncio.Event()

    async def slow(messages, guidance):
        started.set()
        await asyncio.sleep(10)
        return "never"

    atom = Atom("a", slow, on_turn=[reports.append])
    task = asyncio.ensure_future(atom.chat("Hi"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (report,) = reports
    assert report.final_action == "aborted"
    assert report.error_type == "CancelledError"
