"""The distribution: package list, the wheel's contents, imports without optional extras."""

from __future__ import annotations

import shutil
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
        "heavy = {'django', 'channels', 'redis', 'uvicorn', 'django_htmx', 'openai', 'anthropic',"
        " 'ollama', 'google.genai', 'ipywidgets', 'IPython', 'pandas', 'llama_cpp'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert result.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources: no build/ folder of an earlier build
    (whose stale files setuptools would ship) and nothing written into the checkout."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for top in {
        folder.split("/")[0] for folder in PYPROJECT["tool"]["setuptools"]["package-dir"].values()
    }:
        shutil.copytree(ROOT / top, source / top, ignore=shutil.ignore_patterns("__pycache__"))
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
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("chatomon-*.whl")
    return path


def source_files() -> set[str]:
    """Every file of the package folders in pyproject, by its path inside the wheel."""
    expected = set()
    for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(ROOT / folder).as_posix()
                expected.add(f"{package.replace('.', '/')}/{relative}")
    return expected


def test_wheel_ships_every_module_template_and_static_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = source_files()
    for sample in (
        "chatomon/py.typed",
        "chatomon/demo/templates/chatomon_demo/home.html",
        "chatomon/console/templates/chatomon_console/base.html",
        "chatomon/console/static/chatomon_console/console.css",
        "chatomon/django/templates/chatomon/chat_widget.html",
        "chatomon/django/static/chatomon/chat-widget.js",
        "chatomon/django/static/chatomon/chat-widget.css",
    ):
        assert sample in expected, sample
    assert sorted(expected - names) == []
    assert not any(name.startswith(("tests/", "sdk/")) for name in names)
    # The widget ships with chatomon.django only, not a second copy with the console.
    assert not any(name.startswith("chatomon/console/static/chatomon/") for name in names)


INSTALLED_SITE = """
import sys
from pathlib import Path

import django
from django.conf import settings

settings.configure(
    SECRET_KEY="wheel-test",
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    INSTALLED_APPS=[
        "django.contrib.contenttypes", "django.contrib.auth", "django.contrib.sessions",
        "django.contrib.messages", "django.contrib.staticfiles", "django_htmx",
        *(["template_partials"] if django.VERSION < (6, 0) else []),
        "chatomon.django", "chatomon.console",
    ],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ],
    ROOT_URLCONF=__name__,
    TEMPLATES=[{
        "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
        "OPTIONS": {"context_processors": [
            "django.template.context_processors.request",
            "django.contrib.auth.context_processors.auth",
            "django.contrib.messages.context_processors.messages",
        ]},
    }],
    STATIC_URL="/static/",
    LOGIN_URL="chatomon_console:login",
    USE_TZ=True,
    CHATOMON={"enabled": False},
)
django.setup()
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from django.urls import include, path

urlpatterns = [path("console/", include("chatomon.console.urls"))]
import chatomon
assert Path(chatomon.__file__).is_relative_to(Path(sys.prefix)), chatomon.__file__
call_command("migrate", verbosity=0)
User.objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
client = Client()
client.force_login(User.objects.get(username="staff"))
page = client.get("/console/")
assert page.status_code == 200, page.status_code
assert b"chatomon console" in page.content
assert finders.find("chatomon_console/htmx.min.js") and finders.find("chatomon/chat-widget.js")
print("rendered", len(page.content))
"""


# A site with chatomon.django and without the console: the widget's template and static
# files are found, and found inside chatomon.django's installed folder.
WIDGET_SITE = """
import sys
from pathlib import Path

import django
from django.conf import settings

settings.configure(
    SECRET_KEY="wheel-test",
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    INSTALLED_APPS=[
        "django.contrib.contenttypes", "django.contrib.auth", "django.contrib.staticfiles",
        "chatomon.django",
    ],
    TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
    STATIC_URL="/static/",
    USE_TZ=True,
    CHATOMON={"enabled": True},
)
django.setup()
import chatomon.django
from django.contrib.staticfiles import finders
from django.template import engines
from django.template.loader import get_template

app = Path(chatomon.django.__file__).resolve().parent
assert app.is_relative_to(Path(sys.prefix).resolve()), app
for name in ("chatomon/chat-widget.js", "chatomon/chat-widget.css"):
    found = finders.find(name)
    assert found and Path(found).resolve() == app / "static" / name, (name, found)
origin = Path(get_template("chatomon/chat_widget.html").origin.name).resolve()
assert origin == app / "templates" / "chatomon" / "chat_widget.html", origin
page = engines["django"].from_string(
    "{% load chatomon_widget %}{% chatomon_chat_widget endpoint='/chat/' %}"
).render({})
assert 'src="/static/chatomon/chat-widget.js"' in page, page
assert "data-chatomon-chat" in page, page
print("rendered", len(page))
"""


def run_on_the_installed_wheel(wheel: Path, tmp_path: Path, site: str) -> str:
    """Run a site script with the wheel unpacked into a fresh virtual environment."""
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    target = next((fresh / "lib").glob("python*/site-packages"))
    # The wheel's files, unpacked as pip would; its dependencies come from this test's
    # environment, appended after the fresh site-packages, never the source checkout.
    zipfile.ZipFile(wheel).extractall(target)
    dependencies = [p for p in sys.path if p.endswith("site-packages")]
    script = tmp_path / "site.py"
    script.write_text(site)
    result = subprocess.run(
        [str(fresh / "bin" / "python"), str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join([str(target), *dependencies])},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_installed_wheel_renders_a_console_page(wheel: Path, tmp_path: Path) -> None:
    """The wheel alone (no checkout on the path) serves the console's templates and static."""
    assert run_on_the_installed_wheel(wheel, tmp_path, INSTALLED_SITE).startswith("rendered")


def test_the_installed_wheel_ships_the_widget_with_chatomon_django(
    wheel: Path, tmp_path: Path
) -> None:
    """Without the console, chatomon.django alone serves the widget's template and static."""
    assert run_on_the_installed_wheel(wheel, tmp_path, WIDGET_SITE).startswith("rendered")
