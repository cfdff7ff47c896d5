"""The console's URLs: ``path("console/", include("chatomon.console.urls"))``.

Names are in the ``chatomon_console`` namespace (``chatomon_console:dashboard`` ...);
``chatomon_console:login`` can serve as the project's ``LOGIN_URL``. Every id in a path
goes through a converter (``uuid``, ``chatomon_turn_id``, ``chatomon_key``: see
``converters``), so a malformed id answers 404 and never reaches a query.
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path, re_path, register_converter

from . import live, saved_views
from .converters import KeyConverter, TurnIdConverter
from .views import approvals, audit, chat, dashboard, escalations, evals, turns

app_name = "chatomon_console"

register_converter(TurnIdConverter, "chatomon_turn_id")
register_converter(KeyConverter, "chatomon_key")

urlpatterns: list[URLPattern] = [
    path("", dashboard.dashboard, name="dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="chatomon_console/login.html"),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("live/", live.live_stream, name="live"),
    path("chat/", chat.chat_home, name="chat"),
    path("chat/send/", chat.chat_send, name="chat_send"),
    path("chat/<uuid:conversation_id>/", chat.chat_home, name="chat_conversation"),
    path("chat/confirm/<uuid:confirmation_id>/", chat.chat_confirm, name="chat_confirm"),
    path("chat/confirmations/<uuid:confirmation_id>/", chat.chat_card, name="chat_confirmation"),
    path("approvals/", approvals.approval_queue, name="approvals"),
    path("approvals/history/", approvals.approval_history, name="approval_history"),
    path(
        "approvals/<uuid:confirmation_id>/decide/",
        approvals.approval_decide,
        name="approval_decide",
    ),
    path("turns/", turns.turn_list, name="turns"),
    re_path(r"^turns/export\.(?P<fmt>csv|jsonl)$", turns.turn_export, name="turn_export"),
    path("turns/compare/", turns.turn_compare, name="turn_compare"),
    path("turns/<chatomon_turn_id:turn_id>/", turns.turn_detail, name="turn_detail"),
    path(
        "turns/<chatomon_turn_id:turn_id>/tools/<chatomon_turn_id:call_id>.json",
        turns.turn_tool_download,
        name="turn_tool",
    ),
    path(
        "turns/<chatomon_turn_id:turn_id>/report.json",
        turns.turn_report_download,
        name="turn_report",
    ),
    path("escalations/", escalations.escalation_list, name="escalations"),
    path(
        "escalations/<chatomon_turn_id:turn_id>/review/",
        escalations.escalation_review,
        name="escalation_review",
    ),
    path("views/save/", saved_views.save_view, name="save_view"),
    path("views/<chatomon_key:view_id>/delete/", saved_views.delete_view, name="delete_view"),
    path("audit/", audit.audit_list, name="audit"),
    re_path(r"^audit/export\.(?P<fmt>csv|jsonl)$", audit.audit_export, name="audit_export"),
    path("audit/<chatomon_key:event_id>/", audit.audit_detail, name="audit_detail"),
    path("evals/", evals.eval_run_list, name="eval_runs"),
    path("evals/<chatomon_key:run_id>/", evals.eval_run_detail, name="eval_run"),
]
