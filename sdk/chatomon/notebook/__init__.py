"""chatomon in Jupyter: a chat widget, a table of turns, reports as DataFrames.

```python
from chatomon.notebook import ChatWidget, reports_to_dataframe, show_turns

widget = ChatWidget(atom)             # an Atom or a ChatService
widget                                # the chat panel
show_turns(widget.reports)            # every turn, with filters
reports_to_dataframe(widget.reports)  # a row per orbital run, every turn at least one (pandas)
```

The chatomon objects a notebook shows (TurnReport, OrbitalResult, Verdict, the decisions,
ChatResult, ManagerSchema, QueryPage) render themselves through `chatomon.notebook.display`
without importing this package's widgets. `ChatWidget` and `show_turns` need ipywidgets
(`pip install "chatomon[notebook]"`), the DataFrames pandas (`pip install
"chatomon[pandas]"`); each raises `OptionalDependencyError` with that hint when missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from chatomon.errors import OptionalDependencyError
from chatomon.notebook.dataframes import report_rows, report_to_dataframe, reports_to_dataframe

if TYPE_CHECKING:
    from chatomon.notebook.turns_table import TurnsTable, show_turns
    from chatomon.notebook.widget import ChatWidget

__all__ = [
    "ChatWidget",
    "TurnsTable",
    "report_rows",
    "report_to_dataframe",
    "reports_to_dataframe",
    "show_turns",
]

_WIDGETS = {
    "ChatWidget": "chatomon.notebook.widget",
    "TurnsTable": "chatomon.notebook.turns_table",
    "show_turns": "chatomon.notebook.turns_table",
}


def __getattr__(name: str) -> Any:
    # The widgets load on first use: display and DataFrames work without ipywidgets.
    module = _WIDGETS.get(name)
    if module is None:
        raise AttributeError(f"module 'chatomon.notebook' has no attribute {name!r}")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as error:
        if error.name not in ("ipywidgets", "traitlets"):
            raise
        raise OptionalDependencyError(
            error.name, "notebook", feature=f"chatomon.notebook.{name}"
        ) from error
