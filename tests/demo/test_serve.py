"""`python -m chatomon.demo`: its log, the staff account, serving, and a clean Ctrl-C stop."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from chatomon.demo.prompts import SUGGESTED_PROMPTS
from tests.demo.process import DemoServer, manage

SCRIPTED = {"CHATOMON_PROVIDER": "tests.browser.provider.DemoScriptProvider"}
GENERATED = re.compile(r"staff user 'staff' created; password: (\S+)")


def run_once(data_dir: Path, env: dict[str, str] | None = None) -> DemoServer:
    """Start the demo, fetch its pages, stop it with Ctrl-C; returns the stopped server."""
    server = DemoServer(data_dir, {**SCRIPTED, **(env or {})})
    try:
        url = server.wait_until_serving()
        with httpx.Client(base_url=url) as client:
            home = client.get("/")
            assert home.status_code == 200
            assert "240 parts" in home.text
            # The page suggests what the prompts benchmark measures.
            for prompt in SUGGESTED_PROMPTS:
                assert (f"“{prompt.text}”" + (f" ({prompt.note})" if prompt.note else "")) in (
                    home.text
                )
            assert client.get("/static/chatomon/chat-widget.js").status_code == 200
            assert client.get("/static/chatomon_console/console.css").status_code == 200
            assert client.get("/favicon.ico").status_code == 204
            login = client.get("/console/")
            assert login.status_code == 302
            assert login.headers["location"].startswith("/console/login/")
    finally:
        status = server.interrupt()
    assert status == 0, server.log
    return server


def password_works(data_dir: Path, username: str, password: str) -> bool:
    result = manage(
        data_dir,
        "shell",
        "-c",
        "from django.contrib.auth import authenticate;"
        f"user = authenticate(username={username!r}, password={password!r});"
        "print(bool(user and user.is_staff and user.is_superuser))",
    )
    return result.stdout.strip().splitlines()[-1] == "True"


def test_the_first_start_prints_a_generated_password_once(tmp_path: Path) -> None:
    first = run_once(tmp_path)
    assert "database ready:" in first.log
    assert "demo data: materials: 14 (14 new)" in first.log
    assert "provider: tests.browser.provider.DemoScriptProvider" in first.log
    assert first.log.rstrip().endswith("stopped")
    assert "WARNING" not in first.log
    match = GENERATED.search(first.log)
    assert match, first.log
    assert password_works(tmp_path, "staff", match[1])

    second = run_once(tmp_path)
    assert GENERATED.search(second.log) is None
    assert match[1] not in second.log
    assert "staff user 'staff': password unchanged" in second.log
    assert "changepassword staff" in second.log
    assert "(0 new)" in second.log
    assert " new)" not in second.log.replace("(0 new)", "")
    assert password_works(tmp_path, "staff", match[1])


def test_the_environment_names_the_staff_account(tmp_path: Path) -> None:
    env = {"CHATOMON_DEMO_USER": "boss", "CHATOMON_DEMO_PASSWORD": "first-secret"}
    first = run_once(tmp_path, env)
    assert "first-secret" not in first.log
    assert "staff user 'boss': password set from CHATOMON_DEMO_PASSWORD" in first.log
    assert password_works(tmp_path, "boss", "first-secret")

    changed = run_once(tmp_path, {**env, "CHATOMON_DEMO_PASSWORD": "second-secret"})
    assert "password set from CHATOMON_DEMO_PASSWORD" in changed.log
    assert password_works(tmp_path, "boss", "second-secret")
    assert not password_works(tmp_path, "boss", "first-secret")


def test_a_missing_provider_runtime_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    server = run_once(tmp_path, {"CHATOMON_PROVIDER": "chatomon.providers.nowhere.Provider"})
    assert (
        "not ready, chats will fail: [chatomon.E006] chat provider "
        "'chatomon.providers.nowhere.Provider' names no provider" in server.log
    ), server.log
