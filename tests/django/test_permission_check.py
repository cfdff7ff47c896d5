"""The `permission` setting at startup: a callable that cannot answer True or False is E002.

Reference (top-level chat settings): "permission | None | Callable or dotted path receiving
(user, scope). Returning False denies the request or socket." and (system checks)
"general_manager.chat.E002 | Chat settings, permissions, or mutation allow-lists are
invalid." A check declared to return None, or unable to receive (user, scope), is a
configuration error reported by `manage.py check`, not a silent denial at request time.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from django.core.checks import CheckMessage, run_checks
from django.test import override_settings

HERE = __name__
BASE = {"enabled": True, "provider": "local"}


def allow(user: Any, scope: Any) -> bool:
    return True


def forgot_to_return(user: Any, scope: Any) -> None:
    print(user, scope)


async def async_forgot_to_return(user: Any, scope: Any) -> None:
    print(user, scope)


def unannotated(user, scope):
    return True


def user_only(user: Any) -> bool:
    return True


def three_required(user: Any, scope: Any, extra: Any) -> bool:
    return True


def flexible(*args: Any, **kwargs: Any) -> bool:
    return True


class CallableCheck:
    def __call__(self, user: Any, scope: Any) -> bool:
        return True


def checks(permission: Any) -> list[CheckMessage]:
    with override_settings(CHATOMON={**BASE, "permission": permission}):
        return [m for m in run_checks(tags=["chatomon"]) if m.id == "chatomon.E002"]


@pytest.mark.parametrize(
    "permission",
    [
        None,
        allow,
        f"{HERE}.allow",
        unannotated,
        flexible,
        CallableCheck(),
        functools.partial(three_required, extra=1),
        lambda user, scope: user is not None,
    ],
)
def test_a_callable_receiving_user_and_scope_passes(permission: Any) -> None:
    assert checks(permission) == []


@pytest.mark.parametrize(
    "permission",
    [forgot_to_return, f"{HERE}.forgot_to_return", async_forgot_to_return],
)
def test_a_check_declared_to_return_none_is_e002(permission: Any) -> None:
    (message,) = checks(permission)
    assert "permission" in message.msg and "declared to return None" in message.msg
    assert "forgot_to_return" in message.msg
    assert message.hint and "False to deny" in message.hint


@pytest.mark.parametrize("permission", [user_only, three_required, f"{HERE}.user_only"])
def test_a_check_that_cannot_receive_user_and_scope_is_e002(permission: Any) -> None:
    (message,) = checks(permission)
    assert "(user, scope)" in message.msg


def test_nothing_is_checked_while_chat_is_disabled() -> None:
    with override_settings(CHATOMON={**BASE, "enabled": False, "permission": forgot_to_return}):
        assert list(run_checks(tags=["chatomon"])) == []
