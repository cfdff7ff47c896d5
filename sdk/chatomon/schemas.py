"""Data contracts shared by the engine, the orbitals and the connectors.

This module imports nothing from chatomon, so every other module can depend on it
without creating import cycles.

Every model is a frozen pydantic model. Verdicts are built with `Verdict.allow`,
`Verdict.block` and `Verdict.respond`; the decisions and reports are built by the engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Container, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_BLOCKED_GUIDANCE",
    "DEFAULT_BLOCKED_PLACEHOLDER",
    "DEFAULT_REFUSAL",
    "CaptureContent",
    "ErrorPolicy",
    "FinalAction",
    "InputDecision",
    "Message",
    "NucleusStep",
    "OrbitalContext",
    "OrbitalResult",
    "OutputAttempt",
    "OutputDecision",
    "OutputDecisionKind",
    "PlannedCoverage",
    "PlannedEvidence",
    "PlannedTaskReport",
    "PlannedTaskStatus",
    "PlannedTurnReport",
    "PlannedUnresolved",
    "Side",
    "TokenUsage",
    "TurnPause",
    "TurnReport",
    "Verdict",
    "VerdictAction",
]

Side = Literal["input", "output"]
"""Where an orbital runs: on the user's message ("input") or on the nucleus reply ("output")."""

VerdictAction = Literal["allow", "block", "respond"]
"""What an orbital decided about the text it checked."""

ErrorPolicy = Literal["block", "allow"]
"""What the engine does when an orbital fails or times out."""

CaptureContent = Literal["none", "hash", "full"]
"""How much message content chatomon records in turn reports; logs and traces carry labels only."""

FinalAction = Literal[
    "answered",
    "orbital_response",
    "blocked",
    "guided_refusal",
    "fallback_refusal",
    "aborted",
]
"""How a turn ended, as recorded in the TurnReport."""

OutputDecisionKind = Literal["accept", "replace", "regenerate"]
"""What the engine decided about a reply of the nucleus: accept sends it, replace sends
another text instead, regenerate asks the nucleus for a new one."""

DEFAULT_REFUSAL = "I'm sorry, I can't help with that."
"""Reply used when a message is blocked without a specific reply."""

DEFAULT_BLOCKED_PLACEHOLDER = "[message removed by chatomon]"
"""Text that replaces a blocked user message in the conversation history."""

DEFAULT_BLOCKED_GUIDANCE = (
    "The user's last message is withheld from you and a placeholder stands in its place. "
    "Do not mention the placeholder or that a message was removed: reply as the guidance says."
)
"""Guidance the nucleus receives first when it writes the refusal of a blocked message.

The nucleus is then called with the placeholder in place of the message. A model that is
not told what the placeholder is can answer about it instead of following the orbital's
guidance.
"""


def _notebook(module: str) -> Any:
    # importlib, not an import statement: this module imports nothing from chatomon, and
    # the notebook renderers load only when an object is first displayed.
    return importlib.import_module(f"chatomon.notebook.{module}")


class _RichDisplay:
    """Jupyter display drawn by `chatomon.notebook.display` (also `_rich_display.RichDisplay`)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return str(_notebook("display").render_html(self))

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> dict[str, str]:
        return dict(_notebook("display").render_mimebundle(self, include, exclude))


class Message(BaseModel):
    """One message of the conversation history."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: Literal["user", "assistant"]
    """Who wrote the message."""
    content: str
    """The message text."""


