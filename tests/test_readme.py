"""The README: its two commands first; every code block runs as written and does what it says.

Python examples run as scripts in a subprocess (a fresh interpreter, warnings as errors).
The Django blocks (`myproject/settings.py`, `myproject/audit.py`, `parts/chat.py`,
`myproject/urls.py`, `myproject/asgi.py`) are written into a project that `startproject`
and `startapp` make in a temporary folder, which must then pass `manage.py check` and
import its URLs and its ASGI application.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# The blocks that are files of the README's Django project, by the path on their first line.
PROJECT_FILE = re.compile(r"# ((?:myproject|parts)/\w+\.py)\b")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def blocks_in(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def shell_commands(block: str) -> list[str]:
    """The commands of a shell block, its comments dropped."""
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def block_with(marker: str) -> str:
    (block,) = [block for block in python_blocks() if marker in block]
    return block


def project_files() -> dict[str, str]:
    """The Django project's blocks, by the file they belong to."""
    files = {}
    for block in python_blocks():
        if match := PROJECT_FILE.match(block):
            files[match.group(1)] = block
    return files


def clean_environment(**extra: str) -> dict[str, str]:
    """This environment without the test suite's Django settings; the checkout importable."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def run_python(code: str, *, cwd: Path = ROOT, **env: str) -> str:
    """Run a script in a fresh interpreter (warnings are errors); its standard output."""
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=clean_environment(**env),
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_readme_shows_the_two_commands_first() -> None:
    text = README.read_text()
    first_block = re.search(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    assert first_block is not None
    assert first_block.start() == text.index("```"), "the commands are the first code block"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert sorted(commands) == ["make demo", "make test"]


SCRIPT_MARKERS = (
    "opening_hours",  # the quickstart
    "build_provider",
    "ScriptedProvider([[tool_call",
    "ToolLoop",
    "resolve_confirmation",
    "atom.begin(",
    "ChatWidget",
    "PlannedTurns({",
    "chatomon.evals.run(",
    "get_planned_chat_settings(CHATOMON)",
    '"socket_timeout": 10',  # the Redis channel layer
)


def test_every_block_is_python_shell_or_the_layout() -> None:
    """Every fenced block has a language this file knows how to run (or reads, the layout)."""
    fences = re.findall(r"^```(\w*)$", README.read_text(), flags=re.MULTILINE)
    openings, closings = fences[0::2], fences[1::2]
    assert not any(closings), "every block is closed by a bare fence"
    assert set(openings) == {"python", "sh", "text"}, openings
    assert len(blocks_in("text")) == 1  # the layout: a tree to read, nothing to run
    # The two commands (run by CI itself) and the evals commands (run below).
    assert len(blocks_in("sh")) == 2


def test_the_layout_names_every_package_folder() -> None:
    """The layout block shows each package folder of the SDK and the console, and names no
    folder that is not there."""
    (layout,) = blocks_in("text")
    # A folder is a name and a slash standing alone ("loop/", "(chat_cleanup), relay/ ..."),
    # not a path's inner part nor prose ("before/after").
    named = set(re.findall(r"(?:^|[\s(,])(\w+)/(?=[\s,)]|$)", layout, flags=re.MULTILINE))
    sdk, console = ROOT / "sdk" / "chatomon", ROOT / "console"
    packages = {path.parent for top in (sdk, console) for path in top.rglob("__init__.py")}
    # management/commands/ is Django's fixed shape, named as management/.
    folders = {package.name for package in packages - {sdk}} - {"commands"}
    assert folders <= named, f"package folders the layout leaves out: {sorted(folders - named)}"
    there = {path.name for path in ROOT.iterdir() if path.is_dir()}
    there |= {path.name for top in (sdk, console) for path in top.rglob("*") if path.is_dir()}
    assert named <= there, f"the layout names folders that are gone: {sorted(named - there)}"


def test_every_python_block_is_run_by_a_test_below() -> None:
    """A new example needs a test: each block is a project file or has its script test."""
    for block in python_blocks():
        run_by = [marker for marker in SCRIPT_MARKERS if marker in block]
        assert PROJECT_FILE.match(block) or len(run_by) == 1, block[:200]
    assert sorted(project_files()) == [
        "myproject/asgi.py",
        "myproject/audit.py",
        "myproject/settings.py",
        "myproject/urls.py",
        "parts/chat.py",
    ]


def test_quickstart_runs_as_written() -> None:
    quickstart = python_blocks()[0]
    assert "opening_hours" in quickstart
    assert run_python(quickstart).splitlines() == [
        "We are open Monday to Friday, 9 to 18. orbital_response",
        "We sell bolts in every size. ['regenerate', 'accept']",
    ]
    assert len(quickstart.splitlines()) <= 25


def test_provider_examples_run_as_written() -> None:
    built = block_with("build_provider") + "print(type(provider).__name__, atom.name)\n"
    # The key is read, never used: nothing is sent.
    assert run_python(built, OPENAI_API_KEY="sk-readme-example") == "OpenAIProvider support\n"
    scripted = block_with("ScriptedProvider([[tool_call") + "print(provider.remaining)\n"
    assert run_python(scripted) == "2\n"


def test_data_chat_example_runs_as_written() -> None:
    assert run_python(block_with("ToolLoop")).splitlines() == [
        "Mercury uses aluminum parts.",
        '{"data": [{"id": 2, "name": "Mercury"}], "total_count": 1, "has_more": false}',
    ]


def test_confirmation_example_runs_as_written() -> None:
    assert run_python(block_with("resolve_confirmation")).splitlines() == [
        "confirm_mutation renameMaterial",
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]


def test_planned_turn_example_runs_as_written() -> None:
    assert run_python(block_with("PlannedTurns({")).splitlines() == [
        "tool_call steel",
        "tool_result steel",
        "text_chunk ",
        "done ",
    ]
    assert run_python(block_with("get_planned_chat_settings(CHATOMON)")) == "local strong 3\n"


def test_evals_example_runs_as_written() -> None:
    # Every case's own script passes every judge.
    assert run_python(block_with("chatomon.evals.run(")) == "{('basic_queries', 'scripted'): 1.0}\n"


def test_connector_example_regenerates_and_checks_again() -> None:
    """A reply the output chain rejects is written again and checked again, then finished."""
    assert run_python(block_with("atom.begin(")).splitlines() == [
        "['regenerate', 'accept']",
        "We sell bolts in every size.",
    ]


def test_notebook_example_runs_as_written() -> None:
    """The Jupyter cell (top-level await) with the `service` of the example before it."""
    cell = block_with("ChatWidget")
    script = textwrap.dedent(
        """
        import ast, asyncio

        from chatomon.chat.store import MemoryStore
        from tests.chat.services import confirm_settings, rename_script, service

        CELL = {cell!r}

        async def main() -> None:
            namespace = {{"service": service(
                MemoryStore(), rename_script("Steel is now Iron."), settings=confirm_settings()
            )}}
            code = compile(CELL, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            await eval(code, namespace)
            widget = namespace["widget"]
            print([m.get("status") for m in widget.messages if m["role"] == "confirmation"])
            print(widget.messages[-1]["text"], len(widget.reports))

        asyncio.run(main())
        """
    ).format(cell=cell)
    # One TurnReport for the whole, resumed turn.
    assert run_python(script).splitlines() == ["['approved']", "Steel is now Iron. 1"]


@pytest.fixture(scope="module")
def django_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """startproject + startapp, then the README's Django blocks written into them."""
    folder = tmp_path_factory.mktemp("readme_project")
    for command in (["startproject", "myproject", "."], ["startapp", "parts"]):
        subprocess.run(
            [sys.executable, "-m", "django", *command],
            cwd=folder,
            env=clean_environment(),
            check=True,
            capture_output=True,
        )
    for name, block in project_files().items():
        target = folder / name
        if name == "myproject/settings.py":  # the README adds to what startproject wrote
            target.write_text(target.read_text() + "\n" + block)
        else:
            target.write_text(block)
    return folder


def test_the_django_blocks_pass_manage_py_check(django_project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error", "manage.py", "check", "--fail-level", "WARNING"],
        cwd=django_project,
        env=clean_environment(OPENAI_API_KEY="sk-readme-example"),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "System check identified no issues" in result.stdout


def test_the_django_blocks_serve_their_urls_and_asgi_application(django_project: Path) -> None:
    script = textwrap.dedent(
        """
        from channels.routing import ProtocolTypeRouter
        from myproject.asgi import application  # sets Django up, as a server would
        from django.conf import settings
        from django.urls import resolve

        assert isinstance(application, ProtocolTypeRouter), application
        assert sorted(application.application_mapping) == ["http", "websocket"]
        print(resolve("/chat/").url_name, resolve("/console/").namespace)
        from chatomon.data import autodiscover

        registry = autodiscover()  # what the chat views do first: import the apps' chat.py
        print(sorted(registry.mutations), sorted(registry.managers))
        from myproject.audit import log_event
        log_event({"type": "message_received", "actor": "user:7"})
        print(settings.CHATOMON["audit"]["logger"])
        """
    )
    output = run_python(script, cwd=django_project, OPENAI_API_KEY="sk-readme-example")
    urls, registered, logger = output.splitlines()
    assert urls.endswith(" chatomon_console")
    assert registered == "['createPart', 'updatePartCost'] ['PartManager']"
    assert logger == "myproject.audit.log_event"


def test_the_evals_commands_run_as_written_in_the_project(
    django_project: Path, tmp_path: Path
) -> None:
    (block,) = [block for block in blocks_in("sh") if "chatomon.evals" in block]
    commands = shell_commands(block)
    assert [command.split()[:3] for command in commands] == [["python", "-m", "chatomon.evals"]] * 3
    # `python` is this environment's, where chatomon is installed; the project's folder is
    # on the path as `manage.py` would put it.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = clean_environment(
        PATH=path, PYTHONPATH=f"{django_project}{os.pathsep}{ROOT}", OPENAI_API_KEY="sk-readme"
    )
    outputs = []
    for command in commands:
        # The README's own command line, through a shell as a user runs it.
        result = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        outputs.append(result.stdout)
    default_run, one_dataset, shown = outputs
    assert re.search(r"Overall: (\d+)/\1 passed", default_run), default_run[-500:]
    assert "basic_queries" in one_dataset and (tmp_path / "run.jsonl").stat().st_size > 0
    assert "basic_queries" in shown


def test_redis_channel_layer_example_passes_its_check() -> None:
    """The README's CHANNEL_LAYERS silences chatomon.W003; the same with 5 s raises it."""
    from django.test import override_settings  # noqa: PLC0415

    from tests.django.test_checks import REDIS_CACHE, chat_checks, ids  # noqa: PLC0415

    namespace: dict[str, object] = {}
    exec(textwrap.dedent(block_with('"socket_timeout": 10')), namespace)
    layers = namespace["CHANNEL_LAYERS"]
    with override_settings(CHANNEL_LAYERS=layers, CACHES=REDIS_CACHE):
        assert "chatomon.W003" not in ids(chat_checks(workers=2))
    short = textwrap.dedent(block_with('"socket_timeout": 10')).replace(
        '"socket_timeout": 10', '"socket_timeout": 5'
    )
    exec(short, namespace)
    with override_settings(CHANNEL_LAYERS=namespace["CHANNEL_LAYERS"], CACHES=REDIS_CACHE):
        assert "chatomon.W003" in ids(chat_checks(workers=2))
