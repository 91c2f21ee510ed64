"""Geometry for the page's two SVG charts, as plain values the templates draw.

- :func:`memory_bar`: one stacked horizontal bar of a GPU's memory use (weights, KV cache, activations,
  gradients, optimizer state, runtime overhead) against a dashed line at the GPU's memory.
- :func:`scatter`: cost (x) against speed (y) for recommended offerings, each point numbered like its table
  row, with the Pareto front (no other offering both cheaper and faster) drawn as a staircase.

Both charts are drawn without a ``viewBox``: horizontal positions are percentages of the chart's width and
vertical ones CSS pixels, so text keeps its size at any screen width (a 720-unit drawing squeezed onto a
390 px phone once shrank its labels to about 4 px). Labels are placed so they cannot overlap at the
narrowest width the page allows (:data:`MIN_CHART_PX`).

Pure functions over numbers (no I/O, no templates), so the drawing is testable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from anchorgpu.web.i18n import N_

__all__ = ["MIN_CHART_PX", "WIDE_CHART_PX", "SEGMENTS", "BarSegment", "MemoryBar", "Point", "Scatter", "memory_bar", "nice_ticks", "pareto_front",
           "scatter"]

SEGMENTS: tuple[tuple[str, str], ...] = (
    ("weights", N_("Weights")),
    ("kv_cache", N_("KV cache")),
    ("activations", N_("Activations")),
    ("gradients", N_("Gradients")),
    ("optimizer", N_("Optimizer state")),
    ("overhead", N_("Runtime overhead")),
)
"""(key, label): key ``k`` is read from ``per_gpu[k + "_bytes"]`` of the plan JSON (DESIGN.md §5); the labels are
message ids of the catalogue, translated where they are drawn."""

GIB = 2**30
MIN_CHART_PX = 280
"""The narrowest a chart is drawn (CSS ``min-width``; a 390 px phone leaves it about 300 px)."""
WIDE_CHART_PX = 880
"""The narrowest a chart is on a wide screen (the page switches to wide tags at 1000 px; CSS in app.css)."""
PLOT_LEFT_PCT, PLOT_RIGHT_PCT = 1.0, 99.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BarSegment:
    key: str
    label: str
    bytes: int
    x: float  # percent of the chart's width
    width: float  # percent


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBar:
    """Horizontal values are percentages of the chart's width; vertical ones pixels."""

    height: int
    bar_y: int
    bar_height: int
    segments: tuple[BarSegment, ...]
    total_bytes: int
    memory_bytes: int | None
    limit_x: float | None
    ticks: tuple[tuple[float, str, str], ...]  # (x, label, text-anchor)
    over: bool
    limit_label_y: int = 0
    limit_anchor: str = "start"
    budget_bytes: int | None = None
    budget_x: float | None = None
    budget_label_y: int = 0
    budget_anchor: str = "start"


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


def _anchor(x_pct: float) -> str:
    """A label beside a marker runs toward the chart's roomier side, so it never crosses the marker's line
    nor leaves the chart (at :data:`MIN_CHART_PX`, half the width holds a 20-character label at 12 px)."""
    return "end" if x_pct > 50 else "start"