class Verdict(_RichDisplay, BaseModel):
    """The result of an orbital's check.

    Build verdicts with `allow`, `block` and `respond` rather than the constructor.

    Examples:
        >>> from chatomon import Verdict
        >>> ok = Verdict.allow(guidance="The user sounds frustrated: be empathetic.")
        >>> refusal = Verdict.block(reply="I can only help with parcel tracking.")
        >>> rewrite = Verdict.block(guidance="Do not mention competitors.")
        >>> faq = Verdict.respond("We are open Monday to Friday, 9 to 18.")
        >>> assert ok.action == "allow"
        >>> assert refusal.reply and rewrite.guidance and faq.reply
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    action: VerdictAction
    """"allow", "block" or "respond"."""
    reply: str | None = None
    """Text shown to the user (block with a reply, or respond)."""
    guidance: str | None = None
    """Instruction for the nucleus (allow on input, or block)."""
    reason: str | None = None
    """Short label for the audit report. Must never contain user text."""
    escalate: bool = False
    """Whether the conversation needs a human."""
    annotations: Any = None
    """Data for later orbitals. Treated as content by capture_content."""

    @model_validator(mode="after")
    def _check_consistency(self) -> Verdict:
        if self.reply is not None and not self.reply:
            raise ValueError("a verdict's reply must not be empty; omit it instead")
        if self.guidance is not None and not self.guidance:
            raise ValueError("a verdict's guidance must not be empty; omit it instead")
        if self.action == "allow" and self.reply is not None:
            raise ValueError("an allow verdict carries no reply: use block(reply=...) or respond()")
        if self.action == "respond":
            if self.reply is None:
                raise ValueError("a respond verdict needs the text to send")
            if self.guidance is not None:
                raise ValueError("a respond verdict carries no guidance: the text is final")
        if self.action == "block" and self.reply is not None and self.guidance is not None:
            raise ValueError(
                "a block verdict takes a reply (sent as is) or guidance (the nucleus writes "
                "the answer), not both"
            )
        return self

    @classmethod
    def allow(
        cls, guidance: str | None = None, *, reason: str | None = None, annotations: Any = None
    ) -> Verdict:
        """Let the text through.

        Args:
            guidance: On the input side, an instruction the nucleus follows for this
                turn. Ignored (with a warning) on the output side.
            reason: Short label for the audit report.
            annotations: Data for later orbitals.

        Returns:
            An `allow` verdict.
        """
        return cls(action="allow", guidance=guidance, reason=reason, annotations=annotations)

    @classmethod
    def block(
        cls,
        reply: str | None = None,
        *,
        guidance: str | None = None,
        reason: str | None = None,
        escalate: bool = False,
        annotations: Any = None,
    ) -> Verdict:
        """Stop the text.

        With `reply`, the user receives it. With `guidance`, the nucleus writes the
        answer following it (on the input side without seeing the blocked message;
        on the output side by regenerating its reply). With neither, the atom's
        refusal is used.

        Args:
            reply: Text shown to the user.
            guidance: Instruction for the nucleus.
            reason: Short label for the audit report.
            escalate: Whether the conversation needs a human.
            annotations: Data for later orbitals.

        Returns:
            A `block` verdict.
        """
        return cls(
            action="block",
            reply=reply,
            guidance=guidance,
            reason=reason,
            escalate=escalate,
            annotations=annotations,
        )

    @classmethod
    def respond(
        cls,
        text: str,
        *,
        reason: str | None = None,
        escalate: bool = False,
        annotations: Any = None,
    ) -> Verdict:
        """Answer the user directly instead of the nucleus.

        Args:
            text: The reply shown to the user.
            reason: Short label for the audit report.
            escalate: Whether the conversation needs a human.
            annotations: Data for later orbitals.

        Returns:
            A `respond` verdict.
        """
        return cls(
            action="respond",
            reply=text,
            reason=reason,
            escalate=escalate,
            annotations=annotations,
        )


class OrbitalContext(BaseModel):
    """What an orbital sees when it checks a message."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    side: Side
    """Whether the text is the user's message ("input") or the nucleus reply ("output")."""
    message: str
    """The text under check."""
    history: tuple[Message, ...] = ()
    """Earlier messages, with blocked user messages already replaced by the placeholder.
    On the output side it includes the current user message."""
    annotations: Mapping[str, Any]
    """Annotations of the orbitals that already ran in this turn, by orbital name.

    The values are the objects the producing orbitals returned, shared with later
    orbitals and the report: treat them as read-only."""
    attempt: int = 1
    """On the output side, the attempt number (1 is the first reply)."""
    turn_id: str
    """Identifier of the turn."""
    conversation_id: str | None = None
    """Identifier of the conversation, when the framework provides one."""
    tool_results: tuple[Any, ...] = ()
    """On the output side, the results of the tools the nucleus ran in this turn so far
    (JSON-ready values, in order), for checks such as GroundingGuard; () on the input side
    and for a nucleus that runs no tools."""


