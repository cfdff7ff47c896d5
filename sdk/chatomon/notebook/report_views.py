"""Renderings of turn reports, orbital results and chat results.

Each object has three: `*_html` (scoped HTML with `<details>` sections, badges and
duration bars), `*_markdown` (the fallback of front ends without HTML) and `*_text`
(text/plain). Report fields are shown as captured: with `capture_content="none"` the
texts are absent and the rendering says so instead of showing empty boxes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from chatomon.notebook.markup import (
    badge,
    details,
    duration_bar,
    escape,
    format_ms,
    md_escape,
    md_table,
    preformatted,
    prose,
    table,
    view,
)
from chatomon.notebook.plan_views import (
    planned_body_html,
    planned_report_markdown,
    planned_text_lines,
)
from chatomon.schemas import OrbitalResult, OutputAttempt, TurnReport

if TYPE_CHECKING:
    from chatomon.atom import ChatResult

__all__ = [
    "chat_result_html",
    "chat_result_markdown",
    "chat_result_text",
    "orbital_result_html",
    "orbital_result_markdown",
    "orbital_result_text",
    "report_body_html",
    "turn_report_html",
    "turn_report_markdown",
    "turn_report_text",
]

ORBITAL_HEADERS = ("orbital", "kind", "action", "reason", "duration", "error")


def _orbital_row(result: OrbitalResult, longest: float) -> list[str]:
    action = badge(result.action)
    if result.escalate:
        action += " " + badge("escalated")
    if result.has_guidance:
        action += " " + badge("guidance", tone="neutral")
    error = ""
    if result.error_type:
        policy = f" → on_error={result.error_policy}" if result.error_policy else ""
        error = escape(result.error_type + policy)
        if result.error_message:
            error += f'<div class="cm-muted">{escape(result.error_message)}</div>'
    return [
        f"<b>{escape(result.name)}</b>",
        escape(result.kind),
        action,
        escape(result.reason or ""),
        duration_bar(result.duration_ms, longest),
        error,
    ]


def _captured_texts(result: OrbitalResult) -> str:
    shown = [
        (label, text)
        for label, text in (
            ("guidance", result.guidance),
            ("reply", result.reply),
            ("annotations", result.annotations),
        )
        if text
    ]
    return "".join(
        f"<div><b>{label}</b>{preformatted(text) if label == 'annotations' else prose(text)}</div>"
        for label, text in shown
    )


def _orbitals_table(results: Sequence[OrbitalResult]) -> str:
    if not results:
        return '<div class="cm-muted">no orbital ran</div>'
    longest = max(result.duration_ms for result in results)
    rows = [_orbital_row(result, longest) for result in results]
    texts = "".join(
        details(f"{escape(result.name)}: captured text", _captured_texts(result))
        for result in results
        if _captured_texts(result)
    )
    return table(ORBITAL_HEADERS, rows) + texts


def _not_run(names: Sequence[str]) -> str:
    if not names:
        return ""
    return f'<div class="cm-muted">not run: {escape(", ".join(names))}</div>'


def _text_block(label: str, text: str | None, capture: str) -> str:
    if text is None:
        return f'<div class="cm-muted">{escape(label)}: not captured (capture={capture})</div>'
    shown = f"sha256 {text}" if capture == "hash" else text
    return f"<div><b>{escape(label)}</b>{prose(shown)}</div>"


def _attempt_section(number: int, attempt: OutputAttempt, capture: str) -> str:
    decision = badge(attempt.decision or "interrupted")
    body = _text_block("nucleus reply", attempt.nucleus_reply, capture)
    body += _orbitals_table(attempt.results) + _not_run(attempt.not_run)
    return details(f"Output attempt {number} {decision}", body, open=True)


def _steps_section(report: TurnReport) -> str:
    steps: Sequence[Any] = getattr(report, "steps", ())
    if not steps:
        return ""
    longest = max(step.duration_ms for step in steps)
    rows = [
        [
            escape(step.kind),
            escape(step.name),
            badge(step.status) if step.status else "",
            escape(format_ms(step.started_ms)),
            duration_bar(step.duration_ms, longest),
        ]
        for step in steps
    ]
    headers = ("step", "name", "status", "starts at", "duration")
    return details(f"Nucleus steps ({len(steps)})", table(headers, rows))


def _pauses_section(report: TurnReport) -> str:
    pauses: Sequence[Any] = getattr(report, "pauses", ())
    if not pauses:
        return ""
    rows = [
        [
            escape(pause.mutation),
            escape(pause.approver),
            badge(pause.outcome),
            escape(f"{pause.waited_seconds:.1f} s"),
        ]
        for pause in pauses
    ]
    headers = ("mutation", "approver", "outcome", "waited")
    return details(f"Confirmation pauses ({len(pauses)})", table(headers, rows), open=True)


def _planned_section(report: TurnReport) -> str:
    if report.planned is None:
        return ""
    planned = report.planned
    summary = f"Plan ({len(planned.tasks)} tasks"
    summary += f", {planned.coverage.status})" if planned.coverage else ")"
    return details(escape(summary), planned_body_html(planned), open=True)


def _report_heading(report: TurnReport) -> str:
    flags = " " + badge("escalated") if report.escalated else ""
    tokens = report.usage.total_tokens
    facts = [format_ms(report.duration_ms), f"{tokens} tokens", f"capture={report.capture_content}"]
    ids = f"turn {report.turn_id}"
    if report.conversation_id:
        ids += f" · conversation {report.conversation_id}"
    ids += f" · started {report.started_at.isoformat(timespec='seconds')}"
    return (
        f"<div><b>Turn of {escape(report.atom_name)}</b> {badge(report.final_action)}{flags} "
        f'<span class="cm-muted">{escape(" · ".join(facts))}</span></div>'
        f'<div class="cm-muted">{escape(ids)}</div>'
    )


def report_body_html(report: TurnReport) -> str:
    """The inside of a report's rendering, for embedding in another view."""
    capture = report.capture_content
    parts = [_report_heading(report)]
    if capture != "none":
        parts.append(_text_block("user message", report.user_message, capture))
        parts.append(_text_block("final reply", report.final_reply, capture))
    if report.error_type:
        message = f": {report.error_message}" if report.error_message else ""
        parts.append(f"<div>{badge('error')} {escape(report.error_type + message)}</div>")
    chain = _orbitals_table(report.input) + _not_run(report.input_not_run)
    parts.append(details(f"Input chain ({len(report.input)})", chain, open=True))
    parts += [
        _attempt_section(number, attempt, capture)
        for number, attempt in enumerate(report.output, start=1)
    ]
    parts += [_planned_section(report), _steps_section(report), _pauses_section(report)]
    return "".join(parts)


