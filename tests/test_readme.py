"""The README's quickstart runs as written and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_shows_the_two_commands_first() -> None:
    text = README.read_text()
    first_block = re.search(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    assert first_block is not None
    assert "make test" in first_block.group(1)
    assert "make demo" in first_block.group(1)


def test_quickstart_runs_as_written() -> None:
    quickstart = python_blocks()[0]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(quickstart, str(README), "exec"), {})
    lines = output.getvalue().splitlines()
    assert lines == [
        "We are open Monday to Friday, 9 to 18. orbital_response",
        "We sell bolts in every size. ['regenerate', 'accept']",
    ]
    assert len(quickstart.splitlines()) <= 25


def test_data_chat_example_runs_as_written() -> None:
    (example,) = [block for block in python_blocks() if "ToolLoop" in block]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(example, str(README), "exec"), {})
    assert output.getvalue().splitlines() == [
        "Mercury uses aluminum parts.",
        '{"data": [{"id": 2, "name": "Mercury"}], "total_count": 1, "has_more": false}',
    ]


def test_confirmation_example_runs_as_written() -> None:
    (example,) = [block for block in python_blocks() if "resolve_confirmation" in block]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(example, str(README), "exec"), {})
    assert output.getvalue().splitlines() == [
        "confirm_mutation renameMaterial",
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]
