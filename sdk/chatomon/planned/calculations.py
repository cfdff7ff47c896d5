"""Calculations over evidence: the eight named operations in exact Decimal arithmetic.

The model never does arithmetic in its answer: it names an operation and points at values
in recorded evidence (`CalculationOperand`: an evidence id and a path into its payload),
and the result becomes evidence too. Values are read as Decimals (a float through its
`str`, so 0.1 stays 0.1; strings like "12.50", which is how tool results carry decimals).

- count: how many values there are (any values; an empty operand counts 0);
- sum, average, minimum, maximum: over every value of every operand (none may be empty);
- difference (a - b), ratio (a / b), percentage (a / b * 100): exactly two operands of one
  value each.

Sums, differences, minima and maxima are exact (a result that would need more than
`EXACT_DIGITS` digits is an error, never rounded); a quotient is exact when it terminates
and is otherwise rounded half-even to `QUOTIENT_DIGITS` significant digits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import (
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
)
from typing import Any, cast

from chatomon._suggest import did_you_mean
from chatomon.planned.evidence import (
    EvidenceNotFoundError,
    EvidenceRecord,
    EvidenceStore,
)
from chatomon.planned.models import CALCULATION_OPERATIONS

__all__ = [
    "EXACT_DIGITS",
    "QUOTIENT_DIGITS",
    "CalculationError",
    "CalculationOperand",
    "calculate",
    "calculate_evidence",
]

EXACT_DIGITS = 200
"""Digits an exact result (sum, difference, minimum, maximum) may have."""

QUOTIENT_DIGITS = 28
"""Significant digits of a quotient that does not terminate (average, ratio, percentage)."""

_EXACT = Context(prec=EXACT_DIGITS, traps=[Inexact, Overflow, InvalidOperation, DivisionByZero])
_QUOTIENT = Context(
    prec=QUOTIENT_DIGITS,
    rounding=ROUND_HALF_EVEN,
    traps=[Overflow, InvalidOperation, DivisionByZero],
)
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_BINARY = ("difference", "ratio", "percentage")
_READABLE_KINDS = ("query", "calculation")
_SHOWN_CHARS = 40  # enough to recognise a value, never a whole row in a message

Value = Decimal | int | str | float
"""A value `calculate` reads (a string or float as the Decimal it spells)."""


class CalculationError(ValueError):
    """Raised when a requested calculation cannot be safely evaluated."""


@dataclass(frozen=True, slots=True)
class CalculationOperand:
    """A structured path into one query evidence payload.

    Attributes:
        evidence_id: The evidence record read.
        path: Keys (str) and list indexes (int) from the payload down to the values; the
            segment "*" maps over every item of a list (("data", "*", "density")). A list
            at the end of the path contributes each of its items.

    Raises:
        CalculationError: When a segment is neither a string nor an integer.
    """

    evidence_id: str
    path: tuple[str | int, ...] = ()

    def __post_init__(self) -> None:
        raw: object = self.path
        if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
            msg = f"a path is a list of keys and list indexes, not {_show(raw)}"
            raise CalculationError(msg)
        path = tuple(cast("Sequence[object]", raw))
        for segment in path:
            if isinstance(segment, bool) or not isinstance(segment, str | int):
                msg = f"path segments are keys or list indexes, not {_show(segment)}"
                raise CalculationError(msg)
        object.__setattr__(self, "path", path)

    def to_json(self) -> dict[str, Any]:
        """The operand as the calculation's payload lists it."""
        return {"evidence_id": self.evidence_id, "path": list(self.path)}


def calculate(operation: str, operands: Sequence[Sequence[Value]]) -> Decimal:
    """Evaluate one of the eight named operations using Decimal arithmetic.

    >>> calculate("average", [["12.50", 3], [0.1]])
    Decimal('5.20')

    Raises:
        CalculationError: For an unknown operation, a wrong number of operands or values,
            an empty operand, a value that is not a number, or a division by zero.
    """
    labelled = [
        [(f"operand {i}[{j}]", value) for j, value in enumerate(operand)]
        for i, operand in enumerate(operands, 1)
    ]
    return _evaluate(operation, labelled)


def calculate_evidence(
    evidence_id: str,
    task_id: str,
    operation: str,
    operands: Sequence[CalculationOperand],
    store: EvidenceStore,
    *,
    provenance: Mapping[str, Any] | None = None,
    call_identity: str | None = None,
) -> EvidenceRecord:
    """Compute a value from query evidence and return derived evidence.

    The record (kind "calculation", payload `{"operation", "value": "<decimal>",
    "operands": [{"evidence_id", "path"}]}`) is NOT added to `store`: add it when it should
    satisfy a requirement. Query and calculation evidence may be read; the result of an
    earlier calculation is at the path ("value",).

    Raises:
        CalculationError: As `calculate`, and for unknown evidence, evidence of another
            kind, or a path that does not lead to values.
    """
    _check_operation(operation)
    values = [_resolve(operation, operand, store) for operand in operands]
    result = _evaluate(operation, values)
    payload = {
        "operation": operation,
        "value": _text(result),
        "operands": [operand.to_json() for operand in operands],
    }
    return EvidenceRecord(
        id=evidence_id,
        task_id=task_id,
        kind="calculation",
        payload=payload,
        provenance=provenance if provenance is not None else {},
        call_identity=call_identity,
    )


