"""The demo's data set: migrations, a deterministic seed, idempotent re-runs, system checks."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.demo.process import manage

SEED_LINE = re.compile(r"^(?P<kind>[a-z ]+): (?P<total>\d+) \((?P<new>\d+) new\)$")


def seeded(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Migrate and seed; {kind: (total, new)} from the command's lines."""
    manage(data_dir, "migrate", "--verbosity", "0", "--skip-checks")
    output = manage(data_dir, "demo_seed", "--skip-checks").stdout
    counts = {}
    for line in output.splitlines():
        match = SEED_LINE.match(line)
        assert match, line
        counts[match["kind"]] = (int(match["total"]), int(match["new"]))
    return counts


def dump(data_dir: Path) -> list[dict[str, Any]]:
    output = manage(data_dir, "dumpdata", "chatomon_demo", "--indent", "0", "--skip-checks").stdout
    return sorted(json.loads(output), key=lambda row: (row["model"], row["pk"]))


@pytest.fixture(scope="module")
def seeded_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, tuple[int, int]], list[dict[str, Any]]]:
    data_dir = tmp_path_factory.mktemp("demo")
    return seeded(data_dir), dump(data_dir)


def test_the_seed_is_a_small_company_of_a_few_hundred_rows(seeded_once) -> None:
    counts, rows = seeded_once
    assert set(counts) == {"materials", "suppliers", "parts", "projects", "project parts"}
    assert all(total == new for total, new in counts.values())
    assert 300 <= sum(total for total, _ in counts.values()) <= 2000
    projects = [row["fields"] for row in rows if row["model"] == "chatomon_demo.project"]
    assert any(not project["is_public"] for project in projects)
    assert all(project["parts"] for project in projects)
    parts = [row["fields"] for row in rows if row["model"] == "chatomon_demo.part"]
    assert {part["status"] for part in parts} == {"draft", "active", "retired"}


def test_every_machine_seeds_the_same_rows(seeded_once, tmp_path: Path) -> None:
    seeded(tmp_path)
    assert dump(tmp_path) == seeded_once[1]


def test_seeding_again_keeps_what_users_changed_and_restores_what_they_deleted(
    tmp_path: Path,
) -> None:
    first = seeded(tmp_path)
    manage(
        tmp_path,
        "shell",
        "-c",
        "from chatomon.demo.models import Part, Supplier;"
        "Part.objects.filter(number='P-1001').update(unit_cost='999.99');"
        "Supplier.objects.filter(name='Nordic Metalworks').delete()",
    )
    before = dump(tmp_path)
    again = seeded(tmp_path)
    assert {kind: total for kind, (total, _) in again.items()} == {
        kind: total for kind, (total, _) in first.items()
    }
    assert {kind: new for kind, (_, new) in again.items()} == {
        "materials": 0,
        "suppliers": 1,
        "parts": 0,
        "projects": 0,
        "project parts": 0,
    }
    after = dump(tmp_path)
    assert [row for row in after if row["model"] != "chatomon_demo.supplier"] == [
        row for row in before if row["model"] != "chatomon_demo.supplier"
    ]
    changed = [row for row in after if row["fields"].get("number") == "P-1001"]
    assert changed[0]["fields"]["unit_cost"] == "999.99"
    restored = [row for row in after if row["fields"].get("name") == "Nordic Metalworks"]
    assert len(restored) == 1


SCRIPTED = {"CHATOMON_PROVIDER": "tests.browser.provider.DemoScriptProvider"}
LOCAL_RUNTIME_MISSING = importlib.util.find_spec("llama_cpp") is None


def test_the_demo_settings_pass_the_system_checks(tmp_path: Path) -> None:
    result = manage(tmp_path, "check", "--fail-level", "WARNING", env=SCRIPTED)
    assert "System check identified no issues" in result.stdout


@pytest.mark.real_llm
@pytest.mark.skipif(LOCAL_RUNTIME_MISSING, reason="llama-cpp-python is not installed")
def test_the_default_local_provider_passes_the_system_checks(tmp_path: Path) -> None:
    result = manage(tmp_path, "check", "--fail-level", "WARNING")
    assert "System check identified no issues" in result.stdout


def test_the_migrations_match_the_models(tmp_path: Path) -> None:
    manage(tmp_path, "makemigrations", "chatomon_demo", "--check", "--dry-run", "--skip-checks")