class InputDecision(_RichDisplay, BaseModel):
    """What the connector must do after the input chain."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: Literal["proceed", "reply", "guided_refusal"]
    """proceed: call the nucleus with the message; reply: send `reply` without calling
    the nucleus; guided_refusal: call the nucleus without the message, with guidance only."""
    guidance: tuple[str, ...] = ()
    """Guidance to add to this turn's model call. In a guided_refusal it is the atom's
    blocked_guidance, when it has one, followed by the guidance of the orbital that blocked."""
    reply: str | None = None
    """The reply to send when kind is reply."""
    redact_user_message: bool = False
    """Whether the user message must be replaced by the placeholder in the history."""

    @model_validator(mode="after")
    def _check_payload(self) -> InputDecision:
        if self.kind == "reply":
            if self.reply is None:
                raise ValueError("an input decision of kind 'reply' needs the reply to send")
            if self.guidance:
                raise ValueError("an input decision of kind 'reply' carries no guidance")
        elif self.reply is not None:
            raise ValueError(f"an input decision of kind {self.kind!r} carries no reply")
        if self.kind == "proceed" and self.redact_user_message:
            raise ValueError("a proceeding turn keeps the user message: nothing to redact")
        if self.kind == "guided_refusal":
            if not self.guidance:
                raise ValueError("a guided_refusal needs the guidance the nucleus follows")
            if not self.redact_user_message:
                raise ValueError("a guided_refusal always redacts the user message")
        return self


class OutputDecision(_RichDisplay, BaseModel):
    """What the connector must do after the output chain."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: OutputDecisionKind
    """accept: send the reply; replace: send `text` instead; regenerate: call the nucleus
    again with `guidance`, then run the output chain again."""
    text: str | None = None
    """The replacement reply when kind is replace."""
    guidance: tuple[str, ...] = ()
    """Guidance for the regeneration when kind is regenerate."""

    @model_validator(mode="after")
    def _check_payload(self) -> OutputDecision:
        if (self.kind == "replace") != (self.text is not None):
            raise ValueError("an output decision carries text exactly when its kind is 'replace'")
        if (self.kind == "regenerate") != bool(self.guidance):
            raise ValueError(
                "an output decision carries guidance exactly when its kind is 'regenerate'"
            )
        return self


class OrbitalResult(_RichDisplay, BaseModel):
    """Audit record of one orbital execution."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    """Orbital name."""
    side: Side
    """Side it ran on."""
    kind: str
    """Orbital class name."""
    fingerprint: str
    """Hash of the orbital's configuration at build time."""
    action: VerdictAction
    """Action of the verdict that was applied (after on_error)."""
    reason: str | None = None
    """Verdict reason label."""
    has_guidance: bool = False
    """Whether the verdict carried guidance."""
    escalate: bool = False
    """Whether the verdict asked for a human."""
    attempt: int = 1
    """Attempt number (output side)."""
    duration_ms: float
    """Execution time in milliseconds."""
    error_type: str | None = None
    """Exception class name when the orbital failed or timed out."""
    error_message: str | None = None
    """Exception message; only with capture_content="full"."""
    error_policy: ErrorPolicy | None = None
    """The on_error policy applied when the orbital failed."""
    guidance: str | None = None
    """Guidance text, according to capture_content."""
    reply: str | None = None
    """Reply text, according to capture_content."""
    annotations: str | None = None
    """Annotations as JSON, according to capture_content."""


