"""The orbital contract: a named check on one side of a turn.

Two ways to write one:

```python
from chatomon import Orbital, OrbitalContext, Verdict, orbital

@orbital(side="input", name="faq", timeout=1.0, on_error="allow")
def faq(ctx: OrbitalContext) -> Verdict:
    if "opening hours" in ctx.message.lower():
        return Verdict.respond("We are open Monday to Friday, 9 to 18.")
    return Verdict.allow()

class NoCompetitors(Orbital):
    side = "output"

    def __init__(self, names: list[str]) -> None:
        self.names = [name.lower() for name in names]

    async def check(self, ctx: OrbitalContext) -> Verdict:
        if any(name in ctx.message.lower() for name in self.names):
            return Verdict.block(guidance="Do not mention competitors.", reason="competitor")
        return Verdict.allow()
```

The arguments an orbital class is constructed with form its fingerprint, the hash that
TurnReports record so an auditor can tell which configuration of a check ran.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypedDict, Unpack, overload

from chatomon._engine.fingerprint import fingerprint_of
from chatomon.schemas import ErrorPolicy, OrbitalContext, Side, Verdict

__all__ = ["FunctionOrbital", "Orbital", "OrbitalOptions", "ParallelGroup", "orbital", "parallel"]

CheckFunction = Callable[[OrbitalContext], Verdict | Awaitable[Verdict]]


class OrbitalOptions(TypedDict, total=False):
    """Keyword options every orbital accepts, built-in or written by you."""

    name: str
    side: Side
    timeout: float
    on_error: ErrorPolicy
    streaming: bool
    run_in_thread: bool


_OPTION_NAMES = frozenset(OrbitalOptions.__annotations__)


def _snake_case(class_name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name).lower()


class Orbital:
    """Base class of every check an atom runs on the user's message or on the reply.

    Subclasses set `side` (or leave it to the constructor), implement `check` (plain or
    `async`), and may set these class attributes, each also accepted as a keyword
    argument of `Orbital.__init__` (see `OrbitalOptions`):

    - `name`: the label in reports and the key of `ctx.annotations` (default: the class
      name in snake_case);
    - `timeout`: seconds the check may take (default: the atom's `orbital_timeout`);
    - `on_error`: "block" or "allow", applied when the check raises or times out
      (default: the atom's `on_error`);
    - `streaming`: True when the check accepts a growing prefix of the reply in
      `ctx.message`, which lets `Atom.stream` release text before the reply is complete;
    - `run_in_thread`: True for a plain (not `async`) check that blocks on I/O. It then
      runs in a worker thread and its timeout interrupts the wait. Plain checks run inline
      otherwise, which is the fastest path; their timeout is then enforced when they
      return (a late verdict is discarded and `on_error` applies).
    """

    name: str = ""
    side: Side | None = None
    timeout: float | None = None
    on_error: ErrorPolicy | None = None
    streaming: bool = False
    run_in_thread: bool = False

    _init_arguments: dict[str, Any]
    _records_arguments: ClassVar[bool] = False

    def __init__(self, **options: Unpack[OrbitalOptions]) -> None:
        for key, value in options.items():
            setattr(self, key, value)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = _snake_case(cls.__name__)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _recording_arguments(init)  # type: ignore[method-assign]

    def check(self, ctx: OrbitalContext) -> Verdict | Awaitable[Verdict]:
        """Decide about `ctx.message`; return (or, when `async`, resolve to) a Verdict."""
        raise NotImplementedError(f"{type(self).__name__} must implement check(ctx)")

    @property
    def kind(self) -> str:
        """The orbital class name, as recorded in OrbitalResult.kind."""
        return type(self).__name__

    def configuration(self) -> dict[str, Any]:
        """What the fingerprint hashes: the class, the options and the constructor arguments."""
        cls = type(self)
        return {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "name": self.name,
            "side": self.side,
            "timeout": self.timeout,
            "on_error": self.on_error,
            "streaming": self.streaming,
            "arguments": self.__dict__.get("_init_arguments", {}),
        }

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of `configuration()`, stable across processes and Python runs."""
        return fingerprint_of(self.configuration())

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name!r} side={self.side}>"


def _recording_arguments(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a subclass ``__init__``: record its bound arguments, accept the common options.

    The outermost call records the arguments (they form the fingerprint). Options of
    `OrbitalOptions` that the ``__init__`` does not take itself are applied after it ran,
    so every orbital accepts ``name=``, ``timeout=`` and the rest without boilerplate.
    """
    signature = inspect.signature(init)
    self_name = next(iter(signature.parameters))
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    extra_options = () if takes_kwargs else tuple(_OPTION_NAMES - set(signature.parameters))

    @functools.wraps(init)
    def recording_init(self: Orbital, *args: Any, **kwargs: Any) -> None:
        options = {key: kwargs.pop(key) for key in extra_options if key in kwargs}
        if "_init_arguments" not in self.__dict__:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            del arguments[self_name]
            self.__dict__["_init_arguments"] = arguments
        init(self, *args, **kwargs)
        Orbital.__init__(self, **options)

    return recording_init


class FunctionOrbital(Orbital):
    """An orbital made from a check function by the `@orbital` decorator.

    The instance stays callable like the function it wraps, so tests can call it directly.
    """

    def __init__(self, function: CheckFunction, **options: Unpack[OrbitalOptions]) -> None:
        options.setdefault("name", function.__name__)
        super().__init__(**options)
        self.function = function
        functools.update_wrapper(self, function)

    def check(self, ctx: OrbitalContext) -> Verdict | Awaitable[Verdict]:
        """Run the wrapped function."""
        return self.function(ctx)

    def __call__(self, ctx: OrbitalContext) -> Verdict | Awaitable[Verdict]:
        """Call the wrapped function, as if undecorated."""
        return self.function(ctx)

    def configuration(self) -> dict[str, Any]:
        """The options, the function's qualified name and a hash of its code."""
        configuration = super().configuration()
        configuration["arguments"] = {"function": self.function}
        code = getattr(self.function, "__code__", None)
        if code is not None:
            configuration["code"] = fingerprint_of(code.co_code.hex())
        return configuration


@overload
def orbital(function: CheckFunction, /) -> FunctionOrbital: ...


@overload
def orbital(
    function: None = None, /, **options: Unpack[OrbitalOptions]
) -> Callable[[CheckFunction], FunctionOrbital]: ...


def orbital(
    function: CheckFunction | None = None, /, **options: Unpack[OrbitalOptions]
) -> FunctionOrbital | Callable[[CheckFunction], FunctionOrbital]:
    """Turn a check function (plain or `async`) into an Orbital.

    Use it bare (`@orbital`) or with the options of `OrbitalOptions`
    (`@orbital(side="input", name="faq", timeout=1.0, on_error="allow")`). The name
    defaults to the function's name.

    Examples:
        >>> from chatomon import Verdict, orbital
        >>> @orbital(side="input", timeout=0.5)
        ... def no_shouting(ctx):
        ...     shouting = ctx.message.isupper()
        ...     return Verdict.block(reason="shouting") if shouting else Verdict.allow()
        >>> no_shouting.name, no_shouting.side
        ('no_shouting', 'input')
    """
    if function is not None:
        return FunctionOrbital(function, **options)

    def decorate(check: CheckFunction) -> FunctionOrbital:
        return FunctionOrbital(check, **options)

    return decorate


class ParallelGroup:
    """Orbitals of one side that run concurrently; made by `parallel()`.

    Verdicts are still applied in the declared order: the first decisive verdict (block or
    respond) ends the chain, and the members after it are cancelled and reported as not run.
    """

    def __init__(self, members: tuple[Orbital, ...]) -> None:
        self.members = members

    def __repr__(self) -> str:
        return f"parallel({', '.join(repr(member) for member in self.members)})"


def parallel(*orbitals: Orbital) -> ParallelGroup:
    """Group independent orbitals so they run at the same time.

    Examples:
        >>> from chatomon import Blocklist, MaxLength, parallel
        >>> group = parallel(Blocklist(["acme"]), MaxLength(2000))
        >>> [member.name for member in group.members]
        ['blocklist', 'max_length']
    """
    return ParallelGroup(tuple(orbitals))