def memory_bar(per_gpu: Mapping[str, int | None], memory_bytes: int | None, *, budget_bytes: int | None = None,
               decimal_sign: str = ".") -> MemoryBar:
    """Lay out the stacked bar for one GPU; the axis covers both the total and the GPU's memory.

    The GPU's memory and (when it differs and is what the verdict compares with) a serving engine's budget
    each get a dashed line over the bar and a label on a row of its own above it, beside the line.

    >>> bar = memory_bar({"weights_bytes": 60 * GIB, "kv_cache_bytes": 10 * GIB}, 80 * GIB)
    >>> [s.key for s in bar.segments], bar.over, bar.limit_anchor
    (['weights', 'kv_cache'], False, 'end')
    >>> round(bar.segments[1].x - bar.segments[0].x, 1) == round(bar.segments[0].width, 1)
    True
    >>> [t[1:] for t in bar.ticks][::2]
    [('0 GiB', 'start'), ('40 GiB', 'middle'), ('80 GiB', 'end')]
    """
    sizes = [(key, label, int(per_gpu.get(f"{key}_bytes") or 0)) for key, label in SEGMENTS]
    total = sum(size for _, _, size in sizes)
    scale_max_gib = max(total, memory_bytes or 0, 1) / GIB
    ticks_gib = nice_ticks(scale_max_gib)
    axis_max_bytes = ticks_gib[-1] * GIB
    span = PLOT_RIGHT_PCT - PLOT_LEFT_PCT

    def x_of(value_bytes: float) -> float:
        return PLOT_LEFT_PCT + span * value_bytes / axis_max_bytes

    segments: list[BarSegment] = []
    cursor = 0
    for key, label, size in sizes:
        if size <= 0:
            continue
        segments.append(BarSegment(key=key, label=label, bytes=size, x=x_of(cursor), width=x_of(cursor + size) - x_of(cursor)))
        cursor += size
    last = len(ticks_gib) - 1
    tick_marks = tuple((x_of(t * GIB), f"{t:g} GiB".replace(".", decimal_sign), "start" if i == 0 else "end" if i == last else "middle")
                       for i, t in enumerate(ticks_gib))
    has_budget = bool(budget_bytes and budget_bytes != memory_bytes)
    row = 18
    limit_label_y = 14 if memory_bytes else 0
    budget_label_y = (limit_label_y + row if memory_bytes else 14) if has_budget else 0
    bar_y = max(limit_label_y, budget_label_y) + 10
    bar_height = 40
    limit_x = x_of(memory_bytes) if memory_bytes else None
    budget_x = x_of(budget_bytes) if has_budget and budget_bytes else None
    return MemoryBar(
        height=bar_y + bar_height + 26,
        bar_y=bar_y,
        bar_height=bar_height,
        segments=tuple(segments),
        total_bytes=total,
        memory_bytes=memory_bytes,
        limit_x=limit_x,
        ticks=tick_marks,
        over=memory_bytes is not None and total > memory_bytes,
        limit_label_y=limit_label_y,
        limit_anchor=_anchor(limit_x) if limit_x is not None else "start",
        budget_bytes=budget_bytes if has_budget else None,
        budget_x=budget_x,
        budget_label_y=budget_label_y,
        budget_anchor=_anchor(budget_x) if budget_x is not None else "start",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    rank: int  # the recommendation's row number in the table (1 = first)
    label: str
    cost: float
    speed: float
    x: float = 0.0  # percent of the chart's width
    y: float = 0.0  # pixels
    best: bool = False  # the cheapest or the fastest
    front: bool = False  # on the Pareto front
    tag: str = ""  # the number drawn on the point on a phone ("" when a nearby point's tag names this one too)
    tag_wide: str = ""  # the same on a wide screen, where fewer points are near each other


@dataclass(frozen=True, slots=True, kw_only=True)
class Scatter:
    height: int
    top: int
    plot_height: int
    left: float  # percent
    right: float  # percent
    points: tuple[Point, ...]
    front: tuple[tuple[float, float, float, float], ...]  # staircase segments (x1 %, y1 px, x2 %, y2 px)
    x_ticks: tuple[tuple[float, str, str], ...]  # (x %, label, text-anchor)
    y_ticks: tuple[tuple[float, str], ...]  # (y px, label)
    x_label: str
    y_label: str


def _tags(points: Sequence[tuple[str, float, float]], rows: Sequence[int], px: Callable[[float], float],
          py: Callable[[float], float], chart_px: int) -> list[str]:
    """Each point's tag at a chart ``chart_px`` wide: its row number, or for a group of points closer than a
    tag's size (about 24 × 22 px) the group's first point carries "2,3" or "2+" and the others none."""
    near_x_pct, near_y_px = 100 * 24 / chart_px, 22.0
    groups: list[list[int]] = []
    for i, (_, c, v) in enumerate(points):
        for group in groups:
            lead = points[group[0]]
            if abs(px(c) - px(lead[1])) < near_x_pct and abs(py(v) - py(lead[2])) < near_y_px:
                group.append(i)
                break
        else:
            groups.append([i])
    tags = [""] * len(points)
    for group in groups:
        ranks = [rows[i] for i in group]
        tags[group[0]] = str(ranks[0]) if len(ranks) == 1 else f"{ranks[0]},{ranks[1]}" if len(ranks) == 2 else f"{ranks[0]}+"
    return tags


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The (label, cost, speed) points that no other point beats on both cost and speed, cheapest first.

    >>> [p[0] for p in pareto_front([("a", 1, 10), ("b", 2, 5), ("c", 3, 30), ("d", 3, 20)])]
    ['a', 'c']
    """
    front: list[tuple[str, float, float]] = []
    for point in sorted(points, key=lambda p: (p[1], -p[2])):
        if not front or point[2] > front[-1][2]:
            front.append(point)
    return front


def _compact(value: float) -> str:
    """Tick text short enough for five ticks across :data:`MIN_CHART_PX` (12,000 → 12k, 1,500,000 → 1.5M)."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.10g}{suffix}"
    return f"{value:.10g}"


def scatter(points: Sequence[tuple[str, float, float]], *, x_label: str, y_label: str, height: int = 300,
            x_prefix: str = "", ranks: Sequence[int] | None = None, decimal_sign: str = ".") -> Scatter:
    """Place (label, cost, speed) points, in table order; flag the cheapest, the fastest and the Pareto front.

    ``decimal_sign`` writes the tick numbers in the page's locale (Babel's symbol: "," in Russian).
    ``ranks`` are the points' row numbers in the table (default 1, 2, …). Points closer than a tag's size at :data:`MIN_CHART_PX` share one tag ("2,3" or "2+"), so tags never
    overlap; each point stays its own focusable mark.

    >>> s = scatter([("a", 10.0, 100.0), ("b", 20.0, 300.0), ("c", 30.0, 200.0)], x_label="USD", y_label="tok/s")
    >>> [(p.label, p.best, p.front) for p in s.points]
    [('a', True, True), ('b', True, True), ('c', False, False)]
    >>> s.points[0].x < s.points[1].x and s.points[0].y > s.points[1].y
    True
    >>> len(s.front)  # a -> right to b's cost -> up to b
    2
    """
    top, bottom = 36, 44  # the y axis title on the first 20 px, the top tick's label under it
    left, right = 4.0, 96.0
    plot_height = height - top - bottom
    numbered = list(zip(ranks or range(1, len(points) + 1), points, strict=True))
    kept = [(rank, point) for rank, point in numbered if math.isfinite(point[1]) and math.isfinite(point[2])]
    finite = [point for _, point in kept]
    row_of = [rank for rank, _ in kept]
    x_ticks = nice_ticks(max((c for _, c, _ in finite), default=1.0), count=4)
    y_ticks = nice_ticks(max((v for _, _, v in finite), default=1.0), count=4)
    cheapest = min(finite, key=lambda p: p[1], default=None)
    fastest = max(finite, key=lambda p: p[2], default=None)
    on_front = pareto_front(finite)

    def px(c: float) -> float:
        return left + (right - left) * c / x_ticks[-1]

    def py(v: float) -> float:
        return top + plot_height * (1 - v / y_ticks[-1])

    narrow = _tags(finite, row_of, px, py, MIN_CHART_PX)
    wide = _tags(finite, row_of, px, py, WIDE_CHART_PX)
    placed = tuple(
        Point(rank=row_of[i], label=lbl, cost=c, speed=v, x=px(c), y=py(v), best=(lbl, c, v) in (cheapest, fastest),
              front=(lbl, c, v) in on_front, tag=narrow[i], tag_wide=wide[i])
        for i, (lbl, c, v) in enumerate(finite)
    )
    stairs: list[tuple[float, float, float, float]] = []
    for (_, c1, v1), (_, c2, v2) in zip(on_front, on_front[1:], strict=False):
        stairs.append((px(c1), py(v1), px(c2), py(v1)))
        stairs.append((px(c2), py(v1), px(c2), py(v2)))
    last = len(x_ticks) - 1
    return Scatter(
        height=height,
        top=top,
        plot_height=plot_height,
        left=left,
        right=right,
        points=placed,
        front=tuple(stairs),
        x_ticks=tuple((px(t), x_prefix + _compact(t).replace(".", decimal_sign), "start" if i == 0 else "end" if i == last else "middle")
                      for i, t in enumerate(x_ticks)),
        y_ticks=tuple((py(t), _compact(t).replace(".", decimal_sign)) for t in y_ticks),
        x_label=x_label,
        y_label=y_label,
    )