class TokenUsage(BaseModel):
    """Tokens a model read and wrote (chatomon extension); zero when the vendor does not say.

    Usages add up: `TokenUsage(input_tokens=3) + TokenUsage(output_tokens=2)`.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class OutputAttempt(BaseModel):
    """Audit record of one reply of the nucleus and of the output chain that checked it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    nucleus_reply: str | None = None
    """The reply the nucleus wrote, according to capture_content. It is what the nucleus
    wrote whatever the decision: a text that took its place is in the result of the
    orbital that gave it and, when it ended the turn, in final_reply."""
    results: tuple[OrbitalResult, ...]
    """Results of the output chain on this reply, in order."""
    decision: OutputDecisionKind | None = None
    """What the engine decided about the reply; None when the turn was aborted while the
    output chain was running."""
    not_run: tuple[str, ...] = ()
    """Names of the output orbitals that did not run on this reply because an earlier
    verdict decided it (chatomon extension; members of a parallel group after the decisive
    one are cancelled and listed here)."""


class NucleusStep(BaseModel):
    """One timed step of the nucleus: a provider round or a tool call (chatomon extension).

    Offsets count the turn's active time (waits for a confirmation excluded), so the steps
    of a suspended and resumed turn lie on one timeline.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: Literal["provider_round", "tool_call"]
    """What ran."""
    name: str
    """The provider's class name, or the tool's name."""
    started_ms: float
    """Start, in milliseconds from the start of the turn."""
    duration_ms: float
    """How long it took, in milliseconds."""
    status: str | None = None
    """The tool result's status ("ok", "error", "executed", "confirmation_required", ...)."""
    model: str | None = None
    """The model a provider round asked, when its provider names one."""
    usage: TokenUsage | None = None
    """The tokens of a provider round; None for a tool call, or when not reported."""


class TurnPause(BaseModel):
    """The turn waited for a decision on a mutation (chatomon extension)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    mutation: str
    """The mutation that waited."""
    approver: Literal["client", "staff"]
    """Who was to decide: the end user or a staff member."""
    waited_seconds: float
    """From the request for a decision to the decision."""
    outcome: Literal["approved", "rejected", "expired", "cancelled"]
    """How it was decided; "expired" when nobody decided in time."""


PlannedTaskStatus = Literal["pending", "running", "resolved", "blocked", "budget_exhausted"]
"""The status of one task of a planned turn (the reference's TaskStatus)."""


class PlannedEvidence(BaseModel):
    """One evidence record a planned task gathered or reused (chatomon extension)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    """The evidence id, unique in the turn."""
    kind: Literal["schema", "path", "query", "calculation"]
    """What the evidence is."""
    tool: str | None = None
    """The tool whose result it is; None for a calculation."""
    call_id: str | None = None
    """The tool call that produced it (its `tool_call` / `tool_result` id)."""
    reused: bool = False
    """True when an identical call of the turn already held it (no second call ran)."""
    summary: str = ""
    """A label of the payload without content ("3 rows", "sum = 12.5" for calculations)."""


class PlannedTaskReport(BaseModel):
    """One task of a planned turn: its place in the plan, how it ran and what it found."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    """The task id of the plan (tool events of the task carry it as `task_id`)."""
    question: str | None = None
    """The task's sub-question, according to capture_content (it restates the user's)."""
    depends_on: tuple[str, ...] = ()
    """The root tasks whose evidence this task needs."""
    parent_id: str | None = None
    """The root task that added this one as a dynamic child."""
    role: str | None = None
    """The executor role that ran it ("simple_executor", ...); never a profile."""
    manager: str | None = None
    """The manager the resolver chose first for it, when any."""
    status: PlannedTaskStatus = "pending"
    """How it ended."""
    reason: str | None = None
    """The stable terminal reason of an unresolved task ("dependency_blocked", ...)."""
    rounds: int = 0
    """Provider requests it made."""
    tool_call_ids: tuple[str, ...] = ()
    """The ids of its tool calls, in order."""
    evidence: tuple[PlannedEvidence, ...] = ()
    """The evidence it linked."""
    duration_ms: float = 0.0
    """From its start to its end."""


class PlannedUnresolved(BaseModel):
    """A task a planned answer could not cover, and why (a stable reason)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    task_id: str
    reason: str


