"""The distribution: package list, the wheel's contents, imports without optional extras."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_python_package_on_disk_is_listed_in_pyproject() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {
        "chatomon." + ".".join(path.parent.relative_to(ROOT / "sdk" / "chatomon").parts)
        if path.parent != ROOT / "sdk" / "chatomon"
        else "chatomon"
        for path in (ROOT / "sdk" / "chatomon").rglob("__init__.py")
    }
    on_disk |= {
        ".".join(("chatomon", "console", *path.parent.relative_to(ROOT / "console").parts))
        for path in (ROOT / "console").rglob("__init__.py")
    }
    assert on_disk <= listed, f"missing from pyproject packages: {sorted(on_disk - listed)}"


def test_import_needs_no_django_settings_and_no_vendor_sdk() -> None:
    code = (
        "import sys, chatomon;"
        "heavy = {'django', 'openai', 'anthropic', 'ollama', 'google.genai', 'ipywidgets'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert result.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("chatomon-*.whl")
    return path


def test_wheel_ships_packages_templates_and_static(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "chatomon/__init__.py",
        "chatomon/py.typed",
        "chatomon/schemas.py",
        "chatomon/_engine/chain.py",
        "chatomon/orbitals/base.py",
        "chatomon/console/apps.py",
        "chatomon/console/templates/chatomon_console/base.html",
        "chatomon/console/static/chatomon_console/console.css",
    ):
        assert required in names, required
    assert not any(name.startswith(("tests/", "sdk/")) for name in names)
