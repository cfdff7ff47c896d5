"""Small server-rendered bar charts: geometry for inline SVG, no JavaScript chart library."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BarChart", "ChartBar", "bar_chart"]


@dataclass(frozen=True)
class ChartBar:
    """One bar: its label, value, link and rectangle."""

    label: str
    value: int
    href: str
    x: float
    y: float
    width: float
    height: float

    @property
    def label_y(self) -> float:
        """Baseline of the value text above the bar."""
        return self.y - 4

    @property
    def middle_x(self) -> float:
        """Horizontal centre of the bar."""
        return self.x + self.width / 2


@dataclass(frozen=True)
class BarChart:
    """A vertical bar chart of a few values."""

    bars: tuple[ChartBar, ...]
    width: int
    height: int
    baseline: float


def bar_chart(
    items: Sequence[tuple[str, int, str]], *, width: int = 420, height: int = 160
) -> BarChart:
    """Bars for `(label, value, href)` items, scaled to the largest value."""
    plot_top, baseline = 18.0, float(height - 22)
    slot = width / max(len(items), 1)
    peak = max((value for _, value, _ in items), default=0) or 1
    bars = []
    for index, (label, value, href) in enumerate(items):
        bar_height = (baseline - plot_top) * value / peak
        bars.append(
            ChartBar(label, value, href, x=index * slot + slot * 0.15,
                     y=baseline - bar_height, width=slot * 0.7, height=bar_height)
        )  # fmt: skip
    return BarChart(tuple(bars), width, height, baseline)
