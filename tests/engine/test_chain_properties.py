"""Property tests: any combination of verdicts follows the chain rules of the engine."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chatomon import DEFAULT_REFUSAL, Atom, Verdict, orbital
from tests.engine.conftest import ScriptNucleus

VERDICTS = st.sampled_from(
    [
        Verdict.allow(),
        Verdict.allow("guide"),
        Verdict(action="allow", escalate=True),
        Verdict.block(),
        Verdict.block(reply="blocked reply"),
        Verdict.block(guidance="rewrite", escalate=True),
        Verdict.respond("direct answer"),
    ]
)


def constant(side: str, index: int, verdict: Verdict):
    return orbital(side=side, name=f"{side}{index}")(lambda ctx: verdict)


def first_decisive(verdicts: list[Verdict]) -> int | None:
    return next((i for i, v in enumerate(verdicts) if v.action != "allow"), None)


def expected_output(verdicts: list[Verdict], max_attempts: int, guided: bool):
    """(final_action, reply, nucleus calls) for an output chain that answers the same each time."""
    index = first_decisive(verdicts)
    if index is None:
        return ("guided_refusal" if guided else "answered"), "Hello!", 1
    verdict = verdicts[index]
    if verdict.reply is not None:
        return "orbital_response", verdict.reply, 1
    if verdict.guidance is not None:
        return "fallback_refusal", DEFAULT_REFUSAL, max_attempts
    return "fallback_refusal", DEFAULT_REFUSAL, 1


@settings(max_examples=150, deadline=None)
@given(
    inputs=st.lists(VERDICTS, max_size=4),
    outputs=st.lists(VERDICTS, max_size=3),
    max_attempts=st.integers(min_value=1, max_value=3),
)
def test_any_verdict_combination_follows_the_rules(
    inputs: list[Verdict], outputs: list[Verdict], max_attempts: int
) -> None:
    nucleus = ScriptNucleus()
    atom = Atom(
        "p",
        nucleus,
        input=[constant("input", i, v) for i, v in enumerate(inputs)],
        output=[constant("output", i, v) for i, v in enumerate(outputs)],
        max_attempts=max_attempts,
    )
    result = atom.chat_sync("question")
    report = result.report

    decisive = first_decisive(inputs)
    applied_inputs = inputs if decisive is None else inputs[: decisive + 1]
    assert [r.name for r in report.input] == [f"input{i}" for i in range(len(applied_inputs))]
    assert len(report.input) + len(report.input_not_run) == len(inputs)
    stop = None if decisive is None else inputs[decisive]

    if stop is not None and stop.guidance is None:
        expected = ("orbital_response" if stop.action == "respond" else "blocked", None, 0)
        reply = stop.reply or DEFAULT_REFUSAL
        assert (report.final_action, result.reply, nucleus.calls) == (expected[0], reply, 0)
        assert report.output == ()
        applied_outputs: list[Verdict] = []
    else:
        final_action, reply, calls = expected_output(outputs, max_attempts, stop is not None)
        assert (report.final_action, result.reply, nucleus.calls) == (final_action, reply, calls)
        assert len(report.output) == calls
        index = first_decisive(outputs)
        applied_outputs = outputs if index is None else outputs[: index + 1]
        for attempt in report.output:
            assert len(attempt.results) + len(attempt.not_run) == len(outputs)

    redacted = stop is not None and stop.action == "block"
    assert (result.history[-2].content != "question") is redacted
    assert result.history[-1].content == result.reply
    assert report.escalated == any(v.escalate for v in applied_inputs + applied_outputs)
