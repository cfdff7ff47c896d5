"""The test app holds no tests; pytest must not import its Django modules as doctests."""

collect_ignore = ["apps.py", "chat.py", "models.py", "migrations"]
