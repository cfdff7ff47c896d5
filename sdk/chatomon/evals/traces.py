"""Eval traces: one JSON line per case, and `show` to read them back.

A line holds the dataset, case and provider, whether it passed, the conversation turn by
turn (the user message, tool calls and results, confirmations and their decisions, the
answer, the error), the case's expectations, the judges' verdicts, the usage, the
duration, the error of a case that could not run, and each turn's TurnReport.

```python
with TraceWriter("evals.jsonl") as traces:
    traces.write(result)
print(format_traces(read_traces("evals.jsonl")))
```
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from chatomon.evals.runner import CaseResult

__all__ = ["TraceWriter", "case_trace", "format_trace", "format_traces", "read_traces"]


def case_trace(result: CaseResult) -> dict[str, Any]:
    """The JSON-ready trace of one case result."""
    case = result.case
    observation = result.observation
    turns = [] if observation is None else list(observation.turns)
    return {
        "dataset": result.dataset,
        "case": case.name,
        "description": case.description,
        "tier": case.tier,
        "tags": list(case.tags),
        "provider": result.provider,
        "passed": result.passed,
        "error": result.error,
        "duration_ms": round(result.duration_ms, 3),
        "usage": result.usage.model_dump(mode="json"),
        "tool_calls": result.tool_calls,
        "provider_rounds": result.provider_rounds,
        "expectations": [turn.expect.model_dump(mode="json") for turn in case.turns],
        "conversation": [
            {
                "user": turn.user,
                "tool_calls": list(turn.tool_calls),
                "tool_results": list(turn.tool_results),
                "confirmations": list(turn.confirmations),
                "answer": turn.answer,
                "error": turn.error,
            }
            for turn in turns
        ],
        "verdicts": [
            {"judge": v.judge, "passed": v.passed, "reason": v.reason} for v in result.verdicts
        ],
        "reports": [
            None if turn.report is None else turn.report.model_dump(mode="json") for turn in turns
        ],
    }


class TraceWriter:
    """Appends one JSON line per case result to a file (created, or truncated, on open)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def __enter__(self) -> TraceWriter:
        self._file = self.path.open("w", encoding="utf-8")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def write(self, result: CaseResult) -> None:
        """Write `result`'s trace as one line, flushed (a run that stops keeps what ran)."""
        if self._file is None:
            self._file = self.path.open("w", encoding="utf-8")
        # default=str: a tool result may hold a date or a Decimal the tools serialized loosely.
        self._file.write(json.dumps(case_trace(result), ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_traces(path: str | Path) -> Iterator[dict[str, Any]]:
    """The traces of a JSONL file, in order (blank lines skipped).

    Raises:
        ValueError: For a line that is not a JSON object, naming the file and line.
    """
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON: {error.msg}") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: a trace line must be a JSON object")
            yield record


def format_trace(record: Mapping[str, Any]) -> str:
    """One trace, readably: the case, its result, each turn, the failing verdicts."""
    status = "PASS" if record.get("passed") else "FAIL"
    usage = record.get("usage") or {}
    tokens = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    lines = [
        f"{status}  {record.get('dataset')}/{record.get('case')}  [{record.get('provider')}]",
        f"  {record.get('description', '')}".rstrip(),
        f"  {record.get('tool_calls', 0)} tool call(s), {record.get('provider_rounds', 0)} "
        f"provider round(s), {tokens} tokens, {float(record.get('duration_ms', 0)):.0f} ms",
    ]
    if record.get("error"):
        lines.append(f"  error: {record['error']}")
    for number, turn in enumerate(record.get("conversation") or [], start=1):
        lines += _turn_lines(number, turn)
    verdicts = record.get("verdicts") or []
    passing = [str(v.get("judge")) for v in verdicts if v.get("passed")]
    if passing:
        lines.append(f"  passed: {', '.join(passing)}")
    lines += [
        f"  FAIL {v.get('judge')}: {v.get('reason')}" for v in verdicts if not v.get("passed")
    ]
    return "\n".join(lines)


def format_traces(records: Sequence[Mapping[str, Any]] | Iterator[dict[str, Any]]) -> str:
    """Every trace, separated by blank lines, then how many passed."""
    shown = list(records)
    passed = sum(bool(record.get("passed")) for record in shown)
    parts = [format_trace(record) for record in shown]
    parts.append(f"{passed}/{len(shown)} passed")
    return "\n\n".join(parts)


def _turn_lines(number: int, turn: Mapping[str, Any]) -> list[str]:
    lines = [f"  turn {number}", f"    user: {turn.get('user')}"]
    results = {result.get("id"): result for result in turn.get("tool_results") or []}
    for call in turn.get("tool_calls") or []:
        lines.append(f"    tool {call.get('name')}({_compact(call.get('args'))})")
        if call.get("id") in results:
            lines.append(f"      -> {_compact(results[call.get('id')].get('result'))}")
    lines += [
        f"    confirm {confirmation.get('mutation')}: {confirmation.get('decision')}"
        for confirmation in turn.get("confirmations") or []
    ]
    if turn.get("error"):
        error = turn["error"]
        lines.append(f"    error: {error.get('code')}: {error.get('message')}")
    # A multi-line answer stays inside its turn.
    answer = str(turn.get("answer") or "").replace("\n", "\n            ")
    lines.append(f"    answer: {answer}")
    return lines


def _compact(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
