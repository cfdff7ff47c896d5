"""The hand-run benchmark scripts start as their docstrings say: `python tests/benchmarks/X.py`.

They are not part of `make bench` (each runs a real model for minutes to an hour), so
nothing else would notice one that cannot even import from where it is documented to run.
`--help` parses the command line and exits before any model loads.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAND_RUN = ["local_demo.py", "local_demo_prompts.py", "local_evals.py", "local_model.py"]


@pytest.mark.parametrize("script", HAND_RUN)
def test_a_hand_run_benchmark_starts_from_the_project_root(script: str) -> None:
    ran = subprocess.run(
        [sys.executable, str(Path("tests") / "benchmarks" / script), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "usage:" in ran.stdout
