"""The mutate tool: run an allowed mutation, or ask for its confirmation.

In order: the name must be in allowed_mutations (else mutation_not_allowed, suggesting
only allowed names, so unlisted mutations stay unknown to the model); the actor must be
authenticated (not_authenticated); the input must validate (invalid_input, per field).
A name in confirm_mutations or staff_approval_mutations then returns
`{"status": "confirmation_required", "mutation", "input", "preview", "approver"}` and
writes nothing: no argument of this tool can confirm, so the model never approves its own
write; the confirmation flow later runs it with `execute_mutation`. Any other allowed
name runs at once: `{"status": "executed", "mutation", "result"}`.

A write that would need a confirmation but whose preview changes nothing (the part is
already in the project, the cost already is that value; see
`chatomon.data.mutation_runs.unchanged_reason`) asks nobody and writes nothing: the
result is `{"status": "unchanged", "mutation", "input", "reason", "message"}`, an ordinary
tool result the model answers from ("... is already ...: nothing to change"), so a person
is never asked to approve a no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.chat.prompts import UNCHANGED_RESULT
from chatomon.chat.tools.context import ToolContext
from chatomon.data.actor import is_authenticated
from chatomon.data.errors import DataError, did_you_mean
from chatomon.data.mutation_runs import preview_mutation, run_mutation, unchanged_reason
from chatomon.data.mutations import validate_input
from chatomon.data.registration import ManagerRegistry

__all__ = ["mutate"]


def mutate(
    registry: ManagerRegistry, args: Mapping[str, Any], context: ToolContext
) -> dict[str, Any]:
    """Run or stage one mutation (see the module docstring for the order of checks)."""
    name = args.get("mutation")
    allowed = context.settings.allowed_mutations
    if not isinstance(name, str) or name not in allowed or name not in registry.mutations:
        shown = name if isinstance(name, str) else repr(name)
        hint = did_you_mean(shown, allowed, cutoff=0.75)
        raise DataError(
            f"mutation {shown!r} is not allowed{hint}" if allowed else "no mutation is allowed",
            code="mutation_not_allowed",
            allowed=[n for n in allowed if n in registry.mutations],
        )
    if not is_authenticated(context.actor):
        raise DataError("sign in to change data; ask the user to log in", code="not_authenticated")
    definition = registry.mutations[name]
    data = validate_input(definition, args.get("input"))
    approver = context.settings.approver(name)
    if approver is None:
        outcome = run_mutation(registry, definition, data, context.actor)
        context.emit("mutation_executed", {"mutation": name, "status": "executed"})
        return outcome
    preview = preview_mutation(registry.schema_index(), definition, data, context.actor)
    reason = unchanged_reason(preview, context.redaction.sensitive)
    if reason is not None:
        context.emit("mutation_unchanged", {"mutation": name})
        return {
            "status": "unchanged",
            "mutation": name,
            "input": data.model_dump(mode="json"),
            "reason": reason,
            "message": UNCHANGED_RESULT.format(reason=reason),
        }
    context.emit("mutation_confirmation_required", {"mutation": name, "approver": approver})
    return {
        "status": "confirmation_required",
        "mutation": name,
        "input": data.model_dump(mode="json"),
        "preview": preview,
        "approver": approver,
    }
