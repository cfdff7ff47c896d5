"""A value with the form of a field's codes ("P-1002") is offered that field, not the name.

Seen in the demo with Qwen2.5-Coder-1.5B: asked "Which projects use part P-1002?", it sent
`{"part_id": "P-1002"}` to projects, was offered `{"parts__name": "P-1002"}`, found nothing
and answered that no project uses the part. The part's number reads "such as P-1001".
"""

from __future__ import annotations

from typing import Any

import pytest

from chatomon.chat.tools import Toolset
from chatomon.data import FieldSpec, Manager, ManagerRegistry, RelationSpec
from chatomon.data.hints import label_field, shaped_field


def registry() -> ManagerRegistry:
    parts = Manager.from_records(
        "PartManager",
        records=[
            {"id": 1, "number": "P-1001", "name": "Bracket", "projects": []},
            {"id": 2, "number": "P-1002", "name": "Housing", "projects": [1]},
        ],
        description="Parts.",
        fields={
            "number": FieldSpec("string", description="Part number, such as P-1001."),
            "name": FieldSpec("string", description="Part name."),
        },
        relations={"projects": RelationSpec("ProjectManager", to_many=True)},
    )
    projects = Manager.from_records(
        "ProjectManager",
        records=[{"id": 1, "code": "PRJ-101", "name": "Falcon", "parts": [2]}],
        description="Projects.",
        fields={
            "code": FieldSpec("string", description="Project code, such as PRJ-101."),
            "name": FieldSpec("string", description="Project name."),
        },
        relations={"parts": RelationSpec("PartManager", to_many=True)},
    )
    return ManagerRegistry([parts, projects])


def query(filters: dict[str, Any], manager: str = "ProjectManager") -> Any:
    toolset = Toolset(registry())
    return toolset.call_sync("query", {"manager": manager, "filters": filters}, toolset.context())


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("P-1002", "number"),
        ("p-77", "number"),  # the letters ignore case, the digits any count
        ("PRJ-101", None),  # a project's form, not a part's
        ("Housing", None),  # a word has no code's form
        ("P 1002", None),
        (1002, None),
    ],
)
def test_the_field_whose_description_shows_the_values_form(value: Any, field: str | None) -> None:
    schema = registry().schema_index().managers["PartManager"]
    assert shaped_field(schema, value) == field
    assert label_field(schema, value) == (field or "name")


def test_an_unknown_filter_with_a_code_offers_the_code_field_through_the_relation() -> None:
    error = query({"part_id": "P-1002"})
    assert error["code"] == "unknown_filter"
    assert error["message"].endswith('e.g. {"parts__number": "P-1002"}')
    assert [row["code"] for row in query({"parts__number": "P-1002"})["data"]] == ["PRJ-101"]
    # A name keeps the name.
    assert query({"part_id": "Housing"})["message"].endswith('e.g. {"parts__name": "Housing"}')


@pytest.mark.parametrize(
    ("filters", "manager", "offered"),
    [
        ({"parts__name": "P-1002"}, "ProjectManager", '{"parts__number": "P-1002"}'),
        ({"name": "P-1002"}, "PartManager", '{"number": "P-1002"}'),
        ({"parts__name__iexact": "P-1002"}, "ProjectManager", '{"parts__number": "P-1002"}'),
    ],
)
def test_an_empty_read_of_a_code_by_name_offers_the_code_field(
    filters: dict[str, Any], manager: str, offered: str
) -> None:
    result = query(filters, manager)
    assert result["total_count"] == 0
    assert result["hint"].endswith(f"has the form of PartManager.number: {offered}")


def test_an_empty_read_of_a_word_keeps_the_icontains_hint() -> None:
    hint = query({"parts__name": "Gizmo"})["hint"]
    assert "parts__name__icontains" in hint
