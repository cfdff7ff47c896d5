"""The README: its two commands first; its examples run as written and print what they say."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from chatomon import Atom, Blocklist
from chatomon.chat.store import MemoryStore
from tests.chat.services import confirm_settings, rename_script, service

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def block_with(marker: str) -> str:
    (block,) = [block for block in python_blocks() if marker in block]
    return block


def test_readme_shows_the_two_commands_first() -> None:
    text = README.read_text()
    first_block = re.search(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    assert first_block is not None
    assert first_block.start() == text.index("```"), "the commands are the first code block"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert sorted(commands) == ["make demo", "make test"]


def test_every_python_example_parses_and_its_imports_resolve() -> None:
    """The examples not run below still name only modules and objects that exist."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    for block in python_blocks():
        tree = compile(block, str(README), "exec", flags=flags)
        imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
        exec(compile(ast.Module(body=imports, type_ignores=[]), str(README), "exec"), {})


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


def test_provider_examples_run_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-example")  # built, never called
    namespace: dict[str, Any] = {}
    exec(compile(block_with("build_provider"), str(README), "exec"), namespace)
    assert type(namespace["provider"]).__name__ == "OpenAIProvider"
    assert namespace["atom"].name == "support"
    namespace = {}
    exec(compile(block_with("ScriptedProvider([[tool_call"), str(README), "exec"), namespace)
    assert namespace["provider"].remaining == 2


async def test_turn_api_example_runs_as_written() -> None:
    example = block_with("atom.begin(")
    source = "async def run():\n" + textwrap.indent(example, "    ") + "    return report\n"
    namespace: dict[str, Any] = {
        "atom": Atom("support", lambda messages, guidance: "", output=[Blocklist(["Acme"])]),
        "my_llm": lambda messages, guidance: "We sell bolts in every size.",
    }
    exec(compile(source, str(README), "exec"), namespace)
    report = await namespace["run"]()
    assert report.final_action == "answered"
    assert [attempt.decision for attempt in report.output] == ["accept"]


def test_data_chat_example_runs_as_written() -> None:
    example = block_with("ToolLoop")
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(example, str(README), "exec"), {})
    assert output.getvalue().splitlines() == [
        "Mercury uses aluminum parts.",
        '{"data": [{"id": 2, "name": "Mercury"}], "total_count": 1, "has_more": false}',
    ]


def test_confirmation_example_runs_as_written() -> None:
    example = block_with("resolve_confirmation")
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


async def test_notebook_example_runs_as_written() -> None:
    example = block_with("ChatWidget")
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    namespace: dict[str, Any] = {
        "service": service(
            MemoryStore(), rename_script("Steel is now Iron."), settings=confirm_settings()
        )
    }
    await eval(compile(example, str(README), "exec", flags=flags), namespace)
    widget = namespace["widget"]
    assert [m.get("status") for m in widget.messages if m["role"] == "confirmation"] == ["approved"]
    assert widget.messages[-1]["text"] == "Steel is now Iron."
    assert len(widget.reports) == 1  # one TurnReport for the whole, resumed turn
