"""The chatomon staff console: a Django app (label "chatomon_console") built with HTMX.

Add ``"chatomon.console"`` to ``INSTALLED_APPS`` and mount its screens (dashboard, chat,
approvals, turns, escalations, audit) with ``path("console/", include("chatomon.console.urls"))``.
"""
