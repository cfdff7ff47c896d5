"""Parallel groups: members run concurrently, verdicts apply in declared order."""

from __future__ import annotations

import asyncio
import contextlib
import time

from chatomon import Atom, OrbitalContext, Verdict, orbital, parallel
from tests.engine.conftest import ScriptNucleus


def sleeper(name: str, seconds: float, verdict: Verdict, log: list[str], side: str = "input"):
    @orbital(side=side, name=name)
    async def check(ctx: OrbitalContext) -> Verdict:
        log.append(f"{name}:start")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            log.append(f"{name}:cancelled")
            raise
        log.append(f"{name}:end")
        return verdict

    return check


async def test_members_run_concurrently(nucleus: ScriptNucleus) -> None:
    log: list[str] = []
    group = parallel(*(sleeper(f"s{i}", 0.05, Verdict.allow(), log) for i in range(5)))
    atom = Atom("a", nucleus, input=[group])
    started = time.perf_counter()
    result = await atom.chat("Hi")
    elapsed = time.perf_counter() - started
    assert elapsed < 0.2, f"5 x 50 ms members took {elapsed * 1000:.0f} ms"
    assert [r.name for r in result.report.input] == ["s0", "s1", "s2", "s3", "s4"]
    assert result.report.final_action == "answered"


async def test_verdicts_apply_in_declared_order_even_when_later_ones_finish_first(
    nucleus: ScriptNucleus,
) -> None:
    log: list[str] = []
    slow_block = sleeper("slow", 0.05, Verdict.block(reply="slow says no"), log)
    fast_block = sleeper("fast", 0.0, Verdict.block(reply="fast says no"), log)
    result = await Atom("a", nucleus, input=[parallel(slow_block, fast_block)]).chat("Hi")
    assert result.reply == "slow says no"
    assert [r.name for r in result.report.input] == ["slow"]
    assert result.report.input_not_run == ("fast",)


async def test_members_after_a_decisive_one_are_cancelled_and_not_run(
    nucleus: ScriptNucleus,
) -> None:
    log: list[str] = []
    group = parallel(
        sleeper("quick", 0.0, Verdict.allow(), log),
        sleeper("blocker", 0.01, Verdict.block(), log),
        sleeper("slow", 5, Verdict.allow(), log),
    )
    after = sleeper("after", 0, Verdict.allow(), log)
    started = time.perf_counter()
    result = await Atom("a", nucleus, input=[group, after]).chat("Hi")
    assert time.perf_counter() - started < 1
    assert "slow:cancelled" in log
    assert "after:start" not in log
    assert [r.name for r in result.report.input] == ["quick", "blocker"]
    assert result.report.input_not_run == ("slow", "after")
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def test_group_members_share_the_annotations_from_before_the_group(
    nucleus: ScriptNucleus,
) -> None:
    seen: list[dict[str, object]] = []
    first = orbital(side="output", name="first")(lambda ctx: Verdict.allow(annotations=1))

    @orbital(side="output", name="m1")
    def m1(ctx: OrbitalContext) -> Verdict:
        seen.append(dict(ctx.annotations))
        return Verdict.allow(annotations=2)

    @orbital(side="output", name="m2")
    def m2(ctx: OrbitalContext) -> Verdict:
        seen.append(dict(ctx.annotations))
        return Verdict.allow()

    @orbital(side="output", name="later")
    def later(ctx: OrbitalContext) -> Verdict:
        seen.append(dict(ctx.annotations))
        return Verdict.allow()

    await Atom("a", nucleus, output=[first, parallel(m1, m2), later]).chat("Hi")
    assert seen == [{"first": 1}, {"first": 1}, {"first": 1, "m1": 2}]


async def test_cancelling_the_turn_cancels_running_members(nucleus: ScriptNucleus) -> None:
    log: list[str] = []
    group = parallel(sleeper("a", 5, Verdict.allow(), log), sleeper("b", 5, Verdict.allow(), log))
    task = asyncio.ensure_future(Atom("x", nucleus, input=[group]).chat("Hi"))
    await asyncio.sleep(0.02)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert sorted(entry for entry in log if entry.endswith("cancelled")) == [
        "a:cancelled",
        "b:cancelled",
    ]
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def test_a_failing_member_follows_its_policy_without_stopping_the_group(
    nucleus: ScriptNucleus,
) -> None:
    boom = orbital(side="input", name="boom", on_error="allow")(lambda ctx: 1 / 0)
    ok = orbital(side="input", name="ok")(lambda ctx: Verdict.allow())
    result = await Atom("a", nucleus, input=[parallel(boom, ok)]).chat("Hi")
    assert [(r.name, r.error_type) for r in result.report.input] == [
        ("boom", "ZeroDivisionError"),
        ("ok", None),
    ]
