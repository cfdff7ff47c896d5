"""Eval cases and datasets: what a case asks, what it expects, and how it is scripted.

A dataset is a YAML file (`datasets/<name>.yaml`) holding a name, a description and its
cases. A case is one conversation (one or more user turns) with the expectations of each
turn and, for deterministic providers, the script of each turn: the completions a
`ScriptedProvider` plays.

```yaml
name: basic_queries
description: Single reads and aggregates over the toy fixture.
cases:
  - name: list_parts
    description: Lists every part.
    fixture: toy
    tags: [read]
    turns:
      - user: Which parts are there?
        expect:
          tools: [{name: query, args: {manager: PartManager}}]
          answer_contains: [Bolt, Gear]
        script:
          - [{tool: query, args: {manager: PartManager, fields: [name]}}]
          - [{text: "Bolt, Bearing and Gear."}]
```

Every mapping is validated (unknown keys are errors); a malformed file raises
`DatasetError` naming the file, the case and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chatomon.errors import ConfigurationError
from chatomon.providers.base import ToolCallEvent
from chatomon.schemas import TokenUsage

__all__ = [
    "DATASET_NAMES",
    "LEGACY_DATASETS",
    "PLANNED_ROLES",
    "CaseTurn",
    "ConfirmationExpectation",
    "Dataset",
    "DatasetError",
    "EvalCase",
    "PlannedExpectation",
    "ScriptStep",
    "ToolExpectation",
    "TurnExpectation",
    "UsageStep",
    "load_dataset",
    "load_dataset_file",
]

DATASET_NAMES = (
    "basic_queries",
    "demo_readiness",
    "edge_cases",
    "follow_ups",
    "large_schema",
    "multi_hop",
    "planned_orchestration",
)
"""The packaged datasets, in the reference's order."""

LEGACY_DATASETS = DATASET_NAMES[:-1]
"""The datasets a default run selects: every one but planned_orchestration."""

