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
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chatomon.errors import ConfigurationError
from chatomon.evals.expectations import (
    PLANNED_ROLES,
    Completion,
    ConfirmationExpectation,
    PlannedExpectation,
    ScriptStep,
    Strict,
    ToolExpectation,
    TurnExpectation,
    UsageStep,
    script_steps,
)

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


class CaseTurn(Strict):
    """One user turn of a case: the message, its expectations, and its script.

    The script is the deterministic provider's completions for this turn, in order,
    including those after a confirmation was answered.
    """

    user: str = Field(min_length=1)
    expect: TurnExpectation = Field(default_factory=TurnExpectation)
    script: tuple[Completion, ...] | None = None

    def completions(self) -> list[list[Any]]:
        """The script as ScriptedProvider completions (empty without a script)."""
        return script_steps(self.script or ())


class EvalCase(Strict):
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


class _DatasetFile(Strict):
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
