"""The chatomon demo: a small manufacturing company's data behind the assistant and console.

`python -m chatomon.demo` (or `make demo`) migrates a SQLite database under `.demo/`, seeds
materials, suppliers, parts and projects, creates a staff user and serves the console, the
chat endpoints and the WebSocket on http://127.0.0.1:8000. Its Django app label is
"chatomon_demo"; its settings module is `chatomon.demo.settings`.
"""