PLANNED_ROLES = (
    "planner",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
"""The roles a planned case may script."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolExpectation(_Strict):
    """A tool call the turn must make; `args` is a subset the call's arguments must hold."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ConfirmationExpectation(_Strict):
    """A mutation that must ask for confirmation, and how the case answers it."""

    mutation: str = Field(min_length=1)
    decision: Literal["approve", "reject"]


class TurnExpectation(_Strict):
    """What one turn must (and must not) do.

    Attributes:
        tools: Calls the turn must make (name and an argument subset each).
        ordered: Whether `tools` must happen in this order.
        forbidden_tools: Tool names the turn must not call.
        results_contain: Terms some tool result of the turn must hold (case-insensitive).
        results_exclude: Terms no tool result of the turn may hold.
        answer_contains: Terms the answer must hold (case-insensitive).
        answer_excludes: Terms the answer must not hold.
        confirmations: The mutations that must ask for confirmation, in order, with the
            decision the run gives each.
        no_tools: The turn must call no tool at all.
        refusal: The answer must decline (a refusal, or an orbital blocked the turn).
    """

    tools: tuple[ToolExpectation, ...] = ()
    ordered: bool = False
    forbidden_tools: tuple[str, ...] = ()
    results_contain: tuple[str, ...] = ()
    results_exclude: tuple[str, ...] = ()
    answer_contains: tuple[str, ...] = ()
    answer_excludes: tuple[str, ...] = ()
    confirmations: tuple[ConfirmationExpectation, ...] = ()
    no_tools: bool = False
    refusal: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> TurnExpectation:
        if self.no_tools and (self.tools or self.confirmations):
            raise ValueError("no_tools contradicts expected tools or confirmations")
        return self


class UsageStep(_Strict):
    """Token usage reported at the end of a scripted completion."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ScriptStep(_Strict):
    """One step of a scripted completion: a text chunk, a tool call, or the usage."""

    text: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    usage: UsageStep | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptStep:
        kinds = [k for k in ("text", "tool", "usage") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("a script step holds exactly one of text, tool or usage")
        if self.args is not None and self.tool is None:
            raise ValueError("args belong to a tool step")
        return self

    def to_step(self) -> str | ToolCallEvent | TokenUsage:
        """The ScriptedProvider step (chatomon.providers.testing)."""
        if self.text is not None:
            return self.text
        if self.tool is not None:
            # No id: the provider numbers its calls call-1, call-2, ... as it plays them.
            return ToolCallEvent(id="", name=self.tool, args=dict(self.args or {}))
        assert self.usage is not None
        return TokenUsage(
            input_tokens=self.usage.input_tokens, output_tokens=self.usage.output_tokens
        )


Completion = tuple[ScriptStep, ...]


def _steps(completions: tuple[Completion, ...]) -> list[list[Any]]:
    return [[step.to_step() for step in completion] for completion in completions]


class CaseTurn(_Strict):
    """One user turn of a case: the message, its expectations, and its script.

    The script is the deterministic provider's completions for this turn, in order,
    including those after a confirmation was answered.
    """

    user: str = Field(min_length=1)
    expect: TurnExpectation = Field(default_factory=TurnExpectation)
    script: tuple[Completion, ...] | None = None

    def completions(self) -> list[list[Any]]:
        """The script as ScriptedProvider completions (empty without a script)."""
        return _steps(self.script or ())


class PlannedExpectation(_Strict):
    """A planned case: each role's scripted completions and the expected outcome.

    Attributes:
        role_scripts: Completions per role (planner, simple_executor, complex_executor,
            synthesizer, fallback_executor), played by one ScriptedProvider per role.
        coverage: The `done` event's coverage status the turn must end with.
        terminal_reason: The reason the turn (its `error` code) or an unresolved task
            (in the coverage) must end with: invalid_plan, provider_failed, ...
    """

    role_scripts: dict[str, tuple[Completion, ...]]
    coverage: Literal["complete", "partial"] | None = None
    terminal_reason: str | None = None

    @model_validator(mode="after")
    def _known_roles(self) -> PlannedExpectation:
        unknown = sorted(set(self.role_scripts) - set(PLANNED_ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; roles are {list(PLANNED_ROLES)}")
        return self

    def completions(self, role: str) -> list[list[Any]]:
        """The role's script as ScriptedProvider completions (empty when unscripted)."""
        return _steps(self.role_scripts.get(role, ()))


class EvalCase(_Strict):
    """One eval case: a conversation, its expectations and scripts.

    Attributes:
        name: Unique in its dataset (lower-case words joined by underscores).
        description: What the case checks.
        tier: 1 for what every model should do; 2 for harder cases (recoveries from
            tool errors, long chains, several turns); `--tier` selects one.
        tags: Categories (read, aggregate, multi_hop, follow_up, no_tool, refusal,
            write, ...); `--tag` selects by them.
        fixture: The built-in fixture it runs on ("toy", "large"), or None for a
            user's dataset run against their own managers.
        turns: The user turns, in order, in one conversation.
        planned: For planned cases: the role scripts and the expected outcome.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(min_length=1)
    tier: int = Field(default=1, ge=1)
    tags: tuple[str, ...] = ()
    fixture: Literal["toy", "large"] | None = None
    turns: tuple[CaseTurn, ...] = Field(min_length=1)
    planned: PlannedExpectation | None = None

    @property
    def scripted(self) -> bool:
        """Whether every turn carries a script (a deterministic run is possible)."""
        return all(turn.script is not None for turn in self.turns)

    @property
    def writes(self) -> bool:
        """Whether a turn expects a mutation (a confirmation or a mutate call)."""
        return any(
            turn.expect.confirmations or any(t.name == "mutate" for t in turn.expect.tools)
            for turn in self.turns
        )

    def completions(self) -> list[list[Any]]:
        """Every turn's completions in order: one provider plays the whole case."""
        return [completion for turn in self.turns for completion in turn.completions()]


class Dataset(BaseModel):
    """A loaded dataset: its cases and where it came from."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    description: str
    cases: tuple[EvalCase, ...]
    path: Path | None = None

    def case(self, name: str) -> EvalCase:
        """The case called `name` (KeyError when there is none)."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)


class DatasetError(ConfigurationError):
    """A dataset file that does not load; the message names the file, case and field."""


class _DatasetFile(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(min_length=1)
    cases: tuple[dict[str, Any], ...] = Field(min_length=1)


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(case)"


def _error(file: str, case: str | None, error: ValidationError) -> DatasetError:
    first = error.errors(include_url=False)[0]
    where = f"case {case!r}: " if case is not None else ""
    field = _location(first["loc"])
    message = first["msg"].lower() if first["type"] == "missing" else first["msg"]
    return DatasetError(f"{file}: {where}{field}: {message}", field=field)


def _parse(text: str, file: str, path: Path | None) -> Dataset:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DatasetError(f"{file}: not valid YAML: {error}") from None
    if not isinstance(raw, Mapping):
        raise DatasetError(f"{file}: a dataset is a mapping with name, description and cases")
    try:
        head = _DatasetFile.model_validate(raw)
    except ValidationError as error:
        raise _error(file, None, error) from None
    cases: list[EvalCase] = []
    for index, item in enumerate(head.cases):
        label = item.get("name") if isinstance(item.get("name"), str) else f"#{index}"
        try:
            cases.append(EvalCase.model_validate(item))
        except ValidationError as error:
            raise _error(file, str(label), error) from None
    names = [case.name for case in cases]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise DatasetError(f"{file}: case {repeated[0]!r}: name: used by more than one case")
    return Dataset(name=head.name, description=head.description, cases=tuple(cases), path=path)


def load_dataset_file(path: str | Path) -> Dataset:
    """Load and validate a dataset YAML file.

    Raises:
        DatasetError: The file cannot be read, is not YAML, or does not validate.
    """
    location = Path(path)
    try:
        text = location.read_text(encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"{location.name}: cannot be read: {error.strerror}") from None
    return _parse(text, location.name, location)


def load_dataset(name: str) -> Dataset:
    """Load one of the packaged datasets (`DATASET_NAMES`).

    Raises:
        DatasetError: For an unknown name or a packaged file that does not validate.
    """
    if name not in DATASET_NAMES:
        raise DatasetError(
            f"there is no packaged dataset {name!r}",
            field="dataset",
            value=name,
            allowed=DATASET_NAMES,
        )
    source = resources.files("chatomon.evals").joinpath("datasets", f"{name}.yaml")
    return _parse(source.read_text(encoding="utf-8"), f"{name}.yaml", None)
