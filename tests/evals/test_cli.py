"""`python -m chatomon.evals`, run as a user runs it: in its own process.

The settings are tests/evals/settings.py; its configured provider (`Shrugging`) answers
every question alike, so the scripted cases pass only when `scripted` runs them.
"""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from chatomon.evals.cases import LEGACY_DATASETS, load_dataset
from chatomon.evals.cli import main, run

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
SETTINGS = "tests.evals.settings"
SHRUGGING = "tests.evals.providers.Shrugging"
PASSING = ["--dataset-file", str(DATA / "toy_pass.yaml")]
FAILING = ["--dataset-file", str(DATA / "toy_fail.yaml")]


def evals(*args: str, settings: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    if settings is not None:
        env["DJANGO_SETTINGS_MODULE"] = settings
    return subprocess.run(
        [sys.executable, "-m", "chatomon.evals", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_help_needs_no_django_settings() -> None:
    ran = evals("--help")
    assert ran.returncode == 0, ran.stderr
    for option in ("--settings", "--provider", "--model", "--dataset", "--dataset-file",
                   "--fixture", "--tier", "--tag", "--compare", "--verbose", "--trace-jsonl",
                   "--record", "scripted", "show FILE"):  # fmt: skip
        assert option in ran.stdout


def test_a_run_without_settings_exits_2() -> None:
    ran = evals("--provider", "scripted", *PASSING)
    assert ran.returncode == 2
    assert "Django settings are required" in ran.stderr


def test_a_scripted_run_that_passes_exits_0() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted", *PASSING)
    assert ran.returncode == 0, ran.stderr
    assert "toy_pass [scripted]: 2/2 passed (100%)" in ran.stdout
    assert ran.stdout.rstrip().endswith("Overall: 2/2 passed (100%)")
    assert ran.stderr == ""  # no progress bar without a terminal


def test_a_failing_case_exits_1_and_verbose_says_why() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted", *FAILING, "-v")
    assert ran.returncode == 1, ran.stderr
    assert "answer_coverage: turn 1: the answer lacks 'Bolt'" in ran.stdout
    quiet = evals("--settings", SETTINGS, "--provider", "scripted", *FAILING)
    assert quiet.returncode == 1
    assert "answer_coverage" not in quiet.stdout


def test_planned_orchestration_named_explicitly_is_rejected() -> None:
    ran = evals("--settings", SETTINGS, "--dataset", "planned_orchestration")
    assert ran.returncode == 2
    assert "planned_orchestration" in ran.stderr
    unknown = evals("--settings", SETTINGS, "--dataset", "no_such_dataset")
    assert unknown.returncode == 2
    assert "unknown dataset 'no_such_dataset'" in unknown.stderr


def test_settings_option_wins_over_the_environment() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted", *PASSING,
                settings="tests.evals.no_such_settings")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    broken = evals("--provider", "scripted", *PASSING, settings="tests.evals.no_such_settings")
    assert broken.returncode == 3
    assert "ModuleNotFoundError" in broken.stderr


def test_provider_option_wins_over_the_configured_provider() -> None:
    configured = evals("--settings", SETTINGS, *PASSING)
    assert configured.returncode == 1
    assert f"toy_pass [{SHRUGGING}]: 0/2 passed" in configured.stdout
    chosen = evals("--settings", SETTINGS, "--provider", "scripted", *PASSING)
    assert chosen.returncode == 0


def test_compare_wins_over_the_provider_option() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted",
                "--compare", f"scripted,{SHRUGGING}", *PASSING)  # fmt: skip
    assert ran.returncode == 1
    header = next(line for line in ran.stdout.splitlines() if line.startswith("case"))
    assert header.split() == ["case", "scripted", SHRUGGING]
    assert "list_parts" in ran.stdout and "Per dataset:" in ran.stdout
    assert "toy_pass [scripted]" not in ran.stdout  # not the single-provider report


def test_tier_and_tag_filters() -> None:
    tier = evals("--settings", SETTINGS, "--provider", "scripted", "--tier", "2", *PASSING)
    assert "toy_pass [scripted]: 1/1 passed" in tier.stdout and "greeting" in tier.stdout
    tag = evals("--settings", SETTINGS, "--provider", "scripted", "--tag", "read", *PASSING)
    assert "list_parts" in tag.stdout and "greeting" not in tag.stdout
    none = evals("--settings", SETTINGS, "--provider", "scripted", "--tag", "read",
                 "--tag", "no_tool", *PASSING)  # fmt: skip
    assert none.returncode == 2  # nothing run is not a pass
    assert "no case has the tags 'read' and 'no_tool' together" in none.stderr


def test_a_misspelled_tag_or_an_unknown_tier_is_refused_with_the_known_ones() -> None:
    tag = evals("--settings", SETTINGS, "--provider", "scripted", "--tag", "raed", *PASSING)
    assert tag.returncode == 2
    assert "no case has the tag 'raed'; did you mean 'read'?" in tag.stderr
    tier = evals("--settings", SETTINGS, "--provider", "scripted", "--tier", "9", *PASSING)
    assert tier.returncode == 2
    assert "no case is in tier 9 (tiers: " in tier.stderr


def test_trace_file_then_show(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    ran = evals("--settings", SETTINGS, "--provider", "scripted", *PASSING, *FAILING,
                "--trace-jsonl", str(trace))  # fmt: skip
    assert ran.returncode == 1
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [(r["dataset"], r["case"], r["passed"]) for r in records] == [
        ("toy_pass", "list_parts", True),
        ("toy_pass", "greeting", True),
        ("toy_fail", "wrong_answer", False),
    ]
    # The turns ran in the atom the settings configure.
    report = records[0]["reports"][0]
    assert report["atom_name"] == "evals_test"
    assert [result["kind"] for result in report["input"]] == ["PIIGuard"]
    shown = evals("show", str(trace))
    assert shown.returncode == 0
    assert "FAIL  toy_fail/wrong_answer  [scripted]" in shown.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "nonesuch"], "unknown provider 'nonesuch'"),
        (
            ["--provider", "scripted", "--dataset-file", "missing.yaml"],
            "missing.yaml: cannot be read",
        ),
    ],
)
def test_setup_errors_exit_3(args: list[str], message: str) -> None:
    ran = evals("--settings", SETTINGS, *args, *([] if "--dataset-file" in args else PASSING))
    assert ran.returncode == 3
    assert message in ran.stderr


