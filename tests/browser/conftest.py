"""A served demo and a real Chromium for the browser tests.

The demo runs as `python -m chatomon.demo` on a free loopback port, answering with the
deterministic DemoScriptProvider; Chromium is Debian's package, driven by Playwright
(which downloads no browser: `make browser` installs the package). Without Chromium the
tests skip, except where CHATOMON_REQUIRE_BROWSER is set (`make test`): there they fail.
Screenshots of every screen go to tests/browser/screenshots/ (ignored by git).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.demo.process import DemoServer, manage

STAFF = ("staff", "staff-browser-password")
END_USER = ("alice", "alice-browser-password")
SCREENSHOTS = Path(__file__).parent / "screenshots"
PROVIDER = "tests.browser.provider.DemoScriptProvider"
TIMEOUT_MS = 15_000


def _chromium() -> tuple[str | None, str | None]:
    """The Chromium executable, or why the browser tests cannot run."""
    if importlib.util.find_spec("playwright") is None:
        return None, "playwright is not installed (pip install -e '.[dev]')"
    path = os.environ.get("CHATOMON_CHROMIUM") or shutil.which("chromium")
    if path is None:
        return None, "Debian's chromium package is not installed (make browser)"
    return path, None


CHROMIUM, MISSING = _chromium()
if MISSING is None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
if MISSING is not None and os.environ.get("CHATOMON_REQUIRE_BROWSER"):
    raise RuntimeError(f"the browser tests are required here, but {MISSING}")


@dataclass
class Demo:
    """The served demo: its address, its log and its data folder (for `manage`)."""

    server: DemoServer
    url: str
    data_dir: Path


@contextmanager
def served_demo(tmp_path_factory: pytest.TempPathFactory, provider: str) -> Iterator[Demo]:
    """The demo answering with `provider`, with a staff user and an end user, until exit."""
    data_dir = tmp_path_factory.mktemp("demo")
    manage(data_dir, "migrate", "--verbosity", "0", "--skip-checks")
    username, password = END_USER
    manage(
        data_dir,
        "shell",
        "-c",
        "from django.contrib.auth.models import User;"
        f"User.objects.create_user({username!r}, password={password!r})",
    )
    server = DemoServer(
        data_dir,
        {
            "CHATOMON_PROVIDER": provider,
            "CHATOMON_DEMO_USER": STAFF[0],
            "CHATOMON_DEMO_PASSWORD": STAFF[1],
        },
    )
    try:
        url = server.wait_until_serving()
        yield Demo(server=server, url=url, data_dir=data_dir)
    finally:
        status = server.interrupt()
    assert status == 0, server.log


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, started by Playwright with the flags containers need."""
    # As root (CI, containers) Chromium refuses to start without --no-sandbox.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    # Containers often have a small /dev/shm, where Chromium keeps its shared memory.
    args.append("--disable-dev-shm-usage")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=args)


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """The demo, served for all browser tests, with a staff user and an end user."""
    if MISSING is not None:
        pytest.skip(MISSING)
    with served_demo(tmp_path_factory, PROVIDER) as served:
        yield served


@pytest.fixture(scope="package")
def browser(demo: Demo) -> Iterator[Any]:
    """One Chromium for the package; each test opens contexts (sessions) of its own."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def new_page(browser: Any, demo: Demo) -> Iterator[Callable[[], Any]]:
    """Open a page in a fresh browser context (its own cookies: its own session)."""
    contexts: list[Any] = []

    def open_page() -> Any:
        context = browser.new_context(base_url=demo.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def log_in(page: Any, account: tuple[str, str], next_path: str = "/console/") -> None:
    """Log in through the console's login form, landing on `next_path`."""
    page.goto(f"/console/login/?next={next_path}")
    page.get_by_label("Username").fill(account[0])
    page.get_by_label("Password").fill(account[1])
    page.get_by_role("button", name="Log in").click()
    # The path exactly: a failed login stays on /console/login/, which a glob could match.
    page.wait_for_url(lambda url: urlsplit(url).path == next_path)


def open_chat(new_page: Callable[[], Any]) -> Any:
    """A page where alice is logged in on the demo's landing page, its chat connected."""
    page = new_page()
    log_in(page, END_USER, "/")
    expect(page.locator(".chatomon-status")).to_have_text("connected")
    return page


def say(page: Any, text: str) -> None:
    """Send `text` from the page's chat form."""
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def apply_filter(page: Any, label: str, value: str, parameter: str) -> None:
    """Fill one filter of a console list and apply it; it lands in the URL as `parameter`."""
    page.get_by_label(label).fill(value)
    page.get_by_role("button", name="Apply filters").click()
    expect(page).to_have_url(re.compile(rf"[?&]{parameter}={re.escape(value)}"))


def screenshot(page: Any, name: str) -> None:
    """Keep what the page shows now, for a reviewer."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


# Collects every text the last element matching the selector shows, as it changes.
_RECORDER = """
([selector, key]) => {
  window[key] = [];
  new MutationObserver(() => {
    const found = document.querySelectorAll(selector);
    const text = found.length ? found[found.length - 1].textContent : null;
    const seen = window[key];
    if (text && seen[seen.length - 1] !== text) seen.push(text);
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}
"""


class TextRecorder:
    """Every successive text of the last element matching `selector` on a page."""

    def __init__(self, page: Any, selector: str, key: str = "__chatomonTexts") -> None:
        self.page = page
        self.key = key
        page.evaluate(_RECORDER, [selector, key])

    @property
    def texts(self) -> list[str]:
        """The texts seen so far, in order."""
        return list(self.page.evaluate(f"window[{self.key!r}]"))