def turn_report_html(report: TurnReport) -> str:
    """A TurnReport as scoped HTML."""
    return view(report_body_html(report))


def _all_results(report: TurnReport) -> Iterable[tuple[str, OrbitalResult]]:
    for result in report.input:
        yield "input", result
    for number, attempt in enumerate(report.output, start=1):
        for result in attempt.results:
            yield f"output #{number}", result


def turn_report_markdown(report: TurnReport) -> str:
    """A TurnReport as Markdown: a summary line and one table row per orbital run."""
    summary = (
        f"**Turn of {md_escape(report.atom_name)}**: **{md_escape(report.final_action)}**"
        f"{' (escalated)' if report.escalated else ''} · {md_escape(format_ms(report.duration_ms))}"
        f" · {report.usage.total_tokens} tokens · turn {md_escape(report.turn_id)}"
    )
    lines = [summary]
    if report.error_type:
        lines.append(f"Error: {md_escape(report.error_type)}")
    rows = [
        [where, r.name, r.action, r.reason or "", format_ms(r.duration_ms), r.error_type or ""]
        for where, r in _all_results(report)
    ]
    if rows:
        headers = ("chain", "orbital", "action", "reason", "duration", "error")
        lines.append(md_table(headers, rows))
    if report.planned is not None:
        lines.append(planned_report_markdown(report.planned))
    return "\n\n".join(lines)


def turn_report_text(report: TurnReport) -> str:
    """A TurnReport as plain text: a summary line, then one line per orbital run."""
    escalated = ", escalated" if report.escalated else ""
    lines = [
        f"TurnReport {report.atom_name}: {report.final_action}{escalated} in "
        f"{format_ms(report.duration_ms)} ({report.usage.total_tokens} tokens, "
        f"turn {report.turn_id})"
    ]
    lines += [
        f"  {where:<10} {r.name:<24} {r.action:<8} {format_ms(r.duration_ms)}"
        + (f"  {r.error_type}" if r.error_type else "")
        + (f" → on_error={r.error_policy}" if r.error_type and r.error_policy else "")
        for where, r in _all_results(report)
    ]
    if report.error_type:
        lines.append(f"  error: {report.error_type}")
    if report.planned is not None:
        lines += planned_text_lines(report.planned, indent="  ")
    return "\n".join(lines)


def orbital_result_html(result: OrbitalResult) -> str:
    """One OrbitalResult as scoped HTML."""
    heading = f"<div><b>Orbital result</b> ({escape(result.side)}, attempt {result.attempt})</div>"
    body = table(ORBITAL_HEADERS, [_orbital_row(result, result.duration_ms)])
    return view(heading + body + _captured_texts(result))


def orbital_result_markdown(result: OrbitalResult) -> str:
    """One OrbitalResult as a one-row Markdown table."""
    row = [result.side, result.name, result.kind, result.action, result.reason or ""]
    row += [format_ms(result.duration_ms), result.error_type or ""]
    headers = ("side", "orbital", "kind", "action", "reason", "duration", "error")
    return md_table(headers, [row])


def orbital_result_text(result: OrbitalResult) -> str:
    """One OrbitalResult as one line."""
    reason = f" ({result.reason})" if result.reason else ""
    error = f", {result.error_type}" if result.error_type else ""
    return (
        f"OrbitalResult {result.side} {result.name}: {result.action}{reason} in "
        f"{format_ms(result.duration_ms)}{error}"
    )


def chat_result_html(result: ChatResult) -> str:
    """A ChatResult as scoped HTML: the reply, then its report in a closed section."""
    action = badge(result.report.final_action)
    reply = f"<div><b>Reply</b> {action}{prose(result.reply)}</div>"
    history = f'<div class="cm-muted">history: {len(result.history)} messages</div>'
    return view(reply + history + details("Turn report", report_body_html(result.report)))


def chat_result_markdown(result: ChatResult) -> str:
    """A ChatResult as Markdown: the reply quoted, then the report."""
    return f"> {md_escape(result.reply)}\n\n{turn_report_markdown(result.report)}"


def chat_result_text(result: ChatResult) -> str:
    """A ChatResult as text: the reply, then the report's summary."""
    return f"{result.reply}\n\n{turn_report_text(result.report)}"
