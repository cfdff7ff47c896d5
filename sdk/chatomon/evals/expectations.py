"""What an eval case expects of each turn, and the scripts deterministic providers play.

The models of a dataset's YAML below the case (chatomon.evals.cases): tool, confirmation
and turn expectations, script steps and completions, and a planned case's role scripts.
Every model is frozen and forbids unknown keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chatomon.providers.base import ToolCallEvent
from chatomon.schemas import TokenUsage

__all__ = [
    "PLANNED_ROLES",
    "Completion",
    "ConfirmationExpectation",
    "PlannedExpectation",
    "ScriptStep",
    "Strict",
    "ToolExpectation",
    "TurnExpectation",
    "UsageStep",
    "script_steps",
]

PLANNED_ROLES = (
    "planner",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
"""The roles a planned case may script."""


class Strict(BaseModel):
    """Base of the dataset models: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolExpectation(Strict):
    """A tool call the turn must make; `args` is a subset the call's arguments must hold."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ConfirmationExpectation(Strict):
    """A mutation that must ask for confirmation, and how the case answers it."""

    mutation: str = Field(min_length=1)
    decision: Literal["approve", "reject"]


class TurnExpectation(Strict):
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


class UsageStep(Strict):
    """Token usage reported at the end of a scripted completion."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ScriptStep(Strict):
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
"""One scripted completion: its steps in order."""


def script_steps(completions: tuple[Completion, ...]) -> list[list[Any]]:
    """Completions as ScriptedProvider steps (chatomon.providers.testing)."""
    return [[step.to_step() for step in completion] for completion in completions]


class PlannedExpectation(Strict):
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
        return script_steps(self.role_scripts.get(role, ()))
