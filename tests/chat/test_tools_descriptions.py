"""The tool definitions give models nothing to copy, and point to search_managers.

Small models copy sample values from tool descriptions into unrelated calls ("e.g.
PartManager", "part cost"), so no description or parameter description may carry a
manager, field or sample value of any registry.
"""

from __future__ import annotations

from typing import Any

from chatomon.chat.prompts import BUILT_IN
from chatomon.chat.tools import Toolset, ToolSettings
from chatomon.data.fixtures import toy_registry
from chatomon.providers.base import ToolDefinition


def _texts(value: Any) -> list[str]:
    """Every description in a definition's JSON schema (and the definition's own)."""
    if isinstance(value, dict):
        own = [value["description"]] if isinstance(value.get("description"), str) else []
        return own + [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


def _descriptions(definition: ToolDefinition) -> list[str]:
    return [definition.description, *_texts(definition.input_schema)]


def test_discovery_definitions_carry_no_sample_values() -> None:
    registry = toy_registry()
    toolset = Toolset(registry)
    samples = ["e.g.", "part cost", "unit_cost", "12.50", "sum_unit_cost"]
    samples += [*registry.schema_index().names, "material", "parts"]
    for definition in toolset.definitions:
        for text in _descriptions(definition):
            found = [sample for sample in samples if sample.lower() in text.lower()]
            assert not found, (definition.name, text)


def test_the_manager_argument_points_to_search_managers() -> None:
    toolset = Toolset(toy_registry())
    for definition in toolset.definitions:
        properties = definition.input_schema["properties"]
        for key in ("manager", "from_manager", "to_manager"):
            if key in properties:
                assert "search_managers" in properties[key]["description"], definition.name
    search = next(d for d in toolset.definitions if d.name == "search_managers")
    assert "first" in search.description
    assert "exact manager name" in search.description


def test_the_filters_description_teaches_related_fields_and_case() -> None:
    query = next(d for d in Toolset(toy_registry()).definitions if d.name == "query")
    filters = query.input_schema["properties"]["filters"]["description"]
    assert "relation__field__lookup" in filters
    assert "ignores case" in filters
    assert "icontains" in filters


def test_the_system_prompt_says_errors_are_to_be_fixed_not_reported() -> None:
    assert "search_managers" in BUILT_IN
    assert "Never guess" in BUILT_IN
    assert "rather than reporting the error" in BUILT_IN


def test_the_mutation_argument_is_an_enum_of_the_allowed_names() -> None:
    from tests.data.catalog import records_catalog  # noqa: PLC0415 - its mutations only here

    catalog = records_catalog()
    allowed = ["updatePartCost", "createPart"]
    toolset = Toolset(catalog.registry, ToolSettings(allowed_mutations=allowed))
    mutate = next(d for d in toolset.definitions if d.name == "mutate")
    assert mutate.input_schema["properties"]["mutation"]["enum"] == allowed
    # A name outside the enum is still mutate's own refusal, with its near name.
    refused = toolset.call_sync("mutate", {"mutation": "createPrt", "input": {}}, toolset.context())
    assert refused["code"] == "mutation_not_allowed"
    assert "did you mean 'createPart'" in refused["message"]


def test_the_manager_arguments_are_an_enum_of_the_exposed_names_when_few() -> None:
    from chatomon.data.fixtures import large_registry  # noqa: PLC0415 - only here

    toy = Toolset(toy_registry())
    names = list(toy_registry().schema_index().names)
    for definition in toy.definitions:
        properties = definition.input_schema["properties"]
        for key in ("manager", "from_manager", "to_manager"):
            if key in properties:
                assert properties[key]["enum"] == names, definition.name
    large = Toolset(large_registry())
    assert all(
        "enum" not in d.input_schema["properties"].get("manager", {}) for d in large.definitions
    )
    # A name outside the enum is still the index's unknown_manager with its hints.
    wrong = toy.call_sync("query", {"manager": "Parts"}, toy.context())
    assert wrong["code"] == "unknown_manager"
    assert "the nearest: PartManager" in wrong["message"]
