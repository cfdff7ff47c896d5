"""Rich display of chatomon objects in Jupyter: what their `_repr_*_` methods call.

`render_html(obj)` gives scoped HTML (no JavaScript), `render_markdown(obj)` and
`render_text(obj)` the fallbacks, and `render_mimebundle(obj)` the text/plain and
text/markdown bundle IPython asks `_repr_mimebundle_` for (the HTML comes from
`_repr_html_`). The objects' own modules import this one lazily, on first display, so
importing them costs nothing; this module imports neither ipywidgets nor pandas.

```python
from chatomon.notebook.display import render_markdown
print(render_markdown(result.report))
```
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

__all__ = ["View", "render_html", "render_markdown", "render_mimebundle", "render_text"]


class View(Protocol):
    """The three renderings of one kind of object."""

    def html(self, obj: Any, /) -> str:
        """`obj` as scoped HTML."""

    def markdown(self, obj: Any, /) -> str:
        """`obj` as Markdown."""

    def text(self, obj: Any, /) -> str:
        """`obj` as plain text."""


@dataclass(frozen=True, slots=True)
class _ModuleView:
    """A view made of a module's `<prefix>_html`, `_markdown` and `_text` functions."""

    html: Callable[[Any], str]
    markdown: Callable[[Any], str]
    text: Callable[[Any], str]


@cache
def _views() -> tuple[tuple[type, View], ...]:
    """The views by type; built on first use so a display imports only what it shows."""
    # Imported here: the data views import chatomon.data, which `import chatomon` must not.
    from chatomon.atom import ChatResult  # noqa: PLC0415
    from chatomon.data.backend import AggregatePage, QueryPage  # noqa: PLC0415
    from chatomon.data.schema import ManagerSchema  # noqa: PLC0415
    from chatomon.notebook import (  # noqa: PLC0415
        data_views,
        decision_views,
        plan_views,
        report_views,
    )
    from chatomon.schemas import (  # noqa: PLC0415
        InputDecision,
        OrbitalResult,
        OutputDecision,
        PlannedTurnReport,
        TurnReport,
        Verdict,
    )

    def view(module: Any, prefix: str) -> View:
        return _ModuleView(
            getattr(module, f"{prefix}_html"),
            getattr(module, f"{prefix}_markdown"),
            getattr(module, f"{prefix}_text"),
        )

    return (
        (TurnReport, view(report_views, "turn_report")),
        (PlannedTurnReport, view(plan_views, "planned_report")),
        (OrbitalResult, view(report_views, "orbital_result")),
        (ChatResult, view(report_views, "chat_result")),
        (Verdict, decision_views.VERDICT),
        (InputDecision, decision_views.INPUT_DECISION),
        (OutputDecision, decision_views.OUTPUT_DECISION),
        (ManagerSchema, view(data_views, "manager_schema")),
        (QueryPage, view(data_views, "query_page")),
        (AggregatePage, view(data_views, "aggregate_page")),
    )


def view_of(obj: object) -> View:
    """The view of `obj`'s type.

    Raises:
        TypeError: When chatomon has no rich display for that type.
    """
    for kind, found in _views():
        if isinstance(obj, kind):
            return found
    raise TypeError(f"chatomon has no rich display for {type(obj).__name__} objects")


def render_html(obj: object) -> str:
    """`obj` as scoped HTML with badges, duration bars and `<details>` sections."""
    return view_of(obj).html(obj)


def render_markdown(obj: object) -> str:
    """`obj` as Markdown, for front ends that do not render HTML."""
    return view_of(obj).markdown(obj)


def render_text(obj: object) -> str:
    """`obj` as plain text."""
    return view_of(obj).text(obj)


def render_mimebundle(
    obj: object,
    include: Container[str] | None = None,
    exclude: Container[str] | None = None,
) -> dict[str, str]:
    """The text/plain and text/markdown representations IPython asks for.

    Args:
        obj: What to render.
        include: When given, only these MIME types are rendered.
        exclude: MIME types not to render.
    """
    found = view_of(obj)
    makers = {"text/plain": found.text, "text/markdown": found.markdown}
    return {
        mime: make(obj)
        for mime, make in makers.items()
        if (include is None or mime in include) and (exclude is None or mime not in exclude)
    }
