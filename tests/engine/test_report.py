"""What the TurnReport holds: capture levels, fingerprints, annotations, escalation, sinks."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from datetime import UTC

import pytest

from chatomon import Atom, Orbital, OrbitalContext, TurnReport, Verdict, orbital
from tests.engine.conftest import ScriptNucleus

SECRET = "my card is 4111 1111 1111 1111"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Tagger(Orbital):
    side = "input"

    def __init__(self, label: str, *, weight: int = 1) -> None:
        self.label = label
        self.weight = weight

    def check(self, ctx: OrbitalContext) -> Verdict:
        return Verdict.allow("guided", annotations={"label": self.label, "seen": ctx.message})


@pytest.mark.parametrize("capture", ["none", "hash", "full"])
async def test_capture_content_governs_every_text_field(capture: str) -> None:
    nucleus = ScriptNucleus(replies=("bad reply", "good reply"))
    regen = orbital(side="output", name="regen")(
        lambda ctx: (
            Verdict.block(guidance="again") if ctx.message == "bad reply" else Verdict.allow()
        )
    )
    atom = Atom("a", nucleus, input=[Tagger("t")], output=[regen], capture_content=capture)
    report = (await atom.chat(SECRET)).report
    record = report.input[0]
    annotations_json = json.dumps({"label": "t", "seen": SECRET}, sort_keys=True)
    expected = {
        "none": (None, None, None, None, None),
        "hash": (
            sha(SECRET),
            sha("good reply"),
            sha("bad reply"),
            sha("guided"),
            sha(annotations_json),
        ),
        "full": (SECRET, "good reply", "bad reply", "guided", annotations_json),
    }[capture]
    assert (
        report.user_message,
        report.final_reply,
        report.output[0].nucleus_reply,
        record.guidance,
        record.annotations,
    ) == expected
    regen_guidance = {"none": None, "hash": sha("again"), "full": "again"}[capture]
    assert report.output[0].results[0].guidance == regen_guidance
    assert report.capture_content == capture
    if capture != "full":
        assert SECRET not in report.model_dump_json()


async def test_report_fields(nucleus: ScriptNucleus) -> None:
    result = await Atom("support", nucleus, input=[Tagger("t")]).chat("Hi", conversation_id="c")
    report = result.report
    assert report.atom_name == "support"
    assert report.conversation_id == "c"
    assert len(report.turn_id) == 32
    assert report.started_at.tzinfo is UTC
    assert report.duration_ms > 0
    assert report.input[0].kind == "Tagger"
    assert report.input[0].name == "tagger"
    assert report.input[0].side == "input"
    assert report.input[0].has_guidance
    assert report.input[0].duration_ms >= 0
    assert report.escalated is False
    assert TurnReport.model_validate_json(report.model_dump_json()) == report


async def test_turn_id_can_be_given(nucleus: ScriptNucleus) -> None:
    assert (await Atom("a", nucleus).chat("Hi", turn_id="t-1")).report.turn_id == "t-1"


def test_fingerprints_follow_configuration() -> None:
    assert Tagger("a").fingerprint == Tagger("a").fingerprint
    assert Tagger("a").fingerprint != Tagger("b").fingerprint
    assert Tagger("a").fingerprint == Tagger("a", weight=1).fingerprint
    assert Tagger("a", weight=2).fingerprint != Tagger("a").fingerprint
    assert Tagger("a", name="other").fingerprint != Tagger("a").fingerprint
    assert len(Tagger("a").fingerprint) == 16


def test_fingerprints_are_stable_across_processes() -> None:
    code = (
        "from chatomon import Blocklist, MaxLength;"
        "print(Blocklist(['acme', 'globex']).fingerprint, MaxLength(10).fingerprint)"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(runs) == 1


async def test_annotations_reach_later_orbitals_and_the_report() -> None:
    seen: list[object] = []

    @orbital(side="output", name="reader")
    def reader(ctx: OrbitalContext) -> Verdict:
        seen.append(dict(ctx.annotations))
        return Verdict.allow(annotations=["out"])

    @orbital(side="output", name="last")
    def last(ctx: OrbitalContext) -> Verdict:
        seen.append(dict(ctx.annotations))
        return Verdict.allow()

    atom = Atom(
        "a", ScriptNucleus(), input=[Tagger("t")], output=[reader, last], capture_content="full"
    )
    report = (await atom.chat("Hi")).report
    assert seen[0] == {"tagger": {"label": "t", "seen": "Hi"}}
    assert seen[1] == {"tagger": {"label": "t", "seen": "Hi"}, "reader": ["out"]}
    assert report.output[0].results[0].annotations == '["out"]'


@pytest.mark.parametrize(
    ("side", "verdict"),
    [
        ("input", Verdict.block(escalate=True)),
        ("input", Verdict.respond("x", escalate=True)),
        ("input", Verdict(action="allow", escalate=True)),
        ("output", Verdict.block(reply="y", escalate=True)),
    ],
)
async def test_escalate_on_an_applied_verdict_marks_the_report(side: str, verdict: Verdict) -> None:
    check = orbital(side=side, name="esc")(lambda ctx: verdict)
    atom = Atom("a", ScriptNucleus(), **{side: [check]})
    report = (await atom.chat("Hi")).report
    assert report.escalated is True
    results = report.input if side == "input" else report.output[0].results
    assert results[0].escalate is True


async def test_sinks_receive_the_report_and_failures_never_break_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[TurnReport] = []

    async def async_sink(report: TurnReport) -> None:
        received.append(report)

    def broken_sink(report: TurnReport) -> None:
        raise ValueError("sink down")

    atom = Atom("a", ScriptNucleus(), on_turn=[broken_sink, async_sink, received.append])
    with caplog.at_level(logging.ERROR, logger="chatomon"):
        result = await atom.chat("Hi")
    assert received == [result.report, result.report]
    assert any(
        "broken_sink" in r.getMessage() and "ValueError" in r.getMessage() for r in caplog.records
    )


async def test_logs_carry_labels_never_text(caplog: pytest.LogCaptureFixture) -> None:
    boom = orbital(side="output", name="boom")(lambda ctx: 1 / 0)
    atom = Atom(
        "a",
        ScriptNucleus(replies=(f"reply with {SECRET}",)),
        input=[Tagger("t")],
        output=[boom],
        capture_content="full",
    )
    with caplog.at_level(logging.DEBUG, logger="chatomon"):
        await atom.chat(SECRET)
    assert caplog.records, "the engine logs its decisions"
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "4111" not in text
    assert "tagger" in text and "boom" in text


async def test_a_failing_sink_never_puts_its_message_in_the_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def leaky_sink(report: TurnReport) -> None:
        raise ValueError(f"could not store {report.user_message!r}")

    atom = Atom("a", ScriptNucleus(), on_turn=[leaky_sink], capture_content="full")
    with caplog.at_level(logging.DEBUG, logger="chatomon"):
        await atom.chat(SECRET)
    assert any("leaky_sink" in r.getMessage() for r in caplog.records)
    assert "4111" not in caplog.text
    assert all(r.exc_info is None for r in caplog.records)
