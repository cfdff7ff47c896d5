"""The chatomon staff console: a Django app (label "chatomon_console") built with HTMX.

Add ``"chatomon.console"`` to ``INSTALLED_APPS``. Its screens come with the console issue;
for now the app ships its base template and stylesheet.
"""
