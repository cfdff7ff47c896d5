"""Bad atom configuration fails at build time with a precise ConfigurationError."""

from __future__ import annotations

import pytest

from chatomon import (
    Atom,
    ConfigurationError,
    Orbital,
    OrbitalContext,
    Verdict,
    orbital,
    parallel,
)
from tests.engine.conftest import ScriptNucleus

inp = orbital(side="input", name="inp")(lambda ctx: Verdict.allow())
out = orbital(side="output", name="out")(lambda ctx: Verdict.allow())


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"name": ""}, "name", "non-empty"),
        ({"refusal": "  "}, "refusal", "non-empty"),
        ({"blocked_placeholder": ""}, "blocked_placeholder", "non-empty"),
        ({"max_attempts": 0}, "max_attempts", "at least 1"),
        ({"max_attempts": True}, "max_attempts", "at least 1"),
        ({"capture_content": "all"}, "capture_content", "'none', 'hash', 'full'"),
        ({"on_turn": ["not callable"]}, "on_turn", "callables"),
        ({"input": [out]}, "input", "output orbital"),
        ({"output": [inp]}, "output", "input orbital"),
        ({"input": [inp, inp]}, "name", "unique"),
        ({"input": [lambda ctx: Verdict.allow()]}, "input", "@orbital"),
        ({"input": [parallel()]}, "input", "at least one"),
        ({"input": [parallel(parallel(inp))]}, "input", "nested"),
        ({"input": "inp"}, "input", "list of orbitals"),
        ({"orbital_timeout": 0}, "orbital_timeout", "positive"),
        (
            {"input": [orbital(side="input", timeout=-1)(lambda ctx: Verdict.allow())]},
            "timeout",
            "positive",
        ),
        ({"on_error": "ignore"}, "on_error", "one of"),
        ({"nucleus": 42}, "nucleus", "callable"),
    ],
)
def test_bad_configuration_is_named(kwargs: dict[str, object], field: str, words: str) -> None:
    arguments: dict[str, object] = {"name": "a", "nucleus": ScriptNucleus(), **kwargs}
    with pytest.raises(ConfigurationError, match=words) as caught:
        Atom(**arguments)
    assert caught.value.field == field


def test_a_single_orbital_may_be_given_without_a_list() -> None:
    atom = Atom("a", ScriptNucleus(), input=inp)
    assert len(atom.input_steps) == 1


def test_class_orbitals_accept_the_common_options() -> None:
    class Shout(Orbital):
        side = "input"

        def __init__(self, threshold: int) -> None:
            self.threshold = threshold

        def check(self, ctx: OrbitalContext) -> Verdict:
            return Verdict.allow()

    shout = Shout(3, name="loud", timeout=0.5, on_error="allow")
    assert (shout.name, shout.timeout, shout.on_error, shout.threshold) == ("loud", 0.5, "allow", 3)
    assert Shout(3).name == "shout"
    assert repr(shout) == "<Shout 'loud' side=input>"


def test_an_orbital_without_check_fails_loudly() -> None:
    class Empty(Orbital):
        pass

    with pytest.raises(NotImplementedError, match="Empty must implement check"):
        Empty().check(OrbitalContext(side="input", message="x", annotations={}, turn_id="t"))


def test_decorator_forms() -> None:
    @orbital
    def bare(ctx: OrbitalContext) -> Verdict:
        """Docstring kept."""
        return Verdict.allow()

    assert bare.name == "bare"
    assert bare.side is None
    assert bare.__doc__ == "Docstring kept."
    ctx = OrbitalContext(side="input", message="x", annotations={}, turn_id="t")
    assert bare(ctx) == Verdict.allow()
    assert bare.kind == "FunctionOrbital"
    # A side-less orbital can serve either chain.
    Atom("a", ScriptNucleus(), input=[bare])
    Atom("b", ScriptNucleus(), output=[bare])