class PlannedCoverage(BaseModel):
    """How much of a planned turn's plan the answer covers."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: Literal["complete", "partial", "none"]
    """complete: every task resolved; partial: some; none: no grounded answer."""
    resolved: int
    """Resolved tasks."""
    total: int
    """All tasks of the plan (dynamic children included)."""
    unresolved: tuple[PlannedUnresolved, ...] = ()
    """The tasks left unresolved, with their reasons."""


class PlannedTurnReport(_RichDisplay, BaseModel):
    """What a planned turn did: its plan, each task, the budget and the coverage.

    A chatomon extension of the TurnReport (`TurnReport.planned`); None for tool-loop turns.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    intent: Literal["read", "mutation"]
    """read: the plan ran; mutation: the turn went on through the tool loop."""
    tasks: tuple[PlannedTaskReport, ...] = ()
    """Every task, roots first in plan order, then dynamic children."""
    roles_used: tuple[str, ...] = ()
    """The roles that made provider requests, in first-use order."""
    planner_attempts: int = 0
    """Planner requests: 1, 2 with the correction, 3 with the fallback."""
    rounds_used: int = 0
    """Provider requests charged to the turn's global round budget."""
    rounds_limit: int = 0
    """The global round budget."""
    prompt_chars: int = 0
    """Characters of every prompt the turn sent (planner, executors, synthesizer)."""
    coverage: PlannedCoverage | None = None
    """Coverage of the answer; None for a mutation plan."""
    terminal_reason: str | None = None
    """The stable reason the turn ended without a grounded answer, or left tasks open."""


class TurnReport(_RichDisplay, BaseModel):
    """Audit record of one conversation turn, delivered to on_turn."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    turn_id: str
    """Identifier of the turn."""
    conversation_id: str | None
    """Identifier of the conversation, when available."""
    atom_name: str
    """Name of the atom."""
    started_at: datetime
    """When the turn started (UTC)."""
    duration_ms: float
    """Time from the start of the turn to its report, in milliseconds."""
    final_action: FinalAction
    """How the turn ended."""
    escalated: bool
    """Whether any orbital asked for a human."""
    input: tuple[OrbitalResult, ...]
    """Results of the input chain."""
    output: tuple[OutputAttempt, ...]
    """The attempts of the nucleus, in order: one per reply the output chain checked."""
    user_message: str | None = None
    """The user message, according to capture_content."""
    final_reply: str | None = None
    """The reply sent to the user, according to capture_content."""
    error_type: str | None = None
    """Exception class name when the turn was aborted."""
    error_message: str | None = None
    """Exception message of an aborted turn; only with capture_content="full"."""
    input_not_run: tuple[str, ...] = Field(default=())
    """Names of the input orbitals that did not run because an earlier verdict decided the
    turn (chatomon extension)."""
    capture_content: CaptureContent = "none"
    """The capture level the report was written with (chatomon extension): tells a reader
    whether an empty text field means "not captured" or a hash."""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    """Tokens used by every model call of the turn, summed (chatomon extension)."""
    steps: tuple[NucleusStep, ...] = Field(default=())
    """The nucleus' provider rounds and tool calls, timed (chatomon extension)."""
    pauses: tuple[TurnPause, ...] = Field(default=())
    """Waits for a mutation decision, in order (chatomon extension)."""
    planned: PlannedTurnReport | None = None
    """The plan of a planned turn, its tasks and coverage (chatomon extension)."""

    def to_dataframe(self) -> pd.DataFrame:
        """This report as a pandas DataFrame, one row per orbital run.

        Raises:
            OptionalDependencyError: When pandas is not installed
                (``pip install "chatomon[pandas]"``).
        """
        frame: pd.DataFrame = _notebook("dataframes").report_to_dataframe(self)
        return frame
