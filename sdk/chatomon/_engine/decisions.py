"""The chain rules: from the verdicts of a chain run to what the turn does next.

Input side: allow continues (its guidance joins the nucleus call); block with a reply or
with nothing answers without the nucleus ("blocked"); block with guidance lets the nucleus
write a refusal without seeing the message ("guided_refusal"); respond answers directly
("orbital_response"). Output side: allow accepts; respond and block with a reply replace
the reply ("orbital_response"); block with guidance regenerates while attempts remain;
block with nothing, or a rejection of the last allowed attempt, sends the refusal
("fallback_refusal").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chatomon._engine.chain import ChainRun
from chatomon.schemas import FinalAction, InputDecision, OutputDecision

__all__ = ["InputRuling", "OutputRuling", "decide_input", "decide_output"]

logger = logging.getLogger("chatomon")


@dataclass(frozen=True, slots=True)
class InputRuling:
    """The input decision and, when it already ends the turn, how."""

    decision: InputDecision
    final_action: FinalAction | None


@dataclass(frozen=True, slots=True)
class OutputRuling:
    """The output decision and, when it ends the turn with another text, how."""

    decision: OutputDecision
    final_action: FinalAction | None


def decide_input(run: ChainRun, *, refusal: str, blocked_guidance: str | None) -> InputRuling:
    """Apply the input chain rules to a finished chain run."""
    decisive = run.decisive
    if decisive is None:
        guidance = tuple(o.verdict.guidance for o in run.outcomes if o.verdict.guidance)
        return InputRuling(InputDecision(kind="proceed", guidance=guidance), None)
    verdict = decisive.verdict
    if verdict.action == "respond":
        assert verdict.reply is not None  # guaranteed by Verdict's validator
        return InputRuling(_reply(verdict.reply, redact=False), "orbital_response")
    if verdict.guidance is not None:
        guidance = (blocked_guidance, verdict.guidance) if blocked_guidance else (verdict.guidance,)
        decision = InputDecision(kind="guided_refusal", guidance=guidance, redact_user_message=True)
        return InputRuling(decision, None)
    return InputRuling(_reply(verdict.reply or refusal, redact=True), "blocked")


def _reply(text: str, *, redact: bool) -> InputDecision:
    return InputDecision(kind="reply", reply=text, redact_user_message=redact)


def decide_output(run: ChainRun, *, attempt: int, max_attempts: int, refusal: str) -> OutputRuling:
    """Apply the output chain rules to a finished chain run on reply number `attempt`."""
    for outcome in run.outcomes:
        if outcome.verdict.action == "allow" and outcome.verdict.guidance is not None:
            logger.warning(
                "orbital %s returned allow with guidance on the output side; guidance ignored",
                outcome.orbital.name,
            )
    decisive = run.decisive
    if decisive is None:
        return OutputRuling(OutputDecision(kind="accept"), None)
    verdict = decisive.verdict
    if verdict.reply is not None:  # respond, or block with a reply
        return OutputRuling(_replace(verdict.reply), "orbital_response")
    if verdict.guidance is not None and attempt < max_attempts:
        decision = OutputDecision(kind="regenerate", guidance=(verdict.guidance,))
        return OutputRuling(decision, None)
    return OutputRuling(_replace(refusal), "fallback_refusal")


def _replace(text: str) -> OutputDecision:
    return OutputDecision(kind="replace", text=text)