def _evaluate(operation: str, operands: Sequence[Sequence[tuple[str, Any]]]) -> Decimal:
    _check_operation(operation)
    if operation == "count":
        return Decimal(sum(len(operand) for operand in operands))
    if operation in _BINARY:
        return _binary(operation, operands)
    if not operands:
        msg = f"{operation}: needs at least one operand"
        raise CalculationError(msg)
    _check_not_empty(operation, operands)
    numbers = [_number(operation, label, value) for operand in operands for label, value in operand]
    try:
        if operation == "minimum":
            return min(numbers)
        if operation == "maximum":
            return max(numbers)
        total = _EXACT.create_decimal(0)
        for number in numbers:
            total = _EXACT.add(total, number)
        return total if operation == "sum" else _QUOTIENT.divide(total, len(numbers))
    except DecimalException as error:
        raise _range_error(operation, error) from None


def _binary(operation: str, operands: Sequence[Sequence[tuple[str, Any]]]) -> Decimal:
    if len(operands) != 2:
        msg = f"{operation}: needs exactly 2 operands, got {len(operands)}"
        raise CalculationError(msg)
    _check_not_empty(operation, operands)
    for index, operand in enumerate(operands, 1):
        if len(operand) != 1:
            msg = f"{operation}: operand {index} has {len(operand)} values; needs exactly one"
            raise CalculationError(msg)
    a, b = (_number(operation, *operand[0]) for operand in operands)
    try:
        if operation == "difference":
            return _EXACT.subtract(a, b)
        if b == 0:
            msg = f"{operation}: division by zero"
            raise CalculationError(msg)
        if operation == "percentage":
            a = _EXACT.multiply(a, 100)
        return _QUOTIENT.divide(a, b)
    except DecimalException as error:
        raise _range_error(operation, error) from None


def _check_operation(operation: str) -> None:
    if operation not in CALCULATION_OPERATIONS:
        hint = did_you_mean(str(operation), CALCULATION_OPERATIONS)
        allowed = ", ".join(CALCULATION_OPERATIONS)
        msg = f"unknown operation {operation!r}{hint} (one of {allowed})"
        raise CalculationError(msg)


def _check_not_empty(operation: str, operands: Sequence[Sequence[tuple[str, Any]]]) -> None:
    for index, operand in enumerate(operands, 1):
        if not operand:
            msg = f"{operation}: operand {index} is empty"
            raise CalculationError(msg)


def _number(operation: str, label: str, value: Any) -> Decimal:
    """`value` as a finite Decimal; a bool, a non-numeric string or an object is not one."""
    number: Decimal | None = None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int) and not isinstance(value, bool):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(str(value))
    elif isinstance(value, str) and _NUMBER.fullmatch(value):
        number = Decimal(value)
    if number is None or not number.is_finite():
        msg = f"{operation}: value at {label} is not a number ({_show(value)})"
        raise CalculationError(msg)
    return number


def _resolve(
    operation: str, operand: CalculationOperand, store: EvidenceStore
) -> list[tuple[str, Any]]:
    """The (label, value) pairs an operand's path leads to in its evidence."""
    try:
        record = store.get(operand.evidence_id)
    except EvidenceNotFoundError:
        msg = f"{operation}: unknown evidence {operand.evidence_id!r}"
        raise CalculationError(msg) from None
    if record.kind not in _READABLE_KINDS:
        msg = (
            f"{operation}: evidence {record.id!r} is {record.kind} evidence; "
            "a calculation reads query or calculation evidence"
        )
        raise CalculationError(msg)
    current: list[tuple[str, Any]] = [(record.id, record.payload)]
    for segment in operand.path:
        current = [
            step for label, value in current for step in _step(operation, label, value, segment)
        ]
    # A list at the end of the path stands for its items (("data",) counts the rows).
    flat: list[tuple[str, Any]] = []
    for label, value in current:
        if isinstance(value, tuple):
            flat.extend((f"{label}[{i}]", _plain(item)) for i, item in enumerate(value))
        else:
            flat.append((label, _plain(value)))
    return flat


def _step(operation: str, label: str, value: Any, segment: str | int) -> list[tuple[str, Any]]:
    """The values one path segment leads to from `value` (frozen JSON)."""
    if segment == "*":
        if not isinstance(value, tuple):
            msg = f"{operation}: value at {label} is not a list ('*' maps over a list)"
            raise CalculationError(msg)
        return [(f"{label}[{i}]", item) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        index = int(segment) if isinstance(segment, str) and segment.isdigit() else segment
        if isinstance(index, int) and 0 <= index < len(value):
            return [(f"{label}[{index}]", value[index])]
        msg = f"{operation}: {label} has no item {segment!r} (a list of {len(value)})"
        raise CalculationError(msg)
    if isinstance(value, Mapping):
        if isinstance(segment, str) and segment in value:
            return [(f"{label}.{segment}", value[segment])]
        hint = did_you_mean(str(segment), value)
        msg = f"{operation}: {label} has no key {segment!r}{hint}"
        raise CalculationError(msg)
    msg = f"{operation}: value at {label} is neither an object nor a list (no {segment!r} in it)"
    raise CalculationError(msg)


def _plain(value: Any) -> Any:
    """Frozen JSON as plain JSON, so messages show values the way the model saw them."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _range_error(operation: str, error: DecimalException) -> CalculationError:
    # An overflow is also Inexact: test it first.
    if isinstance(error, Inexact) and not isinstance(error, Overflow):
        return CalculationError(
            f"{operation}: the exact result needs more than {EXACT_DIGITS} digits"
        )
    return CalculationError(f"{operation}: the result is out of range")


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 3] + "..."


def _text(value: Decimal) -> str:
    """The value as plain decimal digits (no exponent unless the value is extreme)."""
    if value == 0:
        value = abs(value)  # no "-0" in an answer
    if abs(value.adjusted()) > 60:
        return str(value)
    return format(value, "f")
