"""Jupyter's rich display for chatomon's result objects (chat results, schemas, pages).

The renderers live in `chatomon.notebook.display` and load on first display, so that
importing chatomon stays light. (`chatomon.schemas` has its own copy of this mixin: that
module imports nothing from chatomon.)
"""

from __future__ import annotations

from collections.abc import Container

__all__ = ["RichDisplay"]


class RichDisplay:
    """`_repr_html_` and `_repr_mimebundle_` (HTML, Markdown, plain text) for a subclass."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from chatomon.notebook.display import render_html  # noqa: PLC0415 - on first display

        return render_html(self)

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> dict[str, str]:
        from chatomon.notebook.display import render_mimebundle  # noqa: PLC0415

        return render_mimebundle(self, include, exclude)
