"""`python -m chatomon.demo [--host H] [--port P]`: set up and serve the demo.

`python -m chatomon.demo manage <command> ...` runs a Django management command with the
demo settings (like a project's manage.py), e.g. `manage changepassword staff`.
`python -m chatomon.demo warm` reads the chat's prompt into the embedded model and saves
it, then exits (`make demo` does it once per machine), so the server's first answer does
not wait for it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]

SETTINGS = "chatomon.demo.settings"
LOOPBACK_HOSTS = "127.0.0.1,localhost,[::1]"


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m chatomon.demo",
        description="Migrate, seed and serve the chatomon demo (console, chat, WebSocket).",
        epilog="'python -m chatomon.demo manage <command>' runs a Django management command; "
        "'python -m chatomon.demo warm' reads the chat prompt into the embedded model ahead.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    return parser.parse_args(argv)


def _allow_host(host: str) -> None:
    """Let Django answer on the address served (any name when listening on every address)."""
    if "CHATOMON_DEMO_ALLOWED_HOSTS" in os.environ:
        return
    everywhere = host in ("0.0.0.0", "::")  # noqa: S104 - the user asked to listen there
    os.environ["CHATOMON_DEMO_ALLOWED_HOSTS"] = "*" if everywhere else f"{LOOPBACK_HOSTS},{host}"


def manage(argv: Sequence[str]) -> None:
    """Run a Django management command with the demo settings."""
    from django.core.management import execute_from_command_line  # noqa: PLC0415

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    execute_from_command_line(["python -m chatomon.demo manage", *argv])


def warm() -> int:
    """Read the chat's prompt into the embedded model ahead of a start; the exit status."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    import django  # noqa: PLC0415 - after the environment names the settings

    django.setup()
    from chatomon.demo.startup import read_prompt_ahead  # noqa: PLC0415 - needs Django set up

    return 1 if read_prompt_ahead() is not None else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Set the demo up and serve it in the foreground; returns the exit status."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["manage"]:
        manage(given[1:])
        return 0
    if given[:1] == ["warm"]:
        argparse.ArgumentParser(
            prog="python -m chatomon.demo warm",
            description="Read the chat's prompt into the embedded model and save it, then exit.",
        ).parse_args(given[1:])
        return warm()
    options = _arguments(given)
    _allow_host(options.host)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    import django  # noqa: PLC0415 - after the environment names the settings

    django.setup()
    from chatomon.demo.server import serve  # noqa: PLC0415 - needs Django set up
    from chatomon.demo.startup import check_provider, prepare, start_provider  # noqa: PLC0415

    logging.getLogger("chatomon.demo").info("chatomon demo starting")
    prepare()
    # A failed system check was logged with its fix; otherwise the provider itself is
    # probed and the embedded model warms up while the server starts.
    problem = check_provider() or start_provider()
    serve(options.host, options.port, chat_problem=problem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
