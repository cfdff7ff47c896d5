"""Jupyter's rich display for chatomon's result objects (chat results, schemas, pages).

The mixin is defined in `chatomon.schemas`, which imports nothing from chatomon, so that
the contracts there display the same way; the renderers live in
`chatomon.notebook.display` and load on first display, so that importing chatomon stays
light.
"""

from __future__ import annotations

from chatomon.schemas import _RichDisplay as RichDisplay

__all__ = ["RichDisplay"]
