"""calculate and calculate_evidence: the eight operations in exact Decimal, and every error."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from chatomon.planned.calculations import (
    EXACT_DIGITS,
    QUOTIENT_DIGITS,
    CalculationError,
    CalculationOperand,
    calculate,
    calculate_evidence,
)
from chatomon.planned.evidence import EvidenceRecord, EvidenceStore
from chatomon.planned.models import CALCULATION_OPERATIONS

PARTS = {
    "data": [
        {"name": "bolt", "density": "7.85", "stock": 10, "material": {"name": "steel"}},
        {"name": "nut", "density": "2.70", "stock": 4, "material": {"name": "aluminium"}},
        {"name": "gear", "density": "8.96", "stock": 0, "material": {"name": "copper"}},
    ],
    "total_count": 3,
    "has_more": False,
}
TOTALS = {
    "groups": [
        {"group": {"material__name": "steel"}, "values": {"count": 2, "sum_unit_cost": "12.50"}},
        {"group": {"material__name": "brass"}, "values": {"count": 1, "sum_unit_cost": "0.10"}},
    ],
    "has_more": False,
}


@pytest.fixture
def store() -> EvidenceStore:
    evidence = EvidenceStore()
    evidence.add(EvidenceRecord("e1", "t1", "query", PARTS))
    evidence.add(EvidenceRecord("e2", "t1", "query", TOTALS))
    evidence.add(EvidenceRecord("e3", "t1", "schema", {"manager": "part"}))
    evidence.add(
        EvidenceRecord("e4", "t1", "query", {"data": [], "total_count": 0, "has_more": False})
    )
    evidence.add(EvidenceRecord("e5", "t1", "calculation", {"operation": "sum", "value": "25.00"}))
    return evidence


def op(evidence_id: str, *path: str | int) -> CalculationOperand:
    return CalculationOperand(evidence_id, path)


def value(store: EvidenceStore, operation: str, *operands: CalculationOperand) -> str:
    return str(calculate_evidence("e9", "t1", operation, operands, store).payload["value"])


# --- calculate ----------------------------------------------------------------------------


def test_the_operations_are_the_eight_of_the_reference() -> None:
    assert len(CALCULATION_OPERATIONS) == 8


@pytest.mark.parametrize(
    ("operation", "operands", "expected"),
    [
        ("count", [["a", "b"], [1]], Decimal(3)),
        ("count", [[]], Decimal(0)),
        ("count", [], Decimal(0)),
        ("sum", [["0.1", "0.2"]], Decimal("0.3")),
        ("sum", [[0.1, 0.2]], Decimal("0.3")),  # floats through str: no binary noise
        ("sum", [["12.50"], [3, Decimal("1.25")]], Decimal("16.75")),
        ("sum", [["-1.5", "1.5"]], Decimal("0.0")),
        ("average", [["1", "2"]], Decimal("1.5")),
        ("average", [["12.50", 3], [0.1]], Decimal("5.20")),  # the scale of its inputs
        ("average", [[1, 1, 2]], Decimal("1.333333333333333333333333333")),
        ("minimum", [["7.85", "2.70"], ["8.96"]], Decimal("2.70")),
        ("maximum", [["7.85", "2.70"], ["-9"]], Decimal("7.85")),
        ("minimum", [["1e3", 5]], Decimal(5)),
        ("difference", [["10.5"], ["0.25"]], Decimal("10.25")),
        ("difference", [[1], [3]], Decimal(-2)),
        ("ratio", [["1"], ["8"]], Decimal("0.125")),
        ("ratio", [[2], [3]], Decimal("0.6666666666666666666666666667")),
        ("percentage", [[1], [8]], Decimal("12.5")),
        ("percentage", [["3"], ["4"]], Decimal(75)),
        ("percentage", [[1], [3]], Decimal("33.33333333333333333333333333")),
    ],
)
def test_operations(operation: str, operands: list[list[object]], expected: Decimal) -> None:
    result = calculate(operation, operands)
    assert isinstance(result, Decimal)
    assert result == expected
    assert str(result) == str(expected)


def test_quotients_round_half_even_to_the_documented_digits() -> None:
    assert QUOTIENT_DIGITS == 28
    assert len(str(calculate("ratio", [[1], [7]])).replace("0.", "", 1)) == QUOTIENT_DIGITS


def test_sums_are_exact_or_refused() -> None:
    big = "1" + "0" * 100
    assert calculate("sum", [[big, "0.000001"]]) == Decimal(big + ".000001")
    too_long = "1" + "0" * EXACT_DIGITS
    with pytest.raises(
        CalculationError, match=f"^sum: the exact result needs more than {EXACT_DIGITS} digits$"
    ):
        calculate("sum", [[too_long, "0.1"]])
    with pytest.raises(CalculationError, match=r"^difference: the exact result needs more than"):
        calculate("difference", [[too_long], ["0.1"]])


def test_out_of_range_results_are_refused() -> None:
    with pytest.raises(CalculationError, match=r"^sum: the result is out of range$"):
        calculate("sum", [["9e999999", "9e999999"]])
    with pytest.raises(CalculationError, match=r"^ratio: the result is out of range$"):
        calculate("ratio", [["9e999999"], ["1e-999999"]])


def test_an_unknown_operation() -> None:
    with pytest.raises(
        CalculationError,
        match=r"^unknown operation 'median' \(one of count, sum, average, minimum, maximum, "
        r"difference, ratio, percentage\)$",
    ):
        calculate("median", [[1]])
    with pytest.raises(CalculationError, match=r"^unknown operation 'summ'; did you mean 'sum'\?"):
        calculate("summ", [[1]])


@pytest.mark.parametrize("operation", ["ratio", "percentage"])
def test_division_by_zero(operation: str) -> None:
    with pytest.raises(CalculationError, match=f"^{operation}: division by zero$"):
        calculate(operation, [[1], ["0.00"]])


@pytest.mark.parametrize(
    "operation", ["sum", "average", "minimum", "maximum", "difference", "ratio", "percentage"]
)
def test_an_empty_operand(operation: str) -> None:
    with pytest.raises(CalculationError, match=f"^{operation}: operand 1 is empty$"):
        calculate(operation, [[], [1]])


def test_the_second_operand_empty() -> None:
    with pytest.raises(CalculationError, match=r"^sum: operand 2 is empty$"):
        calculate("sum", [[1], []])


@pytest.mark.parametrize("operation", ["sum", "average", "minimum", "maximum"])
def test_an_aggregate_needs_an_operand(operation: str) -> None:
    with pytest.raises(CalculationError, match=f"^{operation}: needs at least one operand$"):
        calculate(operation, [])


@pytest.mark.parametrize("operation", ["difference", "ratio", "percentage"])
def test_binary_operations_take_exactly_two_single_values(operation: str) -> None:
    with pytest.raises(CalculationError, match=f"^{operation}: needs exactly 2 operands, got 1$"):
        calculate(operation, [[1]])
    with pytest.raises(CalculationError, match=f"^{operation}: needs exactly 2 operands, got 3$"):
        calculate(operation, [[1], [2], [3]])
    with pytest.raises(
        CalculationError, match=f"^{operation}: operand 2 has 2 values; needs exactly one$"
    ):
        calculate(operation, [[1], [2, 3]])


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("steel", "'steel'"),
        (None, "None"),
        (True, "True"),
        ("", "''"),
        ("1,5", "'1,5'"),
        ("1_000", "'1_000'"),
        (" 1", "' 1'"),
        ("NaN", "'NaN'"),
        ("Infinity", "'Infinity'"),
        (math.inf, "inf"),
        (math.nan, "nan"),
        (Decimal("NaN"), "Decimal('NaN')"),
        ({"density": "7.85"}, "{'density': '7.85'}"),
        ("x" * 60, "'" + "x" * 36 + "..."),
    ],
)
def test_a_value_that_is_not_a_number(bad: object, shown: str) -> None:
    with pytest.raises(CalculationError) as caught:
        calculate("average", [[1, bad]])  # type: ignore[list-item]
    assert str(caught.value) == f"average: value at operand 1[1] is not a number ({shown})"


def test_count_takes_any_values() -> None:
    assert calculate("count", [["steel", None, True, {"a": 1}]]) == 4  # type: ignore[list-item]


@pytest.mark.parametrize("text", ["1", "-1", "+1.5", ".5", "5.", "1e3", "1E-3", "007"])
def test_numeric_strings(text: str) -> None:
    assert calculate("sum", [[text]]) == Decimal(text)


# --- operands -----------------------------------------------------------------------------


def test_an_operand_path_is_keys_and_indexes() -> None:
    assert op("e1", "data", 0, "density").path == ("data", 0, "density")
    assert CalculationOperand("e1", ["data", "*"]).path == ("data", "*")
    assert CalculationOperand("e1").to_json() == {"evidence_id": "e1", "path": []}


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("data", 1.5), "path segments are keys or list indexes, not 1.5"),
        (("data", True), "path segments are keys or list indexes, not True"),
        (("data", None), "path segments are keys or list indexes, not None"),
        ("data", "a path is a list of keys and list indexes, not 'data'"),
        (5, "a path is a list of keys and list indexes, not 5"),
    ],
)
def test_an_ill_formed_path(path: object, message: str) -> None:
    with pytest.raises(CalculationError) as caught:
        CalculationOperand("e1", path)
    assert str(caught.value) == message


# --- calculate_evidence -------------------------------------------------------------------


def test_a_calculation_record(store: EvidenceStore) -> None:
    operands = [op("e1", "data", "*", "density")]
    made = calculate_evidence(
        "e9",
        "t2",
        "average",
        operands,
        store,
        provenance={"tool": "calculate", "call_id": "t2.c1"},
        call_identity="identity",
    )
    assert made.to_json() == {
        "id": "e9",
        "task_id": "t2",
        "kind": "calculation",
        "payload": {
            "operation": "average",
            "value": "6.503333333333333333333333333",
            "operands": [{"evidence_id": "e1", "path": ["data", "*", "density"]}],
        },
        "provenance": {"tool": "calculate", "call_id": "t2.c1"},
        "call_identity": "identity",
    }
    assert dict(calculate_evidence("e9", "t2", "count", operands, store).provenance) == {}


def test_the_record_is_not_added(store: EvidenceStore) -> None:
    before = store.records
    calculate_evidence("e9", "t1", "count", [op("e1", "data")], store)
    assert store.records == before
    with pytest.raises(Exception, match="unknown evidence 'e9'"):
        store.get("e9")


def test_each_operation_over_evidence(store: EvidenceStore) -> None:
    densities = op("e1", "data", "*", "density")
    assert value(store, "count", op("e1", "data")) == "3"
    assert value(store, "count", op("e4", "data")) == "0"
    assert value(store, "sum", densities) == "19.51"
    assert value(store, "sum", op("e1", "data", "*", "stock")) == "14"
    assert value(store, "minimum", densities) == "2.70"
    assert value(store, "maximum", densities) == "8.96"
    costs = op("e2", "groups", "*", "values", "sum_unit_cost")
    assert value(store, "sum", costs) == "12.60"
    steel, brass = (
        op("e2", "groups", 0, "values", "sum_unit_cost"),
        op("e2", "groups", 1, "values", "sum_unit_cost"),
    )
    assert value(store, "difference", steel, brass) == "12.40"
    assert value(store, "ratio", steel, brass) == "125"
    assert value(store, "percentage", brass, op("e5", "value")) == "0.4"
    assert (
        value(store, "average", op("e1", "data", "*", "stock")) == "4.666666666666666666666666667"
    )


def test_a_digit_string_indexes_a_list(store: EvidenceStore) -> None:
    assert value(store, "sum", op("e1", "data", "1", "density")) == "2.70"


def test_values_are_written_without_exponent(store: EvidenceStore) -> None:
    store.add(EvidenceRecord("e6", "t1", "query", {"v": [1e20, "1E+2", "-0.0"]}))
    assert value(store, "maximum", op("e6", "v")) == "100000000000000000000"
    assert value(store, "minimum", op("e6", "v", 1), op("e6", "v", 1)) == "100"
    assert value(store, "difference", op("e6", "v", 2), op("e6", "v", 2)) == "0.0"


def test_unknown_evidence(store: EvidenceStore) -> None:
    with pytest.raises(CalculationError, match=r"^sum: unknown evidence 'e42'$"):
        calculate_evidence("e9", "t1", "sum", [op("e42", "data")], store)


def test_schema_evidence_is_not_read(store: EvidenceStore) -> None:
    with pytest.raises(
        CalculationError,
        match=r"^count: evidence 'e3' is schema evidence; "
        r"a calculation reads query or calculation evidence$",
    ):
        calculate_evidence("e9", "t1", "count", [op("e3")], store)


def test_an_unknown_operation_before_any_evidence(store: EvidenceStore) -> None:
    with pytest.raises(CalculationError, match=r"^unknown operation 'mean'"):
        calculate_evidence("e9", "t1", "mean", [op("e42")], store)


def test_a_non_numeric_path_value(store: EvidenceStore) -> None:
    with pytest.raises(CalculationError) as caught:
        calculate_evidence("e9", "t1", "average", [op("e1", "data", "*", "name")], store)
    assert str(caught.value) == "average: value at e1.data[0].name is not a number ('bolt')"
    with pytest.raises(CalculationError) as caught:
        calculate_evidence("e9", "t1", "sum", [op("e1", "data", "*", "material")], store)
    assert (
        str(caught.value) == "sum: value at e1.data[0].material is not a number ({'name': 'steel'})"
    )


def test_an_empty_operand_from_evidence(store: EvidenceStore) -> None:
    with pytest.raises(CalculationError, match=r"^sum: operand 2 is empty$"):
        calculate_evidence(
            "e9", "t1", "sum", [op("e1", "data", 0, "stock"), op("e4", "data", "*", "stock")], store
        )


def test_division_by_zero_from_evidence(store: EvidenceStore) -> None:
    with pytest.raises(CalculationError, match=r"^ratio: division by zero$"):
        calculate_evidence(
            "e9", "t1", "ratio", [op("e1", "data", 0, "stock"), op("e1", "data", 2, "stock")], store
        )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("rows",), "sum: e1 has no key 'rows'"),
        (("date",), "sum: e1 has no key 'date'; did you mean 'data'?"),
        (("data", 3), "sum: e1.data has no item 3 (a list of 3)"),
        (("data", -1), "sum: e1.data has no item -1 (a list of 3)"),
        (("data", "first"), "sum: e1.data has no item 'first' (a list of 3)"),
        (
            ("data", 0, "density", "x"),
            "sum: value at e1.data[0].density is neither an object nor a list (no 'x' in it)",
        ),
        (("total_count", "*"), "sum: value at e1.total_count is not a list ('*' maps over a list)"),
        (("data", "*", "weight"), "sum: e1.data[0] has no key 'weight'"),
    ],
)
def test_a_path_that_leads_nowhere(
    store: EvidenceStore, path: tuple[str | int, ...], message: str
) -> None:
    with pytest.raises(CalculationError) as caught:
        calculate_evidence("e9", "t1", "sum", [CalculationOperand("e1", path)], store)
    assert str(caught.value) == message
