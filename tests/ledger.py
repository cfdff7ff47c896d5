"""The ledger of the reliability and security suites: what they tried, and what held.

Tests under `tests/reliability/` and `tests/security/` record into the session's `ledger`
fixture (`tests/conftest.py`) as they go; at the end of the run pytest prints one table
(`pytest_terminal_summary`): each fault injected and whether the product survived it, the
cases tried per surface with their errors, and the turns left `running` where a test
looked (which must be 0). A test still asserts what it checks: the ledger only reports.

```python
def test_database_down(ledger):
    ...
    ledger.fault("database down during an SSE turn", survived=ended_with_error_event)
    ledger.cases("HTTP chat/ bodies", tried=10_000, errors=0)
    ledger.running("SSE server (PostgreSQL)", count=0)
```
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["Ledger"]


@dataclass
class Ledger:
    """What one test session tried; `lines()` is the table printed at its end."""

    faults: Counter[tuple[str, bool]] = field(default_factory=Counter)
    tried: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    left_running: Counter[str] = field(default_factory=Counter)

    def fault(self, name: str, *, survived: bool) -> None:
        """One fault injected (`name` says what and where) and whether the product held."""
        self.faults[(name, survived)] += 1

    def cases(self, surface: str, *, tried: int, errors: int = 0) -> None:
        """`tried` inputs sent to `surface`, `errors` of which broke the contract."""
        self.tried[surface] += tried
        self.errors[surface] += errors

    def running(self, where: str, *, count: int) -> None:
        """The turns found still `running` in `where` once its test had finished."""
        self.left_running[where] += count

    def __bool__(self) -> bool:
        return bool(self.faults or self.tried or self.left_running)

    def lines(self) -> list[str]:
        """The summary table, one line per row (empty when nothing was recorded)."""
        if not self:
            return []
        out: list[str] = []
        if self.faults:
            names = sorted({name for name, _ in self.faults})
            width = max(len(name) for name in names)
            out.append(f"{'fault injected':<{width}}  injected  survived")
            for name in names:
                survived = self.faults[(name, True)]
                injected = survived + self.faults[(name, False)]
                out.append(f"{name:<{width}}  {injected:>8}  {survived:>8}")
            out.append("")
        if self.tried:
            width = max(len(surface) for surface in self.tried)
            out.append(f"{'surface':<{width}}  {'cases':>8}  {'errors':>6}")
            for surface in sorted(self.tried):
                tried, errors = self.tried[surface], self.errors[surface]
                out.append(f"{surface:<{width}}  {tried:>8}  {errors:>6}")
            out.append("")
        running = sum(self.left_running.values())
        checked = len(self.left_running)
        out.append(f"turns left running: {running} (in {checked} places checked)")
        return out
