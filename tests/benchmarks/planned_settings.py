"""Settings of the planned benchmark's Django series: the transport benchmark's, with every
role of a planned turn on a profile of its own (`planned_roles.RoleProvider`).

Environment: CHATOMON_BENCH_PLANNED ("1": planned turns on; "0": the tool loop only, for
the legacy figures on the same questions) and CHATOMON_BENCH_DELAY (seconds each role
waits before it answers; default 0: every role answers at once).
"""

from __future__ import annotations

import os

from tests.benchmarks.transports_settings import *  # noqa: F403
from tests.benchmarks.transports_settings import CHATOMON

ROLES = ("planner", "simple_executor", "complex_executor", "synthesizer", "fallback_executor")
PROVIDER = "tests.benchmarks.planned_roles.RoleProvider"
_delay = float(os.environ.get("CHATOMON_BENCH_DELAY", "0"))

CHATOMON = {
    **CHATOMON,
    "provider": PROVIDER,
    "provider_config": {"role": "legacy", "delay_seconds": _delay},
    "provider_profiles": {
        role: {"provider": PROVIDER, "provider_config": {"role": role, "delay_seconds": _delay}}
        for role in ROLES
    },
    "planned": {
        "enabled": os.environ.get("CHATOMON_BENCH_PLANNED", "1") == "1",
        "roles": {role: role for role in ROLES},
    },
}
