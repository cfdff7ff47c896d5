"""The demo page's suggested prompts, each asked in fresh conversations and judged as the page says.

Run: `python tests/benchmarks/local_demo_prompts.py [--runs 5] [--provider local]`
(`--model local:smollm2` for a quick check; `--provider` takes any provider the demo's
CHATOMON_PROVIDER does, a dotted path too).

Starts `python -m chatomon.demo` on a fresh data folder (or `--data DIR`), logs in as its
staff user, as the page tells a visitor to, and asks each prompt of
`chatomon.demo.prompts.SUGGESTED_PROMPTS` `--runs` times, each in a new conversation over
the chat's SSE endpoint. Each answer is judged by what the page promises, against the demo
database (read through the demo's own ORM, not hard-coded):

- "read" (Which projects use part P-1002?): the answer names every project the user can
  see that uses the part (by code or name), and no other project code;
- "staff_approval" (Set the unit cost ...): the turn waits with a `confirm_mutation` of
  updatePartCost for staff, naming the part (by id or number) with the cost asked, and
  that staff confirmation is pending in the database;
- "client_confirmation" (Assign part ... to project ...): the user is asked to confirm
  assignPartToProject naming the part and the project (by id, number or code) and the
  confirmation is pending;
  or, when the data already holds the assignment, the mutate tool's result is "unchanged",
  nobody is asked, and the answer says "already".

Prints a table (one row per conversation) and the passes per prompt, and writes
results/local_demo_prompts.json (or `--output PATH`) with the load average at start and end:
other work on the CPU slows every turn.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, cast

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from chatomon.demo.prompts import SUGGESTED_PROMPTS, Expectation, SuggestedPrompt
from tests.benchmarks.reporting import print_table, write_results
from tests.demo.process import DemoServer, manage

TURN_TIMEOUT_SECONDS = 900.0
STAFF_USER = "staff"
PART = re.compile(r"\bP-\d+\b")
PROJECT = re.compile(r"\bPRJ-\d+\b")
COST = re.compile(r"\bto (\d+(?:\.\d+)?)\b")

# Runs inside `manage shell`: the facts a prompt is judged against, as one JSON line.
FACTS = """
import json
from django.contrib.auth import get_user_model
from chatomon.demo.chat import ProjectManager
from chatomon.demo.models import Part, Project
from chatomon.django.models import PendingConfirmation

user = get_user_model().objects.get(username={user!r})
visible = ProjectManager().get_queryset(user)
parts = {{p.number: p for p in Part.objects.filter(number__in={parts!r})}}
projects = {{p.code: p for p in Project.objects.filter(code__in={projects!r})}}
print(json.dumps({{
    "projects": {{p.code: p.name for p in visible}},
    "using": {{n: sorted(visible.filter(parts=p).values_list("code", flat=True))
              for n, p in parts.items()}},
    "part_ids": {{n: p.pk for n, p in parts.items()}},
    "project_ids": {{c: p.pk for c, p in projects.items()}},
    "assigned": [[n, c] for n, p in parts.items() for c, j in projects.items()
                 if j.parts.filter(pk=p.pk).exists()],
    "pending": {{str(c.pk): c.approver for c in PendingConfirmation.objects.filter(
        status="pending")}},
}}))
"""


@dataclass(frozen=True)
class Facts:
    """What the demo database holds for the prompts, as the logged-in user sees it."""

    projects: Mapping[str, str]
    using: Mapping[str, Sequence[str]]
    part_ids: Mapping[str, int]
    project_ids: Mapping[str, int]
    assigned: frozenset[tuple[str, str]]
    pending: Mapping[str, str]


@dataclass(frozen=True)
class Judged:
    """One conversation's verdict and why."""

    passed: bool
    why: str


def read_facts(data_dir: Path, prompts: Sequence[SuggestedPrompt]) -> Facts:
    """The demo database's facts for `prompts` (a `manage shell` of the demo)."""
    texts = " ".join(prompt.text for prompt in prompts)
    script = FACTS.format(
        user=STAFF_USER,
        parts=sorted(set(PART.findall(texts))),
        projects=sorted(set(PROJECT.findall(texts))),
    )
    raw = json.loads(manage(data_dir, "shell", "-c", script).stdout.splitlines()[-1])
    return Facts(
        projects=raw["projects"],
        using=raw["using"],
        part_ids=raw["part_ids"],
        project_ids=raw["project_ids"],
        assigned=frozenset((part, code) for part, code in raw["assigned"]),
        pending=raw["pending"],
    )


