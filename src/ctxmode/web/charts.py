"""Inline SVG bar charts computed server-side (no JavaScript, no external assets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: int


@dataclass(frozen=True)
class BarChart:
    """Geometry of a bar chart; the template draws it as ``<rect>`` elements."""

    width: int
    height: int
    plot_top: int
    plot_height: int
    bars: tuple[Bar, ...]
    maximum: int
    first_label: str
    last_label: str
    total: int


def bar_chart(
    points: Sequence[tuple[str, int]], width: int = 640, height: int = 160, gap: float = 2.0
) -> BarChart:
    """Bars for ``(label, value)`` points, scaled so the largest value fills the plot."""
    plot_top = 16  # room for the scale label above the bars
    plot_height = height - plot_top - 20  # and for the date labels under them
    maximum = max((v for _, v in points), default=0)
    step = width / max(1, len(points))
    bars = []
    for i, (label, value) in enumerate(points):
        h = 0.0 if maximum == 0 else max(1.0, plot_height * value / maximum) if value else 0.0
        bars.append(
            Bar(
                x=round(i * step + gap / 2, 2),
                y=round(plot_top + plot_height - h, 2),
                width=round(max(1.0, step - gap), 2),
                height=round(h, 2),
                label=label,
                value=value,
            )
        )
    return BarChart(
        width=width,
        height=height,
        plot_top=plot_top,
        plot_height=plot_height,
        bars=tuple(bars),
        maximum=maximum,
        first_label=points[0][0] if points else "",
        last_label=points[-1][0] if points else "",
        total=sum(v for _, v in points),
    )
