"""Running the demo in processes of its own: management commands and the served demo.

The demo has its own settings (and its own registry of managers), so tests never import it
into the test process: they start `python -m chatomon.demo` with a data folder of their own.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"serving on (http://\S+)")
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 15.0


def demo_environment(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process' environment for a demo process: its own data folder, no test settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CHATOMON_", "DJANGO_", "PYTEST_"))
    }
    env["CHATOMON_DEMO_DATA"] = str(data_dir)
    # The browser tests' console starts empty: no seeded conversations or waiting approvals.
    env["CHATOMON_DEMO_HISTORY"] = "0"
    # Tests name providers of their own (tests.browser.provider) by dotted path.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def run_demo(
    data_dir: Path,
    *arguments: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m chatomon.demo <arguments>` to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "chatomon.demo", *arguments],
        cwd=ROOT,
        env=demo_environment(data_dir, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def manage(
    data_dir: Path, *arguments: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m chatomon.demo manage <arguments>`; fails the test when the command fails."""
    result = run_demo(data_dir, "manage", *arguments, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


class DemoServer:
    """`python -m chatomon.demo --port 0` in the background, its log collected line by line."""

    def __init__(self, data_dir: Path, env: Mapping[str, str] | None = None) -> None:
        self.lines: list[str] = []
        self.url = ""
        self._process = subprocess.Popen(
            [sys.executable, "-m", "chatomon.demo", "--host", "127.0.0.1", "--port", "0"],
            cwd=ROOT,
            env=demo_environment(data_dir, env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def log(self) -> str:
        """Everything the demo printed so far."""
        return "\n".join(self.lines)

    def wait_until_serving(self) -> str:
        """The base URL, once the demo says it serves (fails when it exits or hangs)."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := SERVING.search(line):
                    self.url = match.group(1)
                    return self.url
            if self._process.poll() is not None:
                raise AssertionError(f"the demo exited ({self._process.returncode}):\n{self.log}")
            time.sleep(0.05)
        raise AssertionError(f"the demo did not start serving:\n{self.log}")

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT, then the exit status once it stopped (killed if it hangs)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
        try:
            status = self._process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise AssertionError(f"the demo did not stop on Ctrl-C:\n{self.log}") from None
        finally:
            self._reader.join(timeout=5)
            if self._process.stdout is not None:
                self._process.stdout.close()
        return status
