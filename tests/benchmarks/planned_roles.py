"""The planned benchmark's questions and its provider: each role answers by rule, at once or
after a simulated latency (`chatomon.providers.testing.Delay`).

`RoleProvider` is a `FunctionProvider` buildable from a profile's config (`{"role": ...,
"delay_seconds": ...}`), so that Django's `provider_profiles` and the SDK's `PlannedTurns`
build the same one. Its answers depend on what it is asked, never on the order of the
requests: three executors asked at once each get their own task's query.

- planner: the plan of the question (`QUESTIONS`), as JSON text;
- an executor: the `query` call of its task (found by the task's question), or "Done." after
  a result;
- synthesizer: a one-sentence answer;
- legacy (the tool loop, on the same question): the question's queries one round each, then
  the answer.

Every instance counts its requests and their prompt characters in `COUNTS` (per process), as
`chatomon.planned.provider_calls.prompt_chars` measures them, for planned and legacy turns
alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.testing import Delay, FunctionProvider, tool_call

__all__ = ["COUNTS", "QUESTIONS", "Question", "RoleProvider"]

COUNTS = {"calls": 0, "prompt_chars": 0}
"""Provider requests and their prompt characters in this process, every role's."""


@dataclass(frozen=True)
class Question:
    """One benchmark question: its plan's tasks, each with the query its executor makes."""

    key: str
    label: str
    text: str
    tasks: tuple[Mapping[str, Any], ...]
    queries: Mapping[str, Mapping[str, Any]]
    """The executor's query arguments, by task question."""

    def plan(self) -> str:
        """The planner's reply: the plan as JSON."""
        return json.dumps({"intent": "read", "tasks": list(self.tasks)})

    @property
    def legacy_queries(self) -> tuple[Mapping[str, Any], ...]:
        """The tool loop's queries on the same question: each task's, one round each."""
        return tuple(self.queries[str(task["question"])] for task in self.tasks)


def _task(task_id: str, question: str, manager: str, **extra: Any) -> dict[str, Any]:
    need = {"kind": "query", "description": question}
    return {"id": task_id, "question": question, "manager": manager, "needs": [need], **extra}


STEEL_PARTS = "Which parts are made of steel?"
PROJECTS = "Which projects are there?"
COBALT = "How dense is cobalt?"
ALUMINUM_PARTS = "Which parts are made of aluminum?"
THEIR_PROJECTS = "Which projects use those aluminum parts?"
QUERIES: Mapping[str, Mapping[str, Any]] = {
    STEEL_PARTS: {"manager": "PartManager", "filters": {"material__name": "Steel"},
                  "fields": ["name"]},
    PROJECTS: {"manager": "ProjectManager", "fields": ["name"]},
    COBALT: {"manager": "MaterialManager", "filters": {"name": "Cobalt"},
             "fields": ["name", "density"]},
    ALUMINUM_PARTS: {"manager": "PartManager", "filters": {"material__name": "Aluminum"},
                     "fields": ["name"]},
    THEIR_PROJECTS: {"manager": "ProjectManager",
                     "filters": {"parts__material__name": "Aluminum"}, "fields": ["name"]},
}  # fmt: skip

QUESTIONS = (
    Question("one", "one root, one query", STEEL_PARTS,
             (_task("t1", STEEL_PARTS, "PartManager"),), QUERIES),
    Question("three", "three independent roots",
             "Which parts are made of steel, which projects are there, and how dense is cobalt?",
             (_task("t1", STEEL_PARTS, "PartManager"), _task("t2", PROJECTS, "ProjectManager"),
              _task("t3", COBALT, "MaterialManager")), QUERIES),
    Question("dependent", "a root with a dependent",
             "Which projects use the parts made of aluminum?",
             (_task("t1", ALUMINUM_PARTS, "PartManager"),
              _task("t2", THEIR_PROJECTS, "ProjectManager", depends_on=["t1"])), QUERIES),
)  # fmt: skip
BY_TEXT = {question.text: question for question in QUESTIONS}


def _user_text(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def _task_question(messages: Sequence[Message]) -> str:
    # The executor's request names its task: "Task: <question>\nNeeds: ..."
    first = _user_text(messages).split("\n", 1)[0]
    return first.removeprefix("Task: ").strip()


def answer(role: str, messages: Sequence[Message]) -> list[Any]:
    """The steps of `role`'s completion for `messages` (no latency)."""
    last = messages[-1] if messages else Message.user("")
    if role == "planner":
        return [BY_TEXT[_user_text(messages)].plan()]
    if role == "synthesizer":
        return ["Here is what the data says."]
    if role == "legacy":
        queries = BY_TEXT[_user_text(messages)].legacy_queries
        rounds = sum(1 for m in messages if m.role == "tool")
        if rounds < len(queries):
            return [tool_call("query", queries[rounds])]
        return ["Here is what the data says."]
    if last.role == "tool":  # an executor after its result (a task resolves without one)
        return ["Done."]
    return [tool_call("query", QUERIES[_task_question(messages)])]


def _prompt_chars(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    from chatomon.planned.provider_calls import prompt_chars  # noqa: PLC0415

    return int(prompt_chars(messages, tools))


class RoleProvider(FunctionProvider):
    """Answers as its role by the module's rules, after `delay_seconds` when set.

    Args:
        config: `{"role": "planner" | "simple_executor" | ... | "legacy",
            "delay_seconds": 0.2}`.
    """

    name = "planned-bench"
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"role": "legacy", "delay_seconds": 0.0}
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = {**self.default_config, **(config or {}), **options}
        self.check_keys(merged)
        self.role = str(merged["role"])
        delay = float(merged["delay_seconds"])

        def complete(messages: list[Message], tools: list[ToolDefinition]) -> list[Any]:
            COUNTS["calls"] += 1
            COUNTS["prompt_chars"] += _prompt_chars(messages, tools)
            steps = answer(self.role, messages)
            return [Delay(delay), *steps] if delay else steps

        super().__init__(complete)

    async def complete(self, messages: Any, tools: Any) -> Any:
        """Answer, without keeping the request (a benchmark sends thousands)."""
        async for event in super().complete(messages, tools):
            yield event
        self.requests.clear()
