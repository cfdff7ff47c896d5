"""Choosing what an eval run runs: the cases (by dataset, tier and tags) and the providers.

`select_cases` picks the cases; a `ProviderChoice` says how each case gets its provider:
`scripted` plays each case's own scripts (the deterministic gate), a name builds one
provider every case shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chatomon._suggest import did_you_mean
from chatomon.evals.cases import Dataset, EvalCase
from chatomon.planned import REQUIRED_ROLES, PlannedTurns
from chatomon.providers.registry import build_provider
from chatomon.providers.testing import ScriptedProvider

__all__ = [
    "SCRIPTED",
    "ProviderChoice",
    "Selected",
    "empty_selection_message",
    "scripted_provider",
    "scripted_roles",
    "select_cases",
]

SCRIPTED = "scripted"
"""The provider name that plays each case's own scripts (the deterministic CI gate)."""


@dataclass(frozen=True)
class Selected:
    """One case chosen for a run, with the dataset it came from."""

    dataset: str
    case: EvalCase


def select_cases(
    datasets: Iterable[Dataset], *, tier: int | None = None, tags: Iterable[str] = ()
) -> list[Selected]:
    """The datasets' cases in `tier` (None: any) holding every one of `tags`."""
    required = set(tags)
    return [
        Selected(dataset.name, case)
        for dataset in datasets
        for case in dataset.cases
        if (tier is None or case.tier == tier) and required <= set(case.tags)
    ]


def empty_selection_message(
    datasets: Iterable[Dataset], *, tier: int | None = None, tags: Iterable[str] = ()
) -> str:
    """Why `select_cases` chose nothing, naming what would match.

    A tag or tier no case has is named with the known ones (and the closest tag, through
    the one "did you mean"); known values that no case combines say so.

    Examples:
        >>> from chatomon.evals.cases import load_dataset
        >>> print(empty_selection_message([load_dataset("basic_queries")], tags=["raed"]))
        no case has the tag 'raed'; did you mean 'read'? (tags: aggregate, read, schema)
    """
    cases = [case for dataset in datasets for case in dataset.cases]
    if not cases:
        return "the selected datasets hold no case"
    known_tags = sorted({tag for case in cases for tag in case.tags})
    for tag in tags:
        if tag not in known_tags:
            hint = did_you_mean(tag, known_tags)
            listed = ", ".join(known_tags) or "none"
            return f"no case has the tag {tag!r}{hint} (tags: {listed})"
    known_tiers = sorted({case.tier for case in cases})
    if tier is not None and tier not in known_tiers:
        listed = ", ".join(str(value) for value in known_tiers)
        return f"no case is in tier {tier} (tiers: {listed})"
    wanted = " and ".join(repr(tag) for tag in tags)
    where = f" in tier {tier}" if tier is not None else ""
    return f"no case has the tags {wanted} together{where}" if wanted else f"no case{where}"


@dataclass(frozen=True)
class ProviderChoice:
    """A provider under evaluation: its label in reports, and how a case gets it.

    Attributes:
        label: The column or row name in reports ("scripted", "openai:gpt-4.1-mini", ...).
        build: Gives the provider for one case: a fresh scripted one, or one shared object.
        shared: The one provider every case uses (closed when a run ends), or None.
    """

    label: str
    build: Callable[[EvalCase], Any]
    shared: Any = None

    @classmethod
    def scripted(cls) -> ProviderChoice:
        """Each case's own scripts, played by a `ScriptedProvider` (no model at all)."""
        return cls(SCRIPTED, scripted_provider)

    @classmethod
    def named(cls, name: str, config: dict[str, Any] | None = None) -> ProviderChoice:
        """The provider a name gives, built once now and shared by every case.

        `name` is a short form (`local`, `openai:gpt-4.1-mini`), a dotted class path, or
        `scripted` (each case's own scripts); `config` is its configuration.
        """
        if name == SCRIPTED:
            return cls.scripted()
        provider = build_provider(name, config)
        return cls(name, lambda _case: provider, provider)

    @classmethod
    def of(cls, provider: Any, label: str | None = None) -> ProviderChoice:
        """An already built provider object, shared by every case."""
        return cls(label or type(provider).__name__, lambda _case: provider, provider)


def scripted_provider(case: EvalCase) -> ScriptedProvider:
    """A provider playing the scripts of every turn of `case`, in order.

    A planned case's roles play their own scripts (`scripted_roles`): its tool loop gets
    an empty script, which a request the case did not expect fails.

    Raises:
        ValueError: When a turn of a (not planned) case has no script.
    """
    if case.planned is not None:
        return ScriptedProvider([])
    missing = [index for index, turn in enumerate(case.turns) if turn.script is None]
    if missing:
        raise ValueError(f"case {case.name!r}: turn {missing[0]} has no script to play")
    return ScriptedProvider(case.completions())


def scripted_roles(case: EvalCase) -> PlannedTurns | None:
    """The planned turns of a planned case: each role plays its own script (None otherwise)."""
    if case.planned is None:
        return None
    scripts = case.planned
    return PlannedTurns(
        {role: ScriptedProvider(scripts.completions(role)) for role in REQUIRED_ROLES}
    )
