"""Turn-local evidence: immutable records of tool results and calculations, and their links.

An `EvidenceRecord` snapshots a JSON payload (deep-frozen: mappings become read-only
views, lists tuples) with read-only provenance, so no task can change what another read.
An `EvidenceStore` holds one turn's records in order and links them explicitly to the
requirements they satisfy; `canonical_call_identity` lets a repeated tool call reuse the
record of the first one instead of running again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

from chatomon.planned.models import EvidenceRequirement, PlannedTask

__all__ = [
    "DuplicateEvidenceError",
    "EvidenceError",
    "EvidenceKind",
    "EvidenceLinkError",
    "EvidenceNotFoundError",
    "EvidenceRecord",
    "EvidenceStore",
    "IncompatibleEvidenceError",
    "InvalidEvidenceError",
    "canonical_call_identity",
]

EvidenceKind = Literal["schema", "path", "query", "calculation"]
"""What an evidence record holds; the same kinds as a requirement's."""

MAX_PAYLOAD_DEPTH = 64
"""Nesting deeper than this is refused rather than recursed into."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class EvidenceError(ValueError):
    """Base class for invalid evidence or evidence links."""


class InvalidEvidenceError(EvidenceError):
    """Raised when an evidence record cannot be represented safely."""


class DuplicateEvidenceError(EvidenceError):
    """Raised when a store receives an evidence ID it already contains."""


class EvidenceNotFoundError(EvidenceError):
    """Raised when an evidence link references an unknown record."""


class IncompatibleEvidenceError(EvidenceError):
    """Raised when a requirement cannot be satisfied by an evidence record."""


EvidenceLinkError = IncompatibleEvidenceError
"""The reference's other name of IncompatibleEvidenceError."""


