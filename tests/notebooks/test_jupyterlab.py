"""The ChatWidget in a real JupyterLab 4, driven by Chromium as a data scientist would use it.

A JupyterLab server (the dev extra installs it from PyPI) serves a notebook on loopback; the
browser runs it, writes two lines (Shift+Enter: a new line, the cell is not run again),
sends with Enter, clicks Approve, saves, and takes a screenshot in the
light and in the dark theme. In each theme the badges' computed colours are at WCAG AA
contrast and the tables are left-aligned; the saved notebook holds the conversation as the
widget's static copy. The screenshots stay in the test's tmp_path (pytest keeps the last
three runs under its basetemp). Skipped when JupyterLab or Debian's chromium is missing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from chatomon.notebook.message_input import HAS_ANYWIDGET
from tests.browser.conftest import MISSING, launch_chromium
from tests.notebooks.test_readability import contrast

pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))

NOTEBOOK = """
from chatomon.chat.store import MemoryStore
from chatomon.data.actor import SimpleActor
from chatomon.notebook import ChatWidget
from chatomon.providers import ScriptedProvider
from tests.chat.services import RENAME, confirm_settings, service

provider = ScriptedProvider([["Hello ", "there."], [RENAME], ["Steel is now called Iron."]])
chat = service(MemoryStore(), provider, settings=confirm_settings())
widget = ChatWidget(chat, actor=SimpleActor(id=1, is_authenticated=True))
widget
"""

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

# Each badge's computed text and background colours, and each chatomon table cell's alignment.
STYLES_JS = """() => {
  const rgb = (s) => '#' + s.match(/\\d+/g).slice(0, 3)
      .map((n) => Number(n).toString(16).padStart(2, '0')).join('');
  const badges = [...document.querySelectorAll('.cm-badge')].map((el) => {
    const style = getComputedStyle(el);
    return [el.textContent, rgb(style.color), rgb(style.backgroundColor)];
  });
  const cells = [...document.querySelectorAll('.chatomon-view td, .chatomon-view th')]
      .map((el) => getComputedStyle(el).textAlign);
  return {badges, cells};
}"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A JupyterLab server on loopback in the theme `request.param`; yields (url, folder)."""
    theme: str = request.param
    folder = tmp_path / "work"
    folder.mkdir()
    notebook = new_notebook(cells=[new_code_cell(NOTEBOOK)])  # type: ignore[no-untyped-call]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, folder / "chat.ipynb")  # type: ignore[no-untyped-call]
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": THEMES[theme]}))
    port = free_port()
    env = {
        **os.environ,
        # The kernel imports this checkout's chatomon and its `tests` package.
        "PYTHONPATH": os.pathsep.join([str(ROOT / "sdk"), str(ROOT)]),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    command = [
        *(sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root"),
        *("--ip=127.0.0.1", f"--port={port}", "--IdentityProvider.token=t"),
        *(f"--ServerApp.root_dir={folder}", "--LabApp.news_url="),
    ]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail((tmp_path / "server.log").read_text()[-2000:])
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/chat.ipynb?token=t", folder
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()


@pytest.mark.parametrize("lab", ["light", "dark"], indirect=True)
def test_send_with_enter_approve_by_click_and_save_in_jupyterlab(
    lab: tuple[str, Path], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url, folder = lab
    theme = request.node.callspec.params["lab"]
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.wait_for_selector(".jp-Notebook")
            page.wait_for_selector("text=Python 3 (ipykernel) | Idle")
            page.click("text=Run")
            page.click("text=Run All Cells")
            if HAS_ANYWIDGET:
                message = page.locator("textarea.chatomon-message-input").first
                message.fill("hi")
                message.press("Shift+Enter")  # a new line: neither sent nor the cell run again
                message.press_sequentially("there")
                assert message.input_value() == "hi\nthere"
                assert page.locator(".jp-Notebook .jp-Cell").count() == 1
            else:  # ipywidgets' one-line Text: Enter sends, no new lines
                message = page.locator(".widget-text input").first
                message.fill("hi")
            message.press("Enter")  # Enter sends
            page.wait_for_selector("text=Hello there.")
            assert message.input_value() == ""
            if HAS_ANYWIDGET:
                asked = page.locator(".chatomon-view .cm-text").filter(has_text="hi").first
                assert asked.inner_text() == "hi\nthere"
            message.fill("Rename Steel to Iron")
            message.press("Enter")
            page.wait_for_selector("text=decide below")
            styles = page.evaluate(STYLES_JS)
            page.screenshot(path=str(tmp_path / f"waiting-{theme}.png"))
            page.locator("button:has-text('Approve')").first.click()
            page.wait_for_selector("text=Steel is now called Iron.")
            page.screenshot(path=str(tmp_path / f"approved-{theme}.png"))
            page.locator(".jp-Notebook").click()
            page.keyboard.press("Control+s")
            page.wait_for_selector(".jp-mod-dirty", state="detached")
        finally:
            browser.close()
    assert styles["badges"], "the widget shows badges"
    for label, text, background in styles["badges"]:
        assert contrast(text, background) >= 4.5, (theme, label, text, background)
    assert styles["cells"] and set(styles["cells"]) == {"left"}
    saved = nbformat.read(folder / "chat.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    (output,) = saved.cells[0].outputs
    assert "application/vnd.jupyter.widget-view+json" in output.data
    text = "".join(output.data["text/plain"])
    assert "You: Rename Steel to Iron" in text and "Steel is now called Iron." in text
