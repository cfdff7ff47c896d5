"""The words search compares: camelCase and snake_case split, folded, singular."""

from __future__ import annotations

import pytest

from chatomon.data.search import normalize_words, singular


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("unitCost", ["unit", "cost"]),
        ("unit_cost", ["unit", "cost"]),
        ("Unit Costs", ["unit", "cost"]),
        ("PartManager", ["part", "manager"]),
        ("HTTPLogEntries", ["http", "log", "entry"]),
        ("Which projects use aluminum parts?", ["which", "project", "use", "aluminum", "part"]),
        ("", []),
        ("__", []),
    ],
)
def test_normalize_words(text: str, words: list[str]) -> None:
    assert normalize_words(text) == words


@pytest.mark.parametrize(
    ("word", "one"),
    [
        ("parts", "part"),
        ("categories", "category"),
        ("boxes", "box"),
        ("batches", "batch"),
        ("glass", "glass"),
        ("status", "status"),
        ("bus", "bus"),
        ("analysis", "analysis"),
        ("gas", "gas"),
    ],
)
def test_singular(word: str, one: str) -> None:
    assert singular(word) == one