def _freeze(value: Any, where: str, depth: int = 0) -> Any:
    """A deep read-only copy of a JSON value; InvalidEvidenceError names what is not JSON."""
    if depth > MAX_PAYLOAD_DEPTH:
        msg = f"{where}: nested deeper than {MAX_PAYLOAD_DEPTH} levels"
        raise InvalidEvidenceError(msg)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{where}: {value!r} is not a JSON number"
            raise InvalidEvidenceError(msg)
        return value
    if isinstance(value, Mapping):
        frozen: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                msg = f"{where}: key {key!r} is not a string"
                raise InvalidEvidenceError(msg)
            frozen[key] = _freeze(item, f"{where}.{key}", depth + 1)
        return MappingProxyType(frozen)
    if isinstance(value, list | tuple):
        return tuple(_freeze(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
    msg = f"{where}: a {type(value).__name__} is not a JSON value"
    raise InvalidEvidenceError(msg)


def _thaw(value: Any) -> Any:
    """A plain JSON copy (dicts and lists) of a frozen value."""
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def canonical_call_identity(name: str, args: Mapping[str, Any]) -> str:
    """Return canonical JSON for one tool name and its JSON arguments.

    Sorted keys and compact separators: two calls with the same name and arguments have
    the same identity whatever the order of their keys.

    >>> canonical_call_identity("query", {"manager": "part", "limit": 5})
    '{"args":{"limit":5,"manager":"part"},"name":"query"}'

    Raises:
        InvalidEvidenceError: When the arguments are not JSON (NaN, non-string keys...).
    """
    plain = _thaw(_freeze({"name": name, "args": args}, "call"))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class EvidenceRecord:
    """One immutable piece of evidence: a tool result or a calculation, with its origin.

    Attributes:
        id: Unique in the turn ("e1", ...: `EvidenceStore.next_id`).
        task_id: The task that produced it.
        kind: What it holds.
        payload: A deep-frozen snapshot of the JSON payload.
        provenance: Read-only facts of its origin (tool, call id, ...), deep-frozen too.
        call_identity: The canonical identity of the tool call that produced it, if any.

    Raises:
        InvalidEvidenceError: When a field is empty or of the wrong kind, or the payload or
            provenance is not JSON (NaN, non-string keys, other objects).
    """

    id: str
    task_id: str
    kind: EvidenceKind
    payload: Any
    provenance: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    call_identity: str | None = None

    def __post_init__(self) -> None:
        for name in ("id", "task_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                msg = f"evidence {name} must be a non-empty string, not {value!r}"
                raise InvalidEvidenceError(msg)
        if self.kind not in get_args(EvidenceKind):
            msg = f"evidence {self.id}: unknown kind {self.kind!r}"
            raise InvalidEvidenceError(msg)
        provenance: object = self.provenance
        identity: object = self.call_identity
        if not isinstance(provenance, Mapping):
            msg = f"evidence {self.id}: provenance must be a mapping"
            raise InvalidEvidenceError(msg)
        if not isinstance(identity, str | None):
            msg = f"evidence {self.id}: call_identity must be a string"
            raise InvalidEvidenceError(msg)
        # Snapshots, so that the caller's later changes to its dicts never reach the record.
        object.__setattr__(self, "payload", _freeze(self.payload, f"{self.id}.payload"))
        object.__setattr__(self, "provenance", _freeze(provenance, f"{self.id}.provenance"))

    def __hash__(self) -> int:
        # The frozen payload is not hashable; equal records always share these fields.
        return hash((self.id, self.task_id, self.kind, self.call_identity))

    @property
    def call_hash(self) -> str | None:
        """The SHA-256 hex digest of call_identity (what audit events may carry), or None."""
        if self.call_identity is None:
            return None
        return hashlib.sha256(self.call_identity.encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready copy: id, task_id, kind, payload, provenance, call_identity."""
        return {
            "id": self.id,
            "task_id": self.task_id,
            "kind": self.kind,
            "payload": _thaw(self.payload),
            "provenance": _thaw(self.provenance),
            "call_identity": self.call_identity,
        }


class EvidenceStore:
    """Turn-local evidence collection with explicit requirement linking.

    Records remain in memory until the owning turn ends. Methods return the immutable
    records they add or link; this store does not persist evidence.
    """

    def __init__(self) -> None:
        self._records: dict[str, EvidenceRecord] = {}
        self._by_identity: dict[str, EvidenceRecord] = {}
        # (task id, requirement) -> the evidence ids linked to it, in link order
        self._links: dict[tuple[str, EvidenceRequirement], list[str]] = {}
        self._issued = 0

    @property
    def records(self) -> tuple[EvidenceRecord, ...]:
        """Every record, in the order they were added."""
        return tuple(self._records.values())

    def next_id(self) -> str:
        """A fresh evidence id ("e1", "e2", ...), reserved even if never added."""
        while True:
            self._issued += 1
            candidate = f"e{self._issued}"
            if candidate not in self._records:
                return candidate

    def add(
        self,
        record: EvidenceRecord,
        *,
        requirement: tuple[str, EvidenceRequirement] | None = None,
    ) -> EvidenceRecord:
        """Add and return a record, optionally linking it to a requirement.

        `requirement` is (task id, requirement). The record is added only when the link
        is valid too.

        Raises:
            DuplicateEvidenceError: When the store already holds a record with its id.
            IncompatibleEvidenceError: When the requirement asks for another kind.
        """
        if record.id in self._records:
            msg = f"evidence {record.id!r} is already in the store"
            raise DuplicateEvidenceError(msg)
        if requirement is not None:
            _check_compatible(record, requirement[1])
        self._records[record.id] = record
        # The first record of a call is the one reused; a later one never replaces it.
        if record.call_identity is not None:
            self._by_identity.setdefault(record.call_identity, record)
        if requirement is not None:
            self._link(record, *requirement)
        return record

    def link(
        self, evidence_id: str, task_id: str, requirement: EvidenceRequirement
    ) -> EvidenceRecord:
        """Link a known record to a task's requirement (again: no effect) and return it.

        Raises:
            EvidenceNotFoundError: When no record has `evidence_id`.
            IncompatibleEvidenceError: When the requirement asks for another kind.
        """
        record = self.get(evidence_id)
        _check_compatible(record, requirement)
        self._link(record, task_id, requirement)
        return record

    def get(self, evidence_id: str) -> EvidenceRecord:
        """The record with id `evidence_id`.

        Raises:
            EvidenceNotFoundError: When there is none.
        """
        try:
            return self._records[evidence_id]
        except KeyError:
            msg = f"unknown evidence {evidence_id!r}"
            raise EvidenceNotFoundError(msg) from None

    def by_identity(self, call_identity: str) -> EvidenceRecord | None:
        """The first record of the call with this canonical identity, for reuse; or None."""
        return self._by_identity.get(call_identity)

    def for_task(self, task_id: str) -> tuple[EvidenceRecord, ...]:
        """The records the task produced or linked, in the order they were added."""
        linked = {
            evidence_id
            for (owner, _), ids in self._links.items()
            if owner == task_id
            for evidence_id in ids
        }
        return tuple(
            record
            for record in self._records.values()
            if record.task_id == task_id or record.id in linked
        )

    def linked(self, task_id: str, requirement: EvidenceRequirement) -> tuple[EvidenceRecord, ...]:
        """The records linked to one requirement of a task, in link order."""
        return tuple(self._records[i] for i in self._links.get((task_id, requirement), ()))

    def unmet(self, task: PlannedTask) -> tuple[EvidenceRequirement, ...]:
        """The task's requirements no record is linked to yet, in the task's order.

        Equal requirements (two undescribed queries) each need their own record.
        """
        used: Counter[EvidenceRequirement] = Counter()
        missing: list[EvidenceRequirement] = []
        for requirement in task.requirements:
            used[requirement] += 1
            if len(self._links.get((task.id, requirement), ())) < used[requirement]:
                missing.append(requirement)
        return tuple(missing)

    def satisfied(self, task: PlannedTask) -> bool:
        """Whether every requirement of the task has a linked record."""
        return not self.unmet(task)

    def _link(self, record: EvidenceRecord, task_id: str, requirement: EvidenceRequirement) -> None:
        ids = self._links.setdefault((task_id, requirement), [])
        if record.id not in ids:
            ids.append(record.id)


def _check_compatible(record: EvidenceRecord, requirement: EvidenceRequirement) -> None:
    if record.kind != requirement.kind:
        msg = (
            f"evidence {record.id!r} is {record.kind} evidence; "
            f"the requirement needs {requirement.kind} evidence"
        )
        raise IncompatibleEvidenceError(msg)
