"""Planning a read: the planner's request, one correction, one fallback, then `invalid_plan`.

```
planner  ──invalid──▶  planner + correction (the validator's detail)  ──invalid──▶
fallback_executor (the original request, afresh)  ──invalid──▶  InvalidPlanError
```

Every request is charged to the turn's global round budget before it is sent, so an
exhausted budget (`RoundBudgetExhausted`) stops planning and propagates, as provider
failures (`ProviderError`, `TimeoutError`) do: they are not the plan's fault, and a
second model would not mend them. A reply that is not a plan (prose, broken JSON, a
shape the validator refuses, an empty reply) is corrected, then handed to the fallback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from chatomon.planned.prompts import correction_message, planner_messages, replayed_plan
from chatomon.planned.provider_calls import (
    InvalidProviderRoundError,
    ProviderRoundResult,
    complete_provider_round,
    prompt_chars,
    role_provider,
)
from chatomon.planned.validation import PlanValidationError, validate_plan
from chatomon.providers.base import Message, TokenUsage
from chatomon.schemas import Message as HistoryMessage

if TYPE_CHECKING:
    from chatomon.planned.budget import RoundBudget
    from chatomon.planned.config import PlannedChatSettings
    from chatomon.planned.models import ValidatedPlan

__all__ = ["InvalidPlanError", "PlanningResult", "parse_plan_reply", "plan_request"]


class InvalidPlanError(ValueError):
    """Stable terminal failure for an unusable planner result.

    The message is the last private validation detail (for logs, never for a client).

    Attributes:
        usage: The usage of every planner request made.
        attempts: Requests made (3: planner, correction, fallback).
        prompt_chars: Characters those requests sent.
    """

    public_reason: ClassVar[str] = "invalid_plan"

    def __init__(
        self,
        detail: str,
        *,
        usage: TokenUsage | None = None,
        attempts: int = 0,
        prompt_chars: int = 0,
    ) -> None:
        super().__init__(detail)
        self.usage = usage if usage is not None else TokenUsage()
        self.attempts = attempts
        self.prompt_chars = prompt_chars


@dataclass(frozen=True)
class PlanningResult:
    """A validated plan and all known usage from its provider attempts.

    Attributes:
        plan: The validated plan (a read plan, or a mutation plan without tasks).
        usage: The usage of every planner request, the failed ones included.
        attempts: Requests made: 1, 2 with the correction, 3 with the fallback.
        prompt_chars: Characters every request sent.
    """

    plan: ValidatedPlan
    usage: TokenUsage
    attempts: int
    prompt_chars: int


@dataclass
class _Attempts:
    """What the planner's requests have cost so far."""

    usage: TokenUsage
    count: int = 0
    prompt_chars: int = 0

    def add(self, result: ProviderRoundResult) -> None:
        self.usage = self.usage + result.usage
        self.count += 1
        self.prompt_chars += result.prompt_chars


async def plan_request(
    user_text: str,
    messages: Sequence[Message | HistoryMessage],
    settings: PlannedChatSettings,
    budget: RoundBudget,
    catalog_summary: Sequence[str],
    *,
    providers: Mapping[str, Any],
    manager_lines: Sequence[str] = (),
    timeout_seconds: float | None = None,
) -> PlanningResult:
    """Request, correct once, then fall back once to a validated plan.

    Args:
        user_text: The user's message.
        messages: The conversation before it (provider or pipeline messages).
        settings: The planned settings (`request_timeout_seconds` caps each request
            when `timeout_seconds` is not given).
        budget: The turn's round budget; each request is charged before it is sent.
        catalog_summary: The manager catalog's summary lines.
        providers: The provider of each role ("planner", "fallback_executor").
        manager_lines: One compact line per chat-exposed manager.
        timeout_seconds: Cap of each request (what is left of the turn's deadline).

    Raises:
        InvalidPlanError: No valid plan after the correction and the fallback.
        RoundBudgetExhausted: The global round budget ran out before a request.
        ProviderError: A provider failed.
        TimeoutError: A request ran out of time.
    """
    timeout = timeout_seconds if timeout_seconds is not None else settings.request_timeout_seconds
    request = planner_messages(user_text, messages, catalog_summary, manager_lines)
    attempts = _Attempts(usage=TokenUsage())

    async def ask(role: str, history: Sequence[Message]) -> tuple[ValidatedPlan | None, str, str]:
        budget.consume_global(role)
        try:
            result = await complete_provider_round(
                role_provider(providers, role), history, (), timeout
            )
        except InvalidProviderRoundError as error:  # no text: nothing to validate
            attempts.count += 1  # a request was made: it counts, its usage is unknown
            attempts.prompt_chars += prompt_chars(history, ())
            return None, f"the reply held no plan ({error})", ""
        attempts.add(result)
        text = result.text or ""
        plan, detail = parse_plan_reply(text)
        return plan, detail, text

    plan, detail, text = await ask("planner", request)
    if plan is None:
        # The model sees its own reply and exactly what the validator refused in it.
        replayed = [replayed_plan(text)] if text.strip() else []
        correction = [*request, *replayed, correction_message(detail)]
        plan, detail, _ = await ask("planner", correction)
    if plan is None:
        # The fallback starts afresh: the failed attempts would only mislead it.
        plan, detail, _ = await ask("fallback_executor", request)
    if plan is None:
        raise InvalidPlanError(
            detail,
            usage=attempts.usage,
            attempts=attempts.count,
            prompt_chars=attempts.prompt_chars,
        )
    return PlanningResult(
        plan=plan,
        usage=attempts.usage,
        attempts=attempts.count,
        prompt_chars=attempts.prompt_chars,
    )


def parse_plan_reply(text: str) -> tuple[ValidatedPlan | None, str]:
    r"""The plan in a planner's reply, or None and the private detail of what is wrong.

    The reply is JSON, possibly inside one Markdown code fence (```json ... ```).

    Examples:
        >>> parse_plan_reply('```json\n{"intent": "mutation"}\n```')[0].intent
        'mutation'
        >>> parse_plan_reply("Sure, here is my plan.")[1]
        'the reply is not JSON (Expecting value at character 0)'
    """
    body = _unfenced(text)
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as error:
        return None, f"the reply is not JSON ({error.msg} at character {error.pos})"
    try:
        return validate_plan(payload), ""
    except PlanValidationError as error:
        return None, str(error)


def _unfenced(text: str) -> str:
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        # Drop the opening fence line (with its language tag) and the closing fence.
        first_line_end = body.find("\n")
        if first_line_end != -1:
            return body[first_line_end + 1 : -3].strip()
    return body
