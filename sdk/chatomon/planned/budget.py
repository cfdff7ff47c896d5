"""Round budgets: every provider request of a planned turn is charged before it is made.

One global ledger bounds the whole turn (planner, executors, synthesizer); one ledger per
root bounds each subtree (a root and its dynamic children), so that one stubborn task
cannot spend the rounds of the others. A request that would exceed either limit raises
`RoundBudgetExhausted` and charges nothing.
"""

from __future__ import annotations

import threading
from typing import ClassVar, Literal

__all__ = ["BudgetExhaustedError", "RoundBudget", "RoundBudgetExhausted"]

BudgetScope = Literal["global", "subtree"]
"""Which ledger refused a request."""


class RoundBudgetExhausted(RuntimeError):  # noqa: N818 - the reference's name
    """Raised when a provider request would exceed a hard round limit.

    Attributes:
        scope: "global" (the turn's ledger) or "subtree" (one root's).
        role: The role whose request was refused.
        root_id: The root whose subtree ledger is full; None for the global one.
    """

    public_reason: ClassVar[str] = "budget_exhausted"

    def __init__(
        self, scope: BudgetScope, role: str, limit: int, root_id: str | None = None
    ) -> None:
        self.scope: BudgetScope = scope
        self.role = role
        self.root_id = root_id
        where = "the turn" if root_id is None else f"root {root_id!r}"
        super().__init__(
            f"{scope} round budget of {limit} for {where} is exhausted ({role} request refused)"
        )


BudgetExhaustedError = RoundBudgetExhausted
"""The reference's other name of RoundBudgetExhausted."""


class RoundBudget:
    """Track every planned provider request in one global ledger.

    Global-only calls (planner and synthesizer) use `consume_global`. Executor calls use
    `consume_subtree`, which atomically charges both the global and owning-root ledgers.

    Args:
        max_rounds: Requests the whole turn may make (at least 1).
        max_rounds_per_root: Requests one root's subtree may make (at least 1).

    Raises:
        ValueError: When a limit is not a positive integer.
    """

    def __init__(self, max_rounds: int, max_rounds_per_root: int) -> None:
        for name, value in (
            ("max_rounds", max_rounds),
            ("max_rounds_per_root", max_rounds_per_root),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, not {value!r}"
                raise ValueError(msg)
        self._limit = max_rounds
        self._root_limit = max_rounds_per_root
        self._used = 0
        self._by_root: dict[str, int] = {}
        self._roles: dict[str, None] = {}  # insertion-ordered set
        # Executors of different roots may run in threads of a sync bridge: check-then-charge
        # must be one step there too.
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        """The global limit."""
        return self._limit

    @property
    def root_limit(self) -> int:
        """The limit of each root's subtree."""
        return self._root_limit

    @property
    def used(self) -> int:
        """Requests charged to the global ledger."""
        return self._used

    @property
    def remaining(self) -> int:
        """Requests the global ledger still allows."""
        return self._limit - self._used

    @property
    def roles_used(self) -> tuple[str, ...]:
        """The roles charged so far, in first-use order."""
        return tuple(self._roles)

    def used_by_root(self, root_id: str) -> int:
        """Requests charged to the subtree of `root_id`."""
        return self._by_root.get(root_id, 0)

    def consume_global(self, role: str) -> None:
        """Charge one request of `role` to the global ledger.

        Raises:
            RoundBudgetExhausted: (scope "global") when the turn has no request left.
        """
        with self._lock:
            self._check_global(role)
            self._charge(role)

    def consume_subtree(self, root_id: str, role: str) -> None:
        """Charge one request of `role` to the global ledger and the subtree of `root_id`.

        Both ledgers are checked before either is charged.

        Raises:
            RoundBudgetExhausted: (scope "global" or "subtree") when either is full.
        """
        with self._lock:
            self._check_global(role)
            if self.used_by_root(root_id) >= self._root_limit:
                raise RoundBudgetExhausted("subtree", role, self._root_limit, root_id)
            self._charge(role)
            self._by_root[root_id] = self.used_by_root(root_id) + 1

    def _check_global(self, role: str) -> None:
        if self._used >= self._limit:
            raise RoundBudgetExhausted("global", role, self._limit)

    def _charge(self, role: str) -> None:
        self._used += 1
        self._roles.setdefault(role, None)