def test_record_stores_the_run_and_its_turns_for_the_console(tmp_path: Path) -> None:
    database = tmp_path / "record.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHATOMON_EVALS_TEST_DB": str(database)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    record = "tests.evals.record_settings"
    migrated = subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--settings", record, "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr
    ran = subprocess.run(
        [sys.executable, "-m", "chatomon.evals", "--settings", record, "--provider", "scripted",
         "--record", *PASSING, *FAILING],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "recorded eval run 1: 2/3" in ran.stderr
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            'SELECT r.dataset, r."case", r.passed, r.turn_ids, '
            "(SELECT count(*) FROM chatomon_turn) FROM chatomon_console_evalcaseresult r "
            "ORDER BY r.id"
        ).fetchall()
    assert [(d, c, bool(p)) for d, c, p, _ids, _turns in rows] == [
        ("toy_pass", "list_parts", True),
        ("toy_pass", "greeting", True),
        ("toy_fail", "wrong_answer", False),
    ]
    assert rows[0][4] == 3  # each case's one turn is stored, for the turn page
    assert all(len(json.loads(ids)) == 1 for _d, _c, _p, ids, _t in rows)
    with sqlite3.connect(database) as connection:
        conversations = connection.execute(
            "SELECT count(DISTINCT conversation_id) FROM chatomon_turn"
        ).fetchone()[0]
    assert conversations == 3  # a conversation per case: none sees another's history


def test_record_needs_the_console() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted", "--record", *PASSING)
    assert ran.returncode == 3
    assert "--record needs 'chatomon.console' in INSTALLED_APPS" in ran.stderr


def test_the_console_script_is_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert scripts["chatomon-evals"] == "chatomon.evals.cli:run"
    monkeypatch.setattr(sys, "argv", ["chatomon-evals", "--provider", "scripted"])
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    with pytest.raises(SystemExit) as exited:
        run()
    assert exited.value.code == 2


def test_the_default_scripted_run_passes_every_legacy_dataset() -> None:
    # The deterministic CI gate: every packaged case plays its own script and passes.
    ran = evals("--settings", SETTINGS, "--provider", "scripted")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr
    for name in LEGACY_DATASETS:
        assert f"\n{name} [scripted]: " in f"\n{ran.stdout}"
    assert "planned_orchestration" not in ran.stdout
    overall = ran.stdout.rstrip().splitlines()[-1]
    passed, total = overall.split()[1].split("/")
    assert passed == total and int(total) >= 60


def test_fixture_option_runs_every_case_on_that_fixture() -> None:
    ran = evals("--settings", SETTINGS, "--provider", "scripted", "--fixture", "large", *PASSING)
    assert ran.returncode == 1  # the large fixture has no PartManager; the greeting still passes
    assert "toy_pass [scripted]: 1/2 passed" in ran.stdout


def test_a_terminal_gets_a_progress_bar_for_a_large_run() -> None:
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    with subprocess.Popen(
        [sys.executable, "-m", "chatomon.evals", "--settings", SETTINGS, "--provider", "scripted",
         "--dataset", "basic_queries"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=secondary, text=True,
    ) as process:  # fmt: skip
        os.close(secondary)
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closed: the process is done writing
                break
            if not chunk:
                break
            drawn += chunk
        report = process.stdout.read() if process.stdout else ""
    os.close(primary)
    assert process.returncode == 0
    cases = load_dataset("basic_queries").cases
    assert f"] {len(cases)}/{len(cases)} scripted basic_queries/{cases[-1].name}".encode() in drawn
    # The report on stdout carries no bar.
    assert report.startswith(f"basic_queries [scripted]: {len(cases)}/{len(cases)} passed")
    assert "#" not in report


def test_a_dataset_file_without_fixture_reads_the_projects_own_managers() -> None:
    project = ["--dataset-file", str(DATA / "project.yaml")]
    ran = evals("--settings", SETTINGS, "--provider", "scripted", *project)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "project [scripted]: 1/1 passed" in ran.stdout


def row(report: str, case: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(case))


def test_the_report_prices_providers_as_the_console_does() -> None:
    priced = evals("--settings", "tests.evals.record_settings", *PASSING)
    assert priced.returncode == 1
    # A round of 1000 input and 500 output tokens at 1.00 and 2.00 per million.
    assert row(priced.stdout, "list_parts").endswith(" 0.0020")
    unpriced = evals("--settings", SETTINGS, *PASSING)  # no console: no prices
    assert row(unpriced.stdout, "list_parts").endswith(" —")


def test_an_empty_compare_list_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--settings", "tests.evals.settings", "--compare", " , "])
    assert exited.value.code == 2
