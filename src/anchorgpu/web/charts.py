"""Geometry for the page's two SVG charts, as plain values the templates draw.

- :func:`memory_bar`: one stacked horizontal bar of a GPU's memory use (weights, KV cache, activations,
  gradients, optimizer state, runtime overhead) against a dashed line at the GPU's memory.
- :func:`scatter`: cost (x) against speed (y) for recommended offerings; the cheapest and the fastest
  are marked.

Pure functions over numbers (no I/O, no templates), so the drawing is testable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["SEGMENTS", "BarSegment", "MemoryBar", "Point", "Scatter", "memory_bar", "nice_ticks", "scatter"]

SEGMENTS: tuple[tuple[str, str], ...] = (
    ("weights", "Weights"),
    ("kv_cache", "KV cache"),
    ("activations", "Activations"),
    ("gradients", "Gradients"),
    ("optimizer", "Optimizer state"),
    ("overhead", "Runtime overhead"),
)
"""(key, label): key ``k`` is read from ``per_gpu[k + "_bytes"]`` of the plan JSON (DESIGN.md §5)."""

GIB = 2**30


@dataclass(frozen=True, slots=True, kw_only=True)
class BarSegment:
    key: str
    label: str
    bytes: int
    x: float
    width: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBar:
    width: int
    height: int
    bar_y: int
    bar_height: int
    left: int
    plot_width: int
    segments: tuple[BarSegment, ...]
    total_bytes: int
    memory_bytes: int | None
    limit_x: float | None
    ticks: tuple[tuple[float, str], ...]  # (x, label)
    over: bool
    budget_bytes: int | None = None
    budget_x: float | None = None


def nice_ticks(maximum: float, *, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``maximum`` (1, 2 or 5 × a power of ten apart).

    >>> nice_ticks(80)
    [0.0, 20.0, 40.0, 60.0, 80.0]
    >>> nice_ticks(0)
    [0.0, 1.0]
    """
    if maximum <= 0 or not math.isfinite(maximum):
        return [0.0, 1.0]
    raw = maximum / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(maximum / step - 1e-9)
    return [float(round(i * step, 10)) for i in range(n + 1)]


def memory_bar(per_gpu: Mapping[str, int | None], memory_bytes: int | None, *, budget_bytes: int | None = None, width: int = 720) -> MemoryBar:
    """Lay out the stacked bar for one GPU; the axis covers both the total and the GPU's memory.

    ``budget_bytes`` (a serving engine's share of the memory, when it is what the verdict compares
    with) gets its own marker when it differs from the GPU's memory.

    >>> bar = memory_bar({"weights_bytes": 60 * GIB, "kv_cache_bytes": 10 * GIB}, 80 * GIB)
    >>> [s.key for s in bar.segments], bar.over
    (['weights', 'kv_cache'], False)
    >>> round(bar.segments[1].x - bar.segments[0].x, 1) == round(bar.segments[0].width, 1)
    True
    """
    left, right, bar_y, bar_height = 12, 20, 40, 40
    plot_width = width - left - right
    sizes = [(key, label, int(per_gpu.get(f"{key}_bytes") or 0)) for key, label in SEGMENTS]
    total = sum(size for _, _, size in sizes)
    scale_max_gib = max(total, memory_bytes or 0, 1) / GIB
    ticks_gib = nice_ticks(scale_max_gib)
    axis_max_bytes = ticks_gib[-1] * GIB

    def x_of(value_bytes: float) -> float:
        return left + plot_width * value_bytes / axis_max_bytes

    segments: list[BarSegment] = []
    cursor = 0
    for key, label, size in sizes:
        if size <= 0:
            continue
        segments.append(BarSegment(key=key, label=label, bytes=size, x=x_of(cursor), width=x_of(cursor + size) - x_of(cursor)))
        cursor += size
    tick_marks = tuple((x_of(t * GIB), f"{t:g} GiB") for t in ticks_gib)
    return MemoryBar(
        width=width,
        height=bar_y + bar_height + 28,
        bar_y=bar_y,
        bar_height=bar_height,
        left=left,
        plot_width=plot_width,
        segments=tuple(segments),
        total_bytes=total,
        memory_bytes=memory_bytes,
        limit_x=x_of(memory_bytes) if memory_bytes else None,
        ticks=tick_marks,
        over=memory_bytes is not None and total > memory_bytes,
        budget_bytes=budget_bytes if budget_bytes and budget_bytes != memory_bytes else None,
        budget_x=x_of(budget_bytes) if budget_bytes and budget_bytes != memory_bytes else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    label: str
    cost: float
    speed: float
    x: float = 0.0
    y: float = 0.0
    best: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Scatter:
    width: int
    height: int
    left: int
    top: int
    plot_width: int
    plot_height: int
    points: tuple[Point, ...]
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    x_label: str
    y_label: str


def scatter(points: Sequence[tuple[str, float, float]], *, x_label: str, y_label: str, width: int = 720, height: int = 320) -> Scatter:
    """Place (label, cost, speed) points; the cheapest and the fastest are flagged ``best``.

    >>> s = scatter([("a", 10.0, 100.0), ("b", 20.0, 300.0)], x_label="USD", y_label="tok/s")
    >>> [(p.label, p.best) for p in s.points]
    [('a', True), ('b', True)]
    >>> s.points[0].x < s.points[1].x and s.points[0].y > s.points[1].y
    True
    """
    left, top, right, bottom = 70, 16, 20, 48
    plot_width, plot_height = width - left - right, height - top - bottom
    finite = [(lbl, c, v) for lbl, c, v in points if math.isfinite(c) and math.isfinite(v)]
    x_ticks = nice_ticks(max((c for _, c, _ in finite), default=1.0))
    y_ticks = nice_ticks(max((v for _, _, v in finite), default=1.0))
    cheapest = min(finite, key=lambda p: p[1], default=None)
    fastest = max(finite, key=lambda p: p[2], default=None)

    def px(c: float) -> float:
        return left + plot_width * c / x_ticks[-1]

    def py(v: float) -> float:
        return top + plot_height * (1 - v / y_ticks[-1])

    placed = tuple(
        Point(label=lbl, cost=c, speed=v, x=px(c), y=py(v), best=(lbl, c, v) in (cheapest, fastest)) for lbl, c, v in finite
    )
    return Scatter(
        width=width,
        height=height,
        left=left,
        top=top,
        plot_width=plot_width,
        plot_height=plot_height,
        points=placed,
        x_ticks=tuple((px(t), f"{t:,.10g}") for t in x_ticks),
        y_ticks=tuple((py(t), f"{t:,.10g}") for t in y_ticks),
        x_label=x_label,
        y_label=y_label,
    )