def answer_of(events: Sequence[Mapping[str, Any]]) -> str:
    """The turn's reply: the done event's, else its text chunks joined."""
    for event in events:
        if event.get("type") == "done" and isinstance(event.get("reply"), str):
            return str(event["reply"])
    return "".join(str(e.get("content", "")) for e in events if e.get("type") == "text_chunk")


def _confirmation(events: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((e for e in events if e.get("type") == "confirm_mutation"), None)


def _ended(events: Sequence[Mapping[str, Any]]) -> str:
    """How the turn ended, for a failure's reason."""
    last = events[-1] if events else {}
    if last.get("type") == "error":
        return f"error {last.get('code')}"
    calls = [str(e.get("name")) for e in events if e.get("type") == "tool_call"]
    answer = " ".join(answer_of(events).split())
    return f"tools [{', '.join(calls)}], answer {answer[:80]!r}"


def _names(value: Any, row_id: int, key: str) -> bool:
    """Whether an input names the row: its id (or the id's digits) or its number or code.

    The demo's mutations take a part by id or number and a project by id or code.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        return False
    text = str(value).strip()
    return text == str(row_id) or text.casefold() == key.casefold()


def _same_cost(value: Any, wanted: str) -> bool:
    try:
        return Decimal(str(value)) == Decimal(wanted)
    except (InvalidOperation, ValueError):
        return False


def judge_read(
    prompt: SuggestedPrompt, events: Sequence[Mapping[str, Any]], facts: Facts
) -> Judged:
    """The answer names each project using the part (code or name), and no other code."""
    (part,) = PART.findall(prompt.text)
    expected = list(facts.using.get(part, ()))
    answer = answer_of(events)
    folded = answer.casefold()
    missing = [
        code
        for code in expected
        if code.casefold() not in folded and facts.projects[code].casefold() not in folded
    ]
    wrong = sorted(set(PROJECT.findall(answer)) - set(expected))
    if missing or wrong or (not expected and not answer.strip()):
        problems = [f"lacks {', '.join(missing)}"] if missing else []
        problems += [f"names {', '.join(wrong)}, which do not use {part}"] if wrong else []
        return Judged(False, "; ".join(problems or ["no answer"]) + f" ({_ended(events)})")
    return Judged(True, f"named {', '.join(expected) or 'no project'}")


def judge_staff_approval(
    prompt: SuggestedPrompt,
    events: Sequence[Mapping[str, Any]],
    facts: Facts,
    pending: Mapping[str, str],
) -> Judged:
    """A confirmation of updatePartCost for the part and cost, waiting for staff."""
    (part,) = PART.findall(prompt.text)
    cost = COST.findall(prompt.text)[-1]
    asked = _confirmation(events)
    if asked is None:
        return Judged(False, f"no confirmation ({_ended(events)})")
    data = asked.get("input") or {}
    if asked.get("mutation") != "updatePartCost" or asked.get("approver") != "staff":
        return Judged(False, f"asked {asked.get('approver')} for {asked.get('mutation')}")
    named = _names(data.get("part_id"), facts.part_ids[part], part)
    if not named or not _same_cost(data.get("unit_cost"), cost):
        return Judged(
            False, f"wrong input {json.dumps(data)} (part {part} is #{facts.part_ids[part]})"
        )
    if pending.get(str(asked.get("id"))) != "staff":
        return Judged(False, "no pending staff confirmation in the database")
    return Judged(True, "waits for staff")


def judge_client_confirmation(
    prompt: SuggestedPrompt,
    events: Sequence[Mapping[str, Any]],
    facts: Facts,
    pending: Mapping[str, str],
) -> Judged:
    """The user confirms the assignment; or, already assigned, it says so and asks nothing."""
    (part,) = PART.findall(prompt.text)
    (code,) = PROJECT.findall(prompt.text)
    asked = _confirmation(events)
    if (part, code) in facts.assigned:
        statuses = [
            (e.get("result") or {}).get("status")
            for e in events
            if e.get("type") == "tool_result" and e.get("name") == "mutate"
        ]
        if asked is not None:
            return Judged(False, f"asked {asked.get('approver')} although {part} is in {code}")
        if "unchanged" not in statuses:
            return Judged(False, f"no unchanged mutate result ({_ended(events)})")
        if "already" not in answer_of(events).casefold():
            return Judged(False, f"the answer does not say so ({_ended(events)})")
        return Judged(True, "already assigned: said so, asked nothing")
    if asked is None:
        return Judged(False, f"no confirmation ({_ended(events)})")
    data = asked.get("input") or {}
    wanted = {"part_id": facts.part_ids[part], "project_id": facts.project_ids[code]}
    if asked.get("mutation") != "assignPartToProject" or asked.get("approver") != "client":
        return Judged(False, f"asked {asked.get('approver')} for {asked.get('mutation')}")
    named = _names(data.get("part_id"), wanted["part_id"], part) and _names(
        data.get("project_id"), wanted["project_id"], code
    )
    if not named:
        return Judged(False, f"wrong input {json.dumps(data)} (expected {json.dumps(wanted)})")
    if pending.get(str(asked.get("id"))) != "client":
        return Judged(False, "no pending client confirmation in the database")
    return Judged(True, "asks the user")


def judge(
    prompt: SuggestedPrompt,
    events: Sequence[Mapping[str, Any]],
    facts: Facts,
    pending: Mapping[str, str],
) -> Judged:
    """The verdict on one conversation, by what the prompt expects."""
    if prompt.expects == "read":
        return judge_read(prompt, events, facts)
    if prompt.expects == "staff_approval":
        return judge_staff_approval(prompt, events, facts, pending)
    return judge_client_confirmation(prompt, events, facts, pending)


class Visitor:
    """The demo's staff user logged in through the console's form, as a browser would."""

    def __init__(self, url: str, password: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=TURN_TIMEOUT_SECONDS)
        self.http.get("/console/login/")
        form = {
            "username": STAFF_USER,
            "password": password,
            "csrfmiddlewaretoken": self.http.cookies.get("csrftoken") or "",
        }
        headers = {"Referer": url + "/console/login/"}
        response = self.http.post("/console/login/", data=form, headers=headers)
        if "sessionid" not in self.http.cookies:
            raise RuntimeError(f"logging in as {STAFF_USER} failed ({response.status_code})")
        # The login rotates the CSRF token: send the new one with every chat request.
        self.http.headers["X-CSRFToken"] = self.http.cookies.get("csrftoken") or ""
        self.http.headers["Referer"] = url + "/"

    def events(self, text: str) -> Iterator[dict[str, Any]]:
        """A new conversation's SSE events, up to its end or its confirmation."""
        body = {"text": text, "new_conversation": True}
        with self.http.stream("POST", "/chat/stream/", json=body) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    event: dict[str, Any] = json.loads(line[len("data: ") :])
                    yield event
                    if event.get("type") in TERMINAL_TYPES:
                        return

    def close(self) -> None:
        """Close the connection."""
        self.http.close()


def converse(
    visitor: Visitor, prompt: SuggestedPrompt, data_dir: Path, facts: Facts
) -> dict[str, Any]:
    """Ask `prompt` in a new conversation and judge it; one table row."""
    started = time.perf_counter()
    events: list[dict[str, Any]] = []
    pending: Mapping[str, str] = {}
    for event in visitor.events(prompt.text):
        events.append(event)
        if event.get("type") == "confirm_mutation":
            # Read while the stream is open: the confirmation waits as the user would.
            pending = read_facts(data_dir, [prompt]).pending
    seconds = time.perf_counter() - started
    verdict = judge(prompt, events, facts, pending)
    return {
        "seconds": round(seconds, 1),
        "passed": verdict.passed,
        "why": verdict.why,
        "tool_calls": [
            f"{e.get('name')}({json.dumps(e.get('args'), sort_keys=True)})"
            for e in events
            if e.get("type") == "tool_call"
        ],
        "answer": " ".join(answer_of(events).split())[:300],
        "ended": events[-1].get("type") if events else None,
    }


def run(
    data_dir: Path, provider: str, runs: int, prompts: Sequence[SuggestedPrompt]
) -> dict[str, Any]:
    """Serve the demo on `data_dir` and ask every prompt `runs` times."""
    password = secrets.token_urlsafe(12)
    server = DemoServer(
        data_dir,
        {
            "CHATOMON_PROVIDER": provider,
            "CHATOMON_DEMO_USER": STAFF_USER,
            "CHATOMON_DEMO_PASSWORD": password,
        },
    )
    rows: list[dict[str, Any]] = []
    try:
        url = server.wait_until_serving()
        serving = time.perf_counter()
        facts = read_facts(data_dir, prompts)
        visitor = Visitor(url, password)
        try:
            for prompt in prompts:
                for number in range(1, runs + 1):
                    row = converse(visitor, prompt, data_dir, facts)
                    rows.append({"prompt": prompt.text, "expects": prompt.expects,
                                 "run": number, **row})  # fmt: skip
                    print(f"  {prompt.text!r} #{number}: "
                          f"{'pass' if row['passed'] else 'FAIL'} in {row['seconds']} s"
                          f" ({row['why']})", flush=True)  # fmt: skip
        finally:
            visitor.close()
        asked_for_s = time.perf_counter() - serving
    finally:
        status = server.interrupt()
    if status != 0:
        raise RuntimeError(f"the demo exited with {status}:\n{server.log}")
    assigned = [list(pair) for pair in sorted(facts.assigned)]  # as JSON reads it back
    return {"rows": rows, "facts": asdict(facts) | {"assigned": assigned},
            "asking_s": round(asked_for_s, 1)}  # fmt: skip


def summary(
    rows: Sequence[Mapping[str, Any]], runs: int, prompts: Sequence[SuggestedPrompt]
) -> dict[str, str]:
    """Passes per prompt: "4/5"."""
    return {
        prompt.text: f"{sum(1 for r in rows if r['prompt'] == prompt.text and r['passed'])}/{runs}"
        for prompt in prompts
        if any(r["prompt"] == prompt.text for r in rows)
    }


def asked_prompts(
    given: Sequence[str], parser: argparse.ArgumentParser
) -> tuple[SuggestedPrompt, ...]:
    """The `--ask TEXT=EXPECTS` prompts (a usage error, exit 2, for a bad one)."""
    kinds = ("read", "staff_approval", "client_confirmation")
    prompts = []
    for value in given:
        text, _, expects = value.rpartition("=")
        if not text.strip() or expects not in kinds:
            parser.error(f"--ask {value!r}: give TEXT=EXPECTS, EXPECTS one of {', '.join(kinds)}")
        prompts.append(SuggestedPrompt(text.strip(), cast("Expectation", expects)))
    return tuple(prompts)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print the table and write the results; returns what was written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh conversations per prompt")
    parser.add_argument("--provider", default="local", help="the demo's CHATOMON_PROVIDER")
    parser.add_argument("--model", help="the same, by model name (local:smollm2)")
    parser.add_argument("--data", type=Path, help="an existing demo data folder to serve")
    parser.add_argument("--output", type=Path, help="the JSON to write (default: results/)")
    parser.add_argument(
        "--ask",
        action="append",
        metavar="TEXT=EXPECTS",
        help="ask this prompt instead of the page's (repeatable), judged as EXPECTS: "
        "read, staff_approval or client_confirmation",
    )
    options = parser.parse_args(argv)
    provider = options.model or options.provider
    prompts = asked_prompts(options.ask, parser) if options.ask else SUGGESTED_PROMPTS
    load_at_start = [round(value, 2) for value in os.getloadavg()]
    print(f"demo prompts on {provider}, {options.runs} run(s) each; load {load_at_start}")
    if options.data is not None:
        measured = run(options.data, provider, options.runs, prompts)
    else:
        with tempfile.TemporaryDirectory(prefix="chatomon-demo-prompts-") as data:
            measured = run(Path(data), provider, options.runs, prompts)
    rows = measured["rows"]
    print_table(
        f"the demo's suggested prompts on {provider}",
        [{**row, "passed": "pass" if row["passed"] else "FAIL"} for row in rows],
        ["prompt", "run", "passed", "seconds", "why"],
    )
    passes = summary(rows, options.runs, prompts)
    for text, score in passes.items():
        print(f"{score}  {text}")
    payload = {
        "provider": provider,
        "runs": options.runs,
        "passes": passes,
        "load_average_at_start": load_at_start,
        "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
        **measured,
    }
    if options.output is not None:
        options.output.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"written: {options.output}")
    else:
        print(f"written: {write_results('local_demo_prompts', payload)}")
    return payload


if __name__ == "__main__":
    main()
