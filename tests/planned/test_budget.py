"""RoundBudget: global and per-root ledgers, enforced, charged atomically."""

from __future__ import annotations

import threading

import pytest

from chatomon.planned.budget import BudgetExhaustedError, RoundBudget, RoundBudgetExhausted


def test_the_error_is_the_references() -> None:
    assert issubclass(RoundBudgetExhausted, RuntimeError)
    assert BudgetExhaustedError is RoundBudgetExhausted
    assert RoundBudgetExhausted.public_reason == "budget_exhausted"


def test_a_fresh_budget() -> None:
    budget = RoundBudget(24, 8)
    assert (budget.limit, budget.root_limit, budget.used, budget.remaining) == (24, 8, 0, 24)
    assert budget.used_by_root("t1") == 0
    assert budget.roles_used == ()


def test_global_requests_charge_the_global_ledger_only() -> None:
    budget = RoundBudget(3, 1)
    budget.consume_global("planner")
    budget.consume_global("synthesizer")
    assert (budget.used, budget.remaining) == (2, 1)
    assert budget.used_by_root("t1") == 0


def test_subtree_requests_charge_both_ledgers() -> None:
    budget = RoundBudget(10, 3)
    budget.consume_subtree("t1", "simple_executor")
    budget.consume_subtree("t1", "complex_executor")
    budget.consume_subtree("t2", "simple_executor")
    assert budget.used == 3
    assert (budget.used_by_root("t1"), budget.used_by_root("t2")) == (2, 1)


def test_global_exhaustion() -> None:
    budget = RoundBudget(2, 5)
    budget.consume_global("planner")
    budget.consume_subtree("t1", "simple_executor")
    with pytest.raises(RoundBudgetExhausted) as caught:
        budget.consume_global("synthesizer")
    error = caught.value
    assert (error.scope, error.role, error.root_id) == ("global", "synthesizer", None)
    assert (
        str(error)
        == "global round budget of 2 for the turn is exhausted (synthesizer request refused)"
    )
    assert budget.used == 2
    assert budget.remaining == 0


def test_subtree_exhaustion() -> None:
    budget = RoundBudget(10, 2)
    budget.consume_subtree("t1", "simple_executor")
    budget.consume_subtree("t1", "complex_executor")
    with pytest.raises(RoundBudgetExhausted) as caught:
        budget.consume_subtree("t1", "fallback_executor")
    error = caught.value
    assert (error.scope, error.role, error.root_id) == ("subtree", "fallback_executor", "t1")
    assert str(error) == (
        "subtree round budget of 2 for root 't1' is exhausted (fallback_executor request refused)"
    )
    # another root still has its own rounds
    budget.consume_subtree("t2", "simple_executor")
    assert budget.used_by_root("t2") == 1


def test_a_refused_subtree_request_charges_neither_ledger() -> None:
    budget = RoundBudget(10, 1)
    budget.consume_subtree("t1", "simple_executor")
    with pytest.raises(RoundBudgetExhausted):
        budget.consume_subtree("t1", "complex_executor")
    assert budget.used == 1  # the global ledger was not charged for the refused request
    assert budget.used_by_root("t1") == 1
    assert budget.roles_used == ("simple_executor",)


def test_a_globally_refused_subtree_request_charges_neither_ledger() -> None:
    budget = RoundBudget(1, 5)
    budget.consume_global("planner")
    with pytest.raises(RoundBudgetExhausted) as caught:
        budget.consume_subtree("t1", "simple_executor")
    assert caught.value.scope == "global"
    assert budget.used_by_root("t1") == 0
    assert budget.used == 1
    assert budget.roles_used == ("planner",)


def test_the_global_limit_wins_over_room_in_the_subtree() -> None:
    budget = RoundBudget(3, 3)
    budget.consume_subtree("t1", "simple_executor")
    budget.consume_subtree("t2", "simple_executor")
    budget.consume_subtree("t3", "simple_executor")
    with pytest.raises(RoundBudgetExhausted) as caught:
        budget.consume_subtree("t1", "simple_executor")
    assert caught.value.scope == "global"


def test_roles_used_in_first_use_order() -> None:
    budget = RoundBudget(10, 10)
    for role in ("planner", "complex_executor", "planner", "simple_executor", "complex_executor"):
        if role == "planner":
            budget.consume_global(role)
        else:
            budget.consume_subtree("t1", role)
    assert budget.roles_used == ("planner", "complex_executor", "simple_executor")


def test_concurrent_charges_never_exceed_the_limits() -> None:
    budget = RoundBudget(50, 30)
    refused: list[str] = []
    start = threading.Barrier(8)

    def spend(root: str) -> None:
        start.wait()
        for _ in range(20):
            try:
                budget.consume_subtree(root, "simple_executor")
            except RoundBudgetExhausted as error:
                refused.append(error.scope)

    threads = [threading.Thread(target=spend, args=(f"t{i % 2}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.used == 50
    assert budget.used_by_root("t0") + budget.used_by_root("t1") == 50
    assert max(budget.used_by_root("t0"), budget.used_by_root("t1")) <= 30
    assert len(refused) == 8 * 20 - 50


@pytest.mark.parametrize(
    ("max_rounds", "per_root", "message"),
    [
        (0, 1, "max_rounds must be a positive integer, not 0"),
        (1, -1, "max_rounds_per_root must be a positive integer, not -1"),
        (True, 1, "max_rounds must be a positive integer, not True"),
        (2.5, 1, "max_rounds must be a positive integer, not 2.5"),
        (1, "8", "max_rounds_per_root must be a positive integer, not '8'"),
    ],
)
def test_limits_are_positive_integers(max_rounds: object, per_root: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:  # noqa: PT011 - the message is checked below
        RoundBudget(max_rounds, per_root)
    assert str(caught.value) == message
