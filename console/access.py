"""Who may use the console: active staff through Django's login, then one permission per area.

Anyone else is sent to ``settings.LOGIN_URL``; an HTMX request gets an ``HX-Redirect`` to it
(a login form swapped into a fragment would be useless). Staff without the area's permission
get a 403 page. Superusers hold every permission.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar, cast

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from .rendering import render_screen

__all__ = [
    "DECIDE_CONFIRMATION",
    "REVIEW_ESCALATION",
    "USE_CHAT",
    "VIEW_APPROVALS",
    "VIEW_AUDIT",
    "VIEW_DASHBOARD",
    "VIEW_TURNS",
    "is_console_user",
    "may",
    "staff_view",
]

VIEW_DASHBOARD = "chatomon_console.view_dashboard"
USE_CHAT = "chatomon_console.use_chat"
VIEW_APPROVALS = "chatomon_console.view_approvals"
DECIDE_CONFIRMATION = "chatomon_console.decide_confirmation"
VIEW_TURNS = "chatomon_console.view_turns"
REVIEW_ESCALATION = "chatomon_console.review_escalation"
VIEW_AUDIT = "chatomon_console.view_audit"

View = TypeVar("View", bound=Callable[..., Any])


def may(request: HttpRequest, permission: str) -> bool:
    """Whether the request's user holds `permission` (for showing or hiding actions)."""
    user: Any = request.user
    return bool(user.has_perm(permission))


def is_console_user(user: Any) -> bool:
    """Whether `user` may enter the console at all: authenticated, active and staff."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def login_redirect(request: HttpRequest) -> HttpResponse:
    """Send the visitor to the login page, coming back to the page they were on."""
    htmx = HtmxDetails(request)
    login_url = resolve_url(settings.LOGIN_URL)
    if htmx:
        # The fragment URL is no place to come back to: return to the page that asked.
        back = htmx.current_url_abs_path or request.get_full_path()
        target = redirect_to_login(back, login_url)["Location"]
        return HttpResponseClientRedirect(target)
    return redirect_to_login(request.get_full_path(), login_url)


def refusal(request: HttpRequest, user: Any, permission: str | None) -> HttpResponse | None:
    """The response refusing `user` this area, or None when they may use it."""
    if not is_console_user(user):
        return login_redirect(request)
    if permission is not None and not user.has_perm(permission):
        return render_screen(
            request,
            "chatomon_console/forbidden.html",
            {"permission": permission},
            partial="message",
            status=403,
        )
    return None


def staff_view(permission: str | None = None) -> Callable[[View], View]:
    """Decorate a sync or async view: active staff only, holding `permission` when given."""

    def decorate(view: View) -> View:
        if iscoroutinefunction(view):
            # Reading the user and its permissions touches the database: off the loop.
            check = sync_to_async(refusal)

            @wraps(view)
            async def async_guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                user = await request.auser()
                refused = await check(request, user, permission)
                if refused is not None:
                    return refused
                return await cast("Callable[..., Awaitable[Any]]", view)(request, *args, **kwargs)

            return cast("View", async_guarded)

        @wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            refused = refusal(request, request.user, permission)
            if refused is not None:
                return refused
            return view(request, *args, **kwargs)

        return cast("View", guarded)

    return decorate
