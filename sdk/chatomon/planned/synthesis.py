"""The grounded answer of a planned read, streamed as the synthesizer writes it.

Only eligible evidence is sent: records of kind query, calculation or path that some task
resolved (schema evidence only guided the executors). The synthesizer's text streams as
`SynthesisChunk`s; when it fails (its provider raises, times out, writes no text or
calls a tool) the fallback_executor's provider writes the answer instead, once.
Its first chunk carries `reset=True` when the synthesizer's text was already shown, so
that a surface replaces that text rather than appending to it. When the fallback fails
too, `SynthesisFailedError` ends the turn with `synthesis_failed`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from chatomon.errors import ProviderError
from chatomon.planned.prompts import synthesis_messages
from chatomon.planned.provider_calls import (
    InvalidProviderRoundError,
    ProviderRoundResult,
    prompt_chars,
    role_provider,
    stream_provider_round,
)
from chatomon.providers.base import TokenUsage

if TYPE_CHECKING:
    from chatomon.planned.budget import RoundBudget
    from chatomon.planned.config import PlannedChatSettings
    from chatomon.planned.evidence import EvidenceRecord
    from chatomon.schemas import PlannedCoverage

__all__ = [
    "ELIGIBLE_EVIDENCE_KINDS",
    "SYNTHESIS_ROLES",
    "SynthesisChunk",
    "SynthesisFailedError",
    "SynthesisResult",
    "eligible_evidence",
    "iter_synthesis",
    "synthesize_answer",
]

logger = logging.getLogger(__name__)

ELIGIBLE_EVIDENCE_KINDS = frozenset({"query", "calculation", "path"})
"""The evidence kinds an answer may rest on."""
SYNTHESIS_ROLES = ("synthesizer", "fallback_executor")
"""Who writes the answer: the synthesizer, then once the fallback."""


class SynthesisFailedError(ValueError):
    """Stable terminal failure when no grounded synthesis is available.

    Attributes:
        usage: The usage of the synthesis requests that reported one.
        prompt_chars: Characters the synthesis requests sent.
    """

    public_reason: ClassVar[str] = "synthesis_failed"

    def __init__(
        self, message: str, *, usage: TokenUsage | None = None, prompt_chars: int = 0
    ) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else TokenUsage()
        self.prompt_chars = prompt_chars


@dataclass(frozen=True, slots=True)
class SynthesisChunk:
    """A fragment of the answer as it is written.

    Attributes:
        text: The fragment.
        reset: True on the fallback's first fragment when earlier text was shown: the
            answer starts over with this fragment.
    """

    text: str
    reset: bool = False


@dataclass(frozen=True)
class SynthesisResult:
    """One grounded answer and its eligible evidence references.

    Attributes:
        text: The whole answer.
        evidence_ids: The ids of the evidence records sent to the writer, in order.
        usage: The usage of every synthesis request that reported one.
        role: The role that wrote the answer ("synthesizer" or "fallback_executor").
        prompt_chars: Characters every synthesis request sent.
    """

    text: str
    evidence_ids: tuple[str, ...]
    usage: TokenUsage
    role: str
    prompt_chars: int


def eligible_evidence(records: Sequence[EvidenceRecord]) -> tuple[EvidenceRecord, ...]:
    """The records an answer may rest on: eligible kinds, each record once, in order."""
    seen: set[str] = set()
    kept: list[EvidenceRecord] = []
    for record in records:
        if record.kind in ELIGIBLE_EVIDENCE_KINDS and record.id not in seen:
            seen.add(record.id)
            kept.append(record)
    return tuple(kept)


def _prompt_form(record: EvidenceRecord) -> dict[str, Any]:
    # Only what the writer needs: provenance and call identities stay in the turn.
    data = record.to_json()
    return {"id": record.id, "kind": record.kind, "data": data["payload"]}


async def iter_synthesis(
    user_text: str,
    resolved_evidence: Sequence[EvidenceRecord],
    coverage: PlannedCoverage,
    settings: PlannedChatSettings,
    budget: RoundBudget,
    *,
    providers: Mapping[str, Any],
    timeout_seconds: float | None,
) -> AsyncGenerator[SynthesisChunk | SynthesisResult, None]:
    """Stream the answer's chunks, then its `SynthesisResult`.

    Args:
        user_text: The user's message.
        resolved_evidence: The evidence of the resolved tasks.
        coverage: What the plan covers (a partial answer says so).
        settings: The planned settings (`synthesis_timeout_seconds` caps each request
            when `timeout_seconds` is None).
        budget: The turn's round budget, charged before each request.
        providers: The provider of each role ("synthesizer", "fallback_executor").
        timeout_seconds: Cap of each request.

    Raises:
        SynthesisFailedError: No eligible evidence, or both writers failed.
        RoundBudgetExhausted: The global round budget ran out before a request.
    """
    records = eligible_evidence(resolved_evidence)
    if not records:
        raise SynthesisFailedError("no eligible evidence to ground an answer on")
    evidence_ids = tuple(record.id for record in records)
    messages = synthesis_messages(user_text, [_prompt_form(r) for r in records], coverage)
    timeout = timeout_seconds if timeout_seconds is not None else settings.synthesis_timeout_seconds
    usage, chars, shown = TokenUsage(), 0, False
    failure: BaseException | None = None
    for role in SYNTHESIS_ROLES:
        budget.consume_global(role)
        reset = shown
        stream = stream_provider_round(role_provider(providers, role), messages, (), timeout)
        try:
            async with aclosing(stream):
                async for item in stream:
                    if isinstance(item, ProviderRoundResult):
                        usage, chars = usage + item.usage, chars + item.prompt_chars
                        yield SynthesisResult(item.text or "", evidence_ids, usage, role, chars)
                        return
                    yield SynthesisChunk(item, reset=reset)
                    reset, shown = False, True
        except Exception as error:  # whatever the writer's provider raised
            chars += prompt_chars(messages, ())  # the request was sent all the same
            # A custom provider may raise anything; what is not a known provider failure
            # keeps its traceback in the log, so that a bug does not hide behind the fallback.
            known = isinstance(error, ProviderError | TimeoutError | InvalidProviderRoundError)
            logger.warning(
                "planned synthesis by the %s failed: %s",
                role,
                type(error).__name__,
                exc_info=not known,
            )
            failure = error
    raise SynthesisFailedError(
        "the synthesizer and the fallback wrote no answer", usage=usage, prompt_chars=chars
    ) from failure


async def synthesize_answer(
    user_text: str,
    resolved_evidence: Sequence[EvidenceRecord],
    coverage: PlannedCoverage,
    settings: PlannedChatSettings,
    budget: RoundBudget,
    *,
    providers: Mapping[str, Any],
    timeout_seconds: float | None,
) -> SynthesisResult:
    """Return one grounded answer, then use the fallback profile exactly once.

    The buffered form of `iter_synthesis` (same arguments and errors).
    """
    items = iter_synthesis(
        user_text,
        resolved_evidence,
        coverage,
        settings,
        budget,
        providers=providers,
        timeout_seconds=timeout_seconds,
    )
    async with aclosing(items):
        async for item in items:
            if isinstance(item, SynthesisResult):
                return item
    raise SynthesisFailedError("the synthesis ended without an answer")  # pragma: no cover
