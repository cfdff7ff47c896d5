"""Running one chain of orbitals: order, parallel groups, timeouts and the error policy.

A chain is compiled once per atom (`compile_chain`), then run per message (`run_chain`).
Running never raises for an orbital's failure: the orbital's `on_error` policy turns the
failure into a verdict, and the outcome records what happened. Only cancellation of the
turn itself propagates.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.schemas import ErrorPolicy, OrbitalContext, Side, Verdict

__all__ = ["ChainRun", "CompiledOrbital", "Outcome", "Step", "compile_chain", "run_chain"]

logger = logging.getLogger("chatomon")

_ERROR_POLICIES: tuple[str, ...] = get_args(ErrorPolicy)


@functools.cache
def _policy_verdict(policy: ErrorPolicy, reason: str) -> Verdict:
    """The verdict an on_error policy stands for; built on first use to keep imports fast."""
    return Verdict(action=policy, reason=reason)


@dataclass(frozen=True, slots=True)
class CompiledOrbital:
    """An orbital with its effective options resolved against the atom's defaults."""

    orbital: Orbital
    name: str
    kind: str
    fingerprint: str
    timeout: float
    on_error: ErrorPolicy
    run_in_thread: bool
    streaming: bool


Step = CompiledOrbital | tuple[CompiledOrbital, ...]
"""One orbital, or the members of a parallel group."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one orbital execution produced."""

    orbital: CompiledOrbital
    verdict: Verdict
    duration_ms: float
    error: BaseException | None = None

    @property
    def decisive(self) -> bool:
        """Whether the verdict ends the chain (anything but allow)."""
        return self.verdict.action != "allow"


@dataclass(frozen=True, slots=True)
class ChainRun:
    """The result of running a chain on one text."""

    outcomes: tuple[Outcome, ...]
    not_run: tuple[str, ...]

    @property
    def decisive(self) -> Outcome | None:
        """The outcome that ended the chain, if any did."""
        if self.outcomes and self.outcomes[-1].decisive:
            return self.outcomes[-1]
        return None


def compile_chain(
    orbitals: Sequence[Orbital | ParallelGroup],
    *,
    side: Side,
    default_timeout: float,
    default_on_error: ErrorPolicy,
    taken_names: set[str],
) -> tuple[Step, ...]:
    """Validate a chain and resolve each orbital's options; raise ConfigurationError."""
    steps: list[Step] = []
    for position, item in enumerate(orbitals):
        if isinstance(item, ParallelGroup):
            if not item.members:
                raise ConfigurationError(
                    f"{side} chain position {position}: parallel() needs at least one orbital",
                    field=side,
                )
            members = tuple(
                _compile_one(member, side, default_timeout, default_on_error, taken_names)
                for member in item.members
            )
            steps.append(members)
        else:
            steps.append(_compile_one(item, side, default_timeout, default_on_error, taken_names))
    return tuple(steps)


def _compile_one(
    item: object,
    side: Side,
    default_timeout: float,
    default_on_error: ErrorPolicy,
    taken_names: set[str],
) -> CompiledOrbital:
    if not isinstance(item, Orbital):
        nested = isinstance(item, ParallelGroup)
        hint = " (nested parallel groups are not supported)" if nested else ""
        raise ConfigurationError(
            f"{side} chain: expected an Orbital or parallel(...), got {type(item).__name__}{hint}; "
            "decorate check functions with @orbital",
            field=side,
            value=type(item).__name__,
        )
    if item.side is not None and item.side != side:
        raise ConfigurationError(
            f"orbital {item.name!r} is an {item.side} orbital but was given in the {side} chain",
            field=side,
            value=item.name,
            allowed=(item.side,),
        )
    if item.name in taken_names:
        raise ConfigurationError(
            f"two orbitals are named {item.name!r}; names must be unique within an atom "
            "(pass name=... to tell them apart)",
            field="name",
            value=item.name,
        )
    taken_names.add(item.name)
    timeout = default_timeout if item.timeout is None else item.timeout
    if not timeout > 0:
        raise ConfigurationError(
            f"orbital {item.name!r}: timeout must be a positive number of seconds, got {timeout!r}",
            field="timeout",
            value=timeout,
        )
    on_error = default_on_error if item.on_error is None else item.on_error
    if on_error not in _ERROR_POLICIES:
        raise ConfigurationError(
            f"orbital {item.name!r}: on_error must be one of {_ERROR_POLICIES}, got {on_error!r}",
            field="on_error",
            value=on_error,
            allowed=_ERROR_POLICIES,
        )
    return CompiledOrbital(
        orbital=item,
        name=item.name,
        kind=item.kind,
        fingerprint=item.fingerprint,
        timeout=float(timeout),
        on_error=on_error,
        run_in_thread=item.run_in_thread,
        streaming=item.streaming,
    )


