"""Planned audit events: an allowlist that lets labels, counts and hashes through, nothing else.

A planned turn reports its steps to the existing audit hook (`AuditHook`) as
`planned_<event>` events. Before the hook sees them, every field is checked against
`PLANNED_AUDIT_FIELDS`: a key not listed is dropped, and so is a value of the wrong
type or outside its closed set. What can pass is therefore fixed by this module:
opaque lineage hashes, a role (never a profile), the trust-group check's outcome, match
source categories, a SHA-256 call hash, duplicate and progress flags, round budgets,
latency, token usage and cost, evidence-kind counts, coverage counts and a stable
terminal reason. Raw tool results, manager names, plans, profiles, trust groups and
exception text have no field that accepts them.

The generic audit layer behind the hook still applies its field redaction and size
limits; this allowlist comes first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, get_args

from chatomon.planned.config import REQUIRED_ROLES
from chatomon.planned.resolver import AUDIT_MATCH_SOURCES
from chatomon.public_errors import PLANNED_REASONS
from chatomon.schemas import PlannedCoverage, PlannedTaskStatus, TokenUsage

__all__ = [
    "PLANNED_AUDIT_FIELDS",
    "clean_planned_audit_fields",
    "emit_planned_audit_event",
    "planned_audit_lineage_id",
]

logger = logging.getLogger(__name__)

_EVENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
_LINEAGE_ID = re.compile(r"pl_[0-9a-f]{24}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_EVIDENCE_KINDS = frozenset({"schema", "path", "query", "calculation"})
_BUDGET_KEYS = frozenset({"used", "limit", "remaining", "root_used", "root_limit"})
_COVERAGE_STATUSES = frozenset({"complete", "partial", "none"})
_TASK_STATUSES = frozenset(get_args(PlannedTaskStatus))
_MATCH_SOURCES = frozenset(AUDIT_MATCH_SOURCES.values())

_DROP: Any = object()
"""What a checker returns for a value that may not pass."""


def planned_audit_lineage_id(turn_id: str, *parts: str) -> str:
    """A deterministic, opaque id of a turn's plan (or of one task of it, with parts).

    Examples:
        >>> planned_audit_lineage_id("turn-1", "t1") == planned_audit_lineage_id("turn-1", "t1")
        True
        >>> len(planned_audit_lineage_id("turn-1")), planned_audit_lineage_id("turn-1")[:3]
        (27, 'pl_')
    """
    # JSON keeps the parts apart: ("ab", "c") and ("a", "bc") hash differently.
    joined = json.dumps([turn_id, *parts], separators=(",", ":"))
    return "pl_" + hashlib.sha256(joined.encode()).hexdigest()[:24]


def _count(value: Any) -> Any:
    """A non-negative int (bool is no count)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else _DROP


def _amount(value: Any) -> Any:
    """A finite non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _DROP
    return value if math.isfinite(value) and value >= 0 else _DROP


def _flag(value: Any) -> Any:
    return value if isinstance(value, bool) else _DROP


def _matching(pattern: re.Pattern[str]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return value if isinstance(value, str) and pattern.fullmatch(value) else _DROP

    return check


def _one_of(allowed: frozenset[str]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return value if isinstance(value, str) and value in allowed else _DROP

    return check


def _match_sources(value: Any) -> Any:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return _DROP
    if not all(isinstance(item, str) and item in _MATCH_SOURCES for item in value):
        return _DROP  # one unknown item may be free text: the whole list goes
    return list(value)


def _counts(keys: frozenset[str]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, Mapping) or not set(value) <= keys:
            return _DROP
        if any(_count(item) is _DROP for item in value.values()):
            return _DROP
        return dict(value)

    return check


def _usage(value: Any) -> Any:
    if isinstance(value, TokenUsage):
        return {"input_tokens": value.input_tokens, "output_tokens": value.output_tokens}
    return _counts(frozenset({"input_tokens", "output_tokens"}))(value)


def _coverage(value: Any) -> Any:
    """Coverage as counts: how many tasks stayed unresolved, never which (plan ids)."""
    if isinstance(value, PlannedCoverage):
        value = {
            "status": value.status,
            "resolved": value.resolved,
            "total": value.total,
            "unresolved": len(value.unresolved),
        }
    if not isinstance(value, Mapping) or set(value) != {
        "status",
        "resolved",
        "total",
        "unresolved",
    }:
        return _DROP
    unresolved = value["unresolved"]
    if isinstance(unresolved, Sequence) and not isinstance(unresolved, str):
        unresolved = len(unresolved)  # wire.coverage_payload's list of {task_id, reason}
    numbers = (value["resolved"], value["total"], unresolved)
    if value["status"] not in _COVERAGE_STATUSES or any(_count(n) is _DROP for n in numbers):
        return _DROP
    return {**value, "unresolved": unresolved}


def _progress(value: Any) -> Any:
    """Whether a round made progress (a bool), or a task's status label."""
    if isinstance(value, bool) or (isinstance(value, str) and value in _TASK_STATUSES):
        return value
    return _DROP


