"""The demo's own orbital: a request for a person is answered, and escalated to staff.

A message asking for a human ("talk to a human", "speak to a person", a complaint) gets
a short answer saying someone will follow up, and its turn is escalated, so it appears
in the console's escalations for staff to acknowledge and resolve. The model never sees
it: a person, not the assistant, should answer.
"""

from __future__ import annotations

from typing import Unpack

from chatomon.orbitals.base import Orbital, OrbitalOptions
from chatomon.orbitals.lexical import WordMatcher
from chatomon.schemas import OrbitalContext, Verdict

__all__ = ["HANDOFF_PHRASES", "HANDOFF_REPLY", "HumanHandoff"]

HANDOFF_PHRASES = (
    "talk to a human", "speak to a human", "talk to a person", "speak to a person",
    "real person", "human agent", "talk to someone", "speak to someone", "complaint",
)  # fmt: skip
"""Words that ask for a person, matched as whole words ignoring case."""

HANDOFF_REPLY = (
    "I have passed this on to a member of staff; someone will get back to you here soon."
)
"""What the asker reads while staff take over."""


class HumanHandoff(Orbital):
    """Escalates a message that asks for a person, answering it with `HANDOFF_REPLY`.

    The verdict is `Verdict.respond(HANDOFF_REPLY, escalate=True)` with reason
    "human_requested"; any other message is allowed.

    Examples:
        >>> guard = HumanHandoff()
        >>> def ask(text):
        ...     ctx = OrbitalContext(side="input", message=text, annotations={}, turn_id="t")
        ...     return guard.check(ctx)
        >>> verdict = ask("Can I talk to a human about my order?")
        >>> verdict.action, verdict.escalate, verdict.reason
        ('respond', True, 'human_requested')
        >>> ask("Which parts are made of PEEK?").action
        'allow'
    """

    def __init__(self, **options: Unpack[OrbitalOptions]) -> None:
        super().__init__(**options)
        self.matcher = WordMatcher(HANDOFF_PHRASES, field="phrases")

    def check(self, ctx: OrbitalContext) -> Verdict:
        """Escalate a request for a person; allow the others."""
        if self.matcher.search(ctx.message):
            return Verdict.respond(HANDOFF_REPLY, reason="human_requested", escalate=True)
        return Verdict.allow()