async def run_chain(
    steps: tuple[Step, ...],
    make_context: Callable[[dict[str, Any]], OrbitalContext],
    annotations: dict[str, Any],
) -> ChainRun:
    """Run `steps` in order until one verdict is decisive.

    `annotations` is updated in place with each applied verdict's annotations, so later
    orbitals (and the report) see them; `make_context` builds the context from a snapshot.
    """
    outcomes: list[Outcome] = []
    context: OrbitalContext | None = None
    for index, step in enumerate(steps):
        # A context is immutable and costs a model build: reuse it until annotations change.
        if context is None:
            context = make_context(dict(annotations))
        if isinstance(step, CompiledOrbital):
            applied = [await execute(step, context)]
            skipped: list[str] = []
        else:
            applied, skipped = await _run_group(step, context)
        for outcome in applied:
            outcomes.append(outcome)
            if outcome.verdict.annotations is not None:
                annotations[outcome.orbital.name] = outcome.verdict.annotations
                context = None
        if outcomes[-1].decisive:
            later = [name for rest in steps[index + 1 :] for name in _names(rest)]
            return ChainRun(tuple(outcomes), tuple(skipped + later))
    return ChainRun(tuple(outcomes), ())


def _names(step: Step) -> list[str]:
    if isinstance(step, CompiledOrbital):
        return [step.name]
    return [member.name for member in step]


async def _run_group(
    members: tuple[CompiledOrbital, ...], context: OrbitalContext
) -> tuple[list[Outcome], list[str]]:
    """Run members concurrently; apply in order; cancel (and await) those after a decisive one."""
    import asyncio  # noqa: PLC0415 - see _check: keeps `import chatomon` from loading asyncio

    tasks = [asyncio.ensure_future(execute(member, context)) for member in members]
    applied: list[Outcome] = []
    try:
        for position, task in enumerate(tasks):
            outcome = await task
            applied.append(outcome)
            if outcome.decisive:
                return applied, [member.name for member in members[position + 1 :]]
        return applied, []
    finally:
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


async def execute(compiled: CompiledOrbital, context: OrbitalContext) -> Outcome:
    """Run one orbital under its timeout; turn a failure into its on_error verdict."""
    started = time.perf_counter()
    try:
        verdict = await _check(compiled, context, started)
    except Exception as error:  # noqa: BLE001 - on_error is the contract for any failure
        duration_ms = (time.perf_counter() - started) * 1000
        timed_out = isinstance(error, TimeoutError)
        reason = "orbital_timeout" if timed_out else "orbital_error"
        verdict = _policy_verdict(compiled.on_error, reason)
        logger.warning(
            "orbital %s %s after %.1f ms; on_error=%s applied",
            compiled.name,
            "timed out" if timed_out else f"failed with {type(error).__name__}",
            duration_ms,
            compiled.on_error,
        )
        return Outcome(compiled, verdict, duration_ms, error)
    duration_ms = (time.perf_counter() - started) * 1000
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "orbital %s: %s (%s) in %.3f ms",
            compiled.name,
            verdict.action,
            verdict.reason,
            duration_ms,
        )
    return Outcome(compiled, verdict, duration_ms)


async def _check(compiled: CompiledOrbital, context: OrbitalContext, started: float) -> Verdict:
    # asyncio is imported where it is used: `import chatomon` stays ~30 ms lighter, and by
    # the time a check runs asyncio is loaded anyway (this is then a dict lookup).
    import asyncio  # noqa: PLC0415

    check = compiled.orbital.check
    if compiled.run_in_thread:
        async with asyncio.timeout(compiled.timeout):
            result: Any = await asyncio.to_thread(check, context)
    else:
        result = check(context)
        # Plain checks return a Verdict: test for it first, the Awaitable ABC check is slow.
        if type(result) is not Verdict and inspect.isawaitable(result):
            async with asyncio.timeout(compiled.timeout - (time.perf_counter() - started)):
                result = await result
        elif time.perf_counter() - started > compiled.timeout:
            raise TimeoutError(f"orbital {compiled.name!r} exceeded its {compiled.timeout} s")
    if not isinstance(result, Verdict):
        raise TypeError(
            f"orbital {compiled.name!r} returned {type(result).__name__}; expected a Verdict"
        )
    return result
