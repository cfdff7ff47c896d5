"""PublicChatError, public_chat_error and planned_public_error against the reference.

Reference (Settings, errors, and audit helpers): "planned_public_error(reason) accepts only
the stable planned reasons listed below. It returns a PublicChatError; invalid or unknown
reasons use the generic chat_error code and message. public_chat_error(exc) preserves an
exception's valid public_reason, maps a plain TimeoutError to deadline_exceeded, and maps
other unexpected exceptions to chat_error."
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys

import pytest

import chatomon
from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    ToolLoopError,
)
from chatomon.public_errors import (
    GENERIC_ERROR_MESSAGE,
    PLANNED_PUBLIC_MESSAGES,
    PLANNED_REASONS,
    PublicChatError,
    planned_public_error,
    public_chat_error,
)

# The reference's table of planned codes and public messages, copied from it word for word.
REFERENCE_TABLE = {
    "invalid_plan": "I could not prepare a safe plan for that request.",
    "manager_unresolved": "I could not resolve the required application data.",
    "dependency_blocked": "A required part of the request could not be completed.",
    "budget_exhausted": "The request reached its execution limit.",
    "deadline_exceeded": "The request reached its time limit.",
    "provider_failed": "The provider could not complete the request.",
    "synthesis_failed": "I could not produce a grounded answer from the available data.",
}


def test_the_planned_messages_are_the_references() -> None:
    # Reference: PLANNED_PUBLIC_MESSAGES = {... the seven reasons ..., "rate_limited":
    # "Chat rate limit exceeded. Try again later."}
    assert dict(PLANNED_PUBLIC_MESSAGES) == {
        **REFERENCE_TABLE,
        "rate_limited": "Chat rate limit exceeded. Try again later.",
    }
    assert tuple(REFERENCE_TABLE) == PLANNED_REASONS


def test_the_planned_messages_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        PLANNED_PUBLIC_MESSAGES["provider_failed"] = "boom"


@pytest.mark.parametrize(("reason", "message"), REFERENCE_TABLE.items())
def test_planned_public_error_gives_each_stable_reason_its_message(
    reason: str, message: str
) -> None:
    assert planned_public_error(reason) == PublicChatError(reason, message)


@pytest.mark.parametrize(
    "reason", ["rate_limited", "provider_auth", "", "INVALID_PLAN", None, 3, ["invalid_plan"]]
)
def test_planned_public_error_maps_any_other_reason_to_chat_error(reason: object) -> None:
    # "accepts only the stable planned reasons listed below ... invalid or unknown reasons
    # use the generic chat_error code and message" (rate_limited is not in that table).
    assert planned_public_error(reason) == PublicChatError("chat_error", GENERIC_ERROR_MESSAGE)


def test_a_public_chat_error_is_a_frozen_value() -> None:
    error = planned_public_error("invalid_plan")
    with pytest.raises(dataclasses.FrozenInstanceError):
        error.code = "chat_error"
    assert error.reason is None


class PlannedError(Exception):
    """An internal exception carrying a stable public reason, as planned-turn errors do."""

    def __init__(self, public_reason: object, detail: str) -> None:
        super().__init__(detail)
        self.public_reason = public_reason


@pytest.mark.parametrize("reason", [*REFERENCE_TABLE, "rate_limited"])
def test_a_valid_public_reason_is_preserved(reason: str) -> None:
    error = public_chat_error(PlannedError(reason, "plan payload with manager PartManager"))
    assert error == PublicChatError(reason, PLANNED_PUBLIC_MESSAGES[reason])


@pytest.mark.parametrize("reason", ["internal_detail", "", None, 42])
def test_an_invalid_public_reason_is_chat_error(reason: object) -> None:
    error = public_chat_error(PlannedError(reason, "secret detail"))
    assert error == PublicChatError("chat_error", GENERIC_ERROR_MESSAGE)


def test_a_plain_timeout_error_is_deadline_exceeded() -> None:
    error = public_chat_error(TimeoutError("query on host db-7 took 31 s"))
    assert error == PublicChatError("deadline_exceeded", "The request reached its time limit.")


def test_a_timeout_with_a_valid_public_reason_keeps_its_reason() -> None:
    class PlannerTimeoutError(TimeoutError):
        public_reason = "provider_failed"

    assert public_chat_error(PlannerTimeoutError()).code == "provider_failed"


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("password=hunter2"),
        KeyError("sk-123"),
        ValueError(),
        ToolLoopError("turn_limit"),  # the pipeline sends its own code before asking here
        asyncio.CancelledError(),
    ],
)
def test_other_exceptions_are_chat_error_without_their_text(exc: BaseException) -> None:
    assert public_chat_error(exc) == PublicChatError("chat_error", GENERIC_ERROR_MESSAGE)


def test_a_provider_error_is_provider_failed() -> None:
    error = public_chat_error(ProviderError("HTTP 500 from api.example", provider="x"))
    assert error == PublicChatError(
        "provider_failed", "The provider could not complete the request."
    )


@pytest.mark.parametrize(
    ("error_type", "code", "reason"),
    [
        (ProviderAuthError, "provider_failed", "provider_auth"),
        (ProviderRateLimitError, "provider_failed", "provider_rate_limited"),
        (ProviderContextLengthError, "provider_failed", "provider_context_length"),
        (ProviderUnavailableError, "provider_failed", "provider_unavailable"),
        (ProviderBadRequestError, "provider_failed", "provider_bad_request"),
        (ProviderProtocolError, "provider_failed", "provider_protocol"),
        (ProviderTimeoutError, "deadline_exceeded", "provider_timeout"),
    ],
)
def test_a_refined_provider_error_gets_the_references_code_and_keeps_its_reason(
    error_type: type[ProviderError], code: str, reason: str
) -> None:
    # The reference's code first (clients written for it branch on `code`); chatomon's
    # finer stable reason rides along in `reason`, never the exception's text.
    error = public_chat_error(error_type("key sk-123 refused by vendor", provider="openai"))
    assert error == PublicChatError(code, PLANNED_PUBLIC_MESSAGES[code], reason)
    assert "sk-123" not in repr(error)


def test_the_public_names_are_exported_from_chatomon() -> None:
    assert chatomon.PublicChatError is PublicChatError
    assert chatomon.public_chat_error is public_chat_error
    assert chatomon.planned_public_error is planned_public_error


def test_the_module_imports_without_django() -> None:
    # The planned-turn package imports these messages; it must not need Django settings.
    code = (
        "import sys; from chatomon.public_errors import public_chat_error; "
        "print(public_chat_error(TimeoutError()).code, "
        "any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert done.stdout.split() == ["deadline_exceeded", "False"]
