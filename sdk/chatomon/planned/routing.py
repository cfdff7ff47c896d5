"""Executor routing: the cheap simple executor only for a plainly simple task.

A task goes to the simple executor only when every approved fact about it is simple: the
resolver found one manager, the data is at most one relation away, no earlier attempt
failed, and the task has no routing feature (no dependency, no calculation, at most one
query). Anything else, or any doubt, goes to the complex executor.
"""

from __future__ import annotations

from typing import Literal

from chatomon.planned.models import PlannedTask

__all__ = ["ExecutorRole", "select_executor_role"]

ExecutorRole = Literal["simple_executor", "complex_executor"]
"""The executor roles a task may be routed to (the fallback executor is a retry's)."""

MAX_SIMPLE_PATH_DEPTH = 1
"""Relations the simple executor may cross."""


def select_executor_role(
    task: PlannedTask, *, unique_manager: bool, path_depth: int, prior_failure: bool
) -> ExecutorRole:
    """Choose the simple executor only when every approved fact is simple.

    Args:
        task: The task to run.
        unique_manager: Whether the resolver settled on exactly one manager.
        path_depth: Relations between the task's managers (0: one manager).
        prior_failure: Whether an attempt of this task already failed.

    Raises:
        ValueError: When path_depth is negative.
    """
    if path_depth < 0:
        msg = f"path_depth must be 0 or more, not {path_depth}"
        raise ValueError(msg)
    simple = (
        unique_manager
        and path_depth <= MAX_SIMPLE_PATH_DEPTH
        and not prior_failure
        and not task.features
    )
    return "simple_executor" if simple else "complex_executor"
