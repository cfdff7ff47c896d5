"""`show_turns(reports)`: a table of TurnReports with filters, in a notebook.

The filters are traits of the returned `TurnsTable` (and dropdowns and a checkbox bound
to them): the final action, the atom, escalated turns only, and an orbital whose verdict
was not "allow". `TurnsTable.visible` is what the table shows.

Displayed, the table also leaves a static copy in the output (`text/html` and
`text/plain` beside the widget view), updated in place (IPython display id) whenever a
filter changes: a notebook saved afterwards, exported by nbconvert or read on GitHub shows
the turns as they were filtered, with the filters named above the table.

```python
from chatomon.notebook import show_turns

table = show_turns(widget.reports)
table.final_action = "blocked"
[report.turn_id for report in table.visible]
```
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import ipywidgets
from traitlets import Bool, Unicode

from chatomon.notebook.markup import (
    badge,
    details,
    duration_bar,
    escape,
    format_ms,
    plural,
    table,
    view,
)
from chatomon.notebook.report_views import report_body_html
from chatomon.schemas import TurnReport

__all__ = ["ANY", "TurnsTable", "matching_reports", "show_turns", "turns_html", "turns_text"]

ANY = "(any)"
"""The filter value that lets every report through."""

HEADERS = ("started", "atom", "final action", "duration", "tokens", "not allowed by", "turn")


def _stopped_by(report: TurnReport) -> list[str]:
    results = [*report.input, *(r for attempt in report.output for r in attempt.results)]
    return [result.name for result in results if result.action != "allow"]


def matching_reports(
    reports: Iterable[TurnReport],
    *,
    final_action: str = ANY,
    atom_name: str = ANY,
    escalated_only: bool = False,
    orbital: str = ANY,
) -> list[TurnReport]:
    """The reports that pass every filter; `ANY` (or False) turns a filter off."""
    return [
        report
        for report in reports
        if final_action in (ANY, report.final_action)
        and atom_name in (ANY, report.atom_name)
        and (report.escalated or not escalated_only)
        and (orbital == ANY or orbital in _stopped_by(report))
    ]


def _caption(count: int, of: int | None, filters: Sequence[str]) -> str:
    caption = plural(count, "turn") if of is None else f"{count} of {plural(of, 'turn')}"
    return caption + (f" · filtered by {', '.join(filters)}" if filters else "")


def turns_html(
    reports: Sequence[TurnReport], *, of: int | None = None, filters: Sequence[str] = ()
) -> str:
    """The reports as one table, each followed by its whole report in a closed section.

    Args:
        reports: The reports shown.
        of: How many reports there are in all, when `reports` is a filtered part of them.
        filters: The filters applied, in words ("final action blocked"), named above.
    """
    if not reports:
        named = f" ({escape(_caption(0, of, filters))})" if filters else ""
        return view(f'<div class="cm-muted">No turn matches{named}.</div>')
    longest = max(report.duration_ms for report in reports)
    rows = [
        [
            '<span class="cm-nowrap">'
            + escape(report.started_at.isoformat(sep=" ", timespec="seconds"))
            + "</span>",
            escape(report.atom_name),
            badge(report.final_action) + (" " + badge("escalated") if report.escalated else ""),
            duration_bar(report.duration_ms, longest),
            escape(report.usage.total_tokens),
            escape(", ".join(_stopped_by(report))),
            escape(report.turn_id),
        ]
        for report in reports
    ]
    sections = "".join(
        details(f"Turn {escape(report.turn_id)}", report_body_html(report)) for report in reports
    )
    caption = f"<div><b>{escape(_caption(len(reports), of, filters))}</b></div>"
    return view(caption + table(HEADERS, rows) + sections)


def turns_text(
    reports: Sequence[TurnReport], *, of: int | None = None, filters: Sequence[str] = ()
) -> str:
    """The reports as a plain-text table: one line per turn (`of`, `filters`: as turns_html)."""
    if not reports:
        return f"No turn matches ({_caption(0, of, filters)})." if filters else "No turn matches."
    lines = [_caption(len(reports), of, filters)]
    lines += [
        f"  {report.started_at.isoformat(timespec='seconds')}  {report.atom_name:<16} "
        f"{report.final_action + (' (escalated)' if report.escalated else ''):<24} "
        f"{format_ms(report.duration_ms):>10}  {report.turn_id}"
        for report in reports
    ]
    return "\n".join(lines)


def _choices(values: Iterable[str]) -> list[str]:
    return [ANY, *sorted(set(values))]


class TurnsTable(ipywidgets.VBox):  # type: ignore[misc]
    """The filterable table `show_turns` returns.

    Attributes:
        reports: Every report given.
        final_action: Show only turns that ended so (`ANY` for all).
        atom_name: Show only turns of this atom.
        escalated_only: Show only escalated turns.
        orbital: Show only turns in which this orbital did not allow the text.
    """

    final_action = Unicode(ANY)
    atom_name = Unicode(ANY)
    escalated_only = Bool(False)
    orbital = Unicode(ANY)
    FILTERS = ("final_action", "atom_name", "escalated_only", "orbital")

    def __init__(self, reports: Iterable[TurnReport], **kwargs: Any) -> None:
        self.reports = tuple(reports)
        names = [name for report in self.reports for name in _stopped_by(report)]
        controls = {
            "final_action": ipywidgets.Dropdown(
                options=_choices(r.final_action for r in self.reports), description="action"
            ),
            "atom_name": ipywidgets.Dropdown(
                options=_choices(r.atom_name for r in self.reports), description="atom"
            ),
            "orbital": ipywidgets.Dropdown(options=_choices(names), description="orbital"),
            "escalated_only": ipywidgets.Checkbox(description="escalated only"),
        }
        self._table = ipywidgets.HTML()
        super().__init__(children=[ipywidgets.HBox(list(controls.values())), self._table], **kwargs)
        for name, control in controls.items():
            ipywidgets.link((control, "value"), (self, name))
        self._displays: list[Any] = []  # IPython DisplayHandles of this table's outputs
        self.observe(self._render, names=list(self.FILTERS))
        self._render()

    @property
    def visible(self) -> list[TurnReport]:
        """The reports the filters let through, in the order given."""
        return matching_reports(
            self.reports,
            final_action=self.final_action,
            atom_name=self.atom_name,
            escalated_only=self.escalated_only,
            orbital=self.orbital,
        )

    @property
    def applied_filters(self) -> list[str]:
        """The filters in use, in words: ``["final action blocked", "escalated only"]``."""
        applied = [
            f"{label} {value}"
            for label, value in (
                ("final action", self.final_action),
                ("atom", self.atom_name),
                ("orbital", self.orbital),
            )
            if value != ANY
        ]
        return applied + (["escalated only"] if self.escalated_only else [])

    def _render(self, _change: object = None) -> None:
        self._table.value = turns_html(self.visible)
        self._refresh_static_copies()

    def _static_copy(self) -> dict[str, str]:
        visible, filters = self.visible, self.applied_filters
        of = len(self.reports) if filters else None
        return {
            "text/html": turns_html(visible, of=of, filters=filters),
            "text/plain": turns_text(visible, of=of, filters=filters),
        }

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget view, and beside it the table as filtered now (text/html, text/plain).

        The static copy is what nbconvert, GitHub and a notebook without its kernel show.
        """
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # closed
            return None
        return {**bundle, **self._static_copy()}

    def _ipython_display_(self) -> None:
        """Display the table with its static copy, under a display id.

        Whenever a filter changes, the copy is updated in place, so the notebook saved
        afterwards shows the turns as filtered in the widget.
        """
        from IPython.display import display  # noqa: PLC0415 - only inside IPython

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            handle = display(bundle, raw=True, display_id=True)  # type: ignore[no-untyped-call]
            self._displays.append(handle)

    def _refresh_static_copies(self) -> None:
        displays = getattr(self, "_displays", ())  # none yet while __init__ renders
        if not displays:
            return
        bundle = self._repr_mimebundle_()
        if bundle is None:
            return
        for handle in displays:
            handle.update(bundle, raw=True)


def show_turns(reports: Iterable[TurnReport]) -> TurnsTable:
    """A table of `reports` with filters; display it by leaving it last in a cell."""
    return TurnsTable(reports)
