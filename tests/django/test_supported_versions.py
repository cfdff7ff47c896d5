"""pyproject claims the Django versions these tests run on, and no older one.

`make test` runs this folder on Django 5.2 (Python 3.11, `.venv`) and on the newest Django 6
(Python 3.12, `.venv-django6`), each resolved from pyproject's `django` extra. So on each
interpreter the Django under test must be the one the classifiers name and the lowest
release the extra admits there: a range reaching below it would admit a Django no test
ran on, and a newer release resolved without a classifier would be tested but unclaimed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import django
from packaging.requirements import Requirement
from packaging.version import Version

PROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
RUNNING = f"{django.VERSION[0]}.{django.VERSION[1]}"


def django_requirement_here() -> Requirement:
    """The `django` requirement of the `django` extra whose marker this interpreter meets."""
    found = [
        requirement
        for requirement in map(Requirement, PROJECT["project"]["optional-dependencies"]["django"])
        if requirement.name == "django"
        and (requirement.marker is None or requirement.marker.evaluate())
    ]
    assert len(found) == 1, f"one django requirement per interpreter, found {found}"
    return found[0]


def test_the_django_under_test_is_a_claimed_version() -> None:
    assert f"Framework :: Django :: {RUNNING}" in PROJECT["project"]["classifiers"]


def test_the_requirement_starts_at_the_django_under_test() -> None:
    specifier = django_requirement_here().specifier
    lowest = [Version(s.version) for s in specifier if s.operator == ">="]
    assert lowest == [Version(RUNNING)], f"{specifier} admits releases before {RUNNING}"
    assert specifier.contains(django.get_version())