PLANNED_AUDIT_FIELDS: Mapping[str, Callable[[Any], Any]] = MappingProxyType(
    {
        "event": _matching(_EVENT_NAME),
        "lineage_id": _matching(_LINEAGE_ID),
        "task_lineage_id": _matching(_LINEAGE_ID),
        "role": _one_of(frozenset(REQUIRED_ROLES)),
        "trust_group_valid": _flag,
        "match_sources": _match_sources,
        "call_hash": _matching(_SHA256),
        "duplicate": _flag,
        "progress": _progress,
        "round_budget": _counts(_BUDGET_KEYS),
        "latency_ms": _amount,
        "usage": _usage,
        "cost": _amount,
        "evidence_kinds": _counts(_EVIDENCE_KINDS),
        "coverage": _coverage,
        "terminal_reason": _one_of(frozenset(PLANNED_REASONS)),
    }
)
"""The allowlist: each field a planned audit event may carry, with its value check.

- event: a lower-case event label; lineage_id, task_lineage_id: `planned_audit_lineage_id`
  values; role: one of REQUIRED_ROLES; match_sources: AUDIT_MATCH_SOURCES categories;
  call_hash: a SHA-256 hex digest; trust_group_valid, duplicate: booleans; progress: a
  boolean or a task status label;
  round_budget: counts keyed used, limit, remaining, root_used, root_limit; latency_ms,
  cost: finite non-negative numbers; usage: a TokenUsage or its two token counts;
  evidence_kinds: counts by evidence kind; coverage: a PlannedCoverage or its JSON form,
  sent as {status, resolved, total, unresolved: a count}; terminal_reason: a stable
  planned reason.
"""


def clean_planned_audit_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that pass the allowlist, values normalized (a TokenUsage as counts)."""
    cleaned: dict[str, Any] = {}
    for key, value in fields.items():
        check = PLANNED_AUDIT_FIELDS.get(key) if isinstance(key, str) else None
        kept = _DROP if check is None else check(value)
        if kept is not _DROP:
            cleaned[key] = kept
    return cleaned


def emit_planned_audit_event(
    sink: Callable[[str, Mapping[str, Any]], None] | None,
    event: str,
    fields: Mapping[str, Any],
) -> dict[str, Any] | None:
    """Send `planned_<event>` with the allowlisted fields to the audit sink.

    Returns the payload sent, or None when there is no sink, the event label is not a
    plain lower-case label, or anything failed: an audit problem is logged and never
    becomes the turn's failure.
    """
    if sink is None:
        return None
    try:
        if not isinstance(event, str) or not _EVENT_NAME.fullmatch(event):
            logger.warning("planned audit event dropped: its label is not a plain label")
            return None
        cleaned = clean_planned_audit_fields(fields)
        sink("planned_" + event, cleaned)
    except Exception:
        # The payload was cleaned before the sink saw it: its traceback holds nothing private.
        logger.warning("planned audit sink failed for planned_%s", event, exc_info=True)
        return None
    return cleaned
