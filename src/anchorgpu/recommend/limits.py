"""A serving recommendation's per-user latency limits (``recommend --min-tokens-per-s-per-user X --max-ttft-s T``,
AIConfigurator's SLA of TPOT and TTFT): every configuration whose PREDICTED decode tokens/s a user (the calibrated
figure, not its roofline ceiling) is below ``X``, or whose predicted time to the first token is above ``T``, at its
own concurrency, is set aside before each offering and server count keeps its fastest configuration. The limits are
applied over the whole grid, so an offering keeps the layout (more TP, fewer users a replica, another precision) that
meets them where one does; the sweep has already added each layout's own rung at the most users that meet them
(:mod:`anchorgpu.planner.sweep_floor`), so no layout is priced at a power of two below what it could serve. What was
applied and how many offerings it turned away are stated (:class:`LimitsApplied`). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.units import fmt_given

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import SweepResult

__all__ = ["LimitsApplied", "apply_limits", "limits_json", "limits_line"]

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsApplied:
    """The limits a serving recommendation applied (None: not given) and, for each, the offerings and (offering,
    server count) options that had a configuration that fits and runs but lost every one to that limit, counted in
    turn (the floor first, then the TTFT limit on what the floor kept)."""

    min_tokens_per_s_per_user: float | None = None
    max_ttft_s: float | None = None
    offerings_dropped_by_floor: int = 0
    options_dropped_by_floor: int = 0
    offerings_dropped_by_ttft: int = 0
    options_dropped_by_ttft: int = 0

    @property
    def any(self) -> bool:
        return self.min_tokens_per_s_per_user is not None or self.max_ttft_s is not None


def _groups_with_any(result: SweepResult, usable: BoolArray) -> tuple[set[int], set[tuple[int, int]]]:
    """The shapes (offerings) and (shape, servers) groups with at least one ``usable`` configuration: reduced per
    layout (the grid's first axis) first, so the cost is one pass over the grid and then one per layout."""
    c = result.columns
    per_layout = usable.reshape(c.shape[0], -1).any(axis=1)
    shapes = c.compact("shape").reshape(-1)[per_layout].tolist()
    servers = c.compact("servers").reshape(-1)[per_layout].tolist()
    return set(shapes), set(zip(shapes, servers, strict=True))


def apply_limits(result: SweepResult, usable: BoolArray, min_tokens_per_s_per_user: float | None,
                 max_ttft_s: float | None) -> tuple[BoolArray, LimitsApplied]:
    """``usable`` (one entry per configuration) less the configurations that miss a limit, and what was applied."""
    if min_tokens_per_s_per_user is None and max_ttft_s is None:
        return usable, LimitsApplied()
    c = result.columns
    counts: dict[str, int] = {}
    before = _groups_with_any(result, usable)
    for name, limit, column, keep in (
            ("floor", min_tokens_per_s_per_user, "decode_tokens_per_s_per_user", np.greater_equal),
            ("ttft", max_ttft_s, "prefill_s", np.less_equal)):
        if limit is None:
            continue
        usable = usable & keep(np.asarray(c[column], dtype=np.float64), limit)  # NaN (no figure) never kept
        after = _groups_with_any(result, usable)
        counts[f"offerings_dropped_by_{name}"] = len(before[0] - after[0])
        counts[f"options_dropped_by_{name}"] = len(before[1] - after[1])
        before = after
    return usable, LimitsApplied(min_tokens_per_s_per_user=min_tokens_per_s_per_user, max_ttft_s=max_ttft_s,
                                 **counts)


def limits_line(applied: LimitsApplied) -> str | None:
    """The assumption that states the limits applied (None where none was).

    >>> print(limits_line(LimitsApplied(min_tokens_per_s_per_user=20.0, max_ttft_s=2.0, offerings_dropped_by_floor=3,
    ...                                 options_dropped_by_floor=7)))
    Per-user limits applied to each configuration's predicted figures at its own concurrency (the calibrated prediction, not the roofline ceiling): decode at least 20 tokens/s a user (a token every 50 ms or sooner), which turned away 3 offerings (7 offering x server counts) that fit; first token within 2 s, which turned away none. An offering keeps the fastest layout and concurrency that meets them.
    """
    if not applied.any:
        return None

    def away(offerings: int, options: int) -> str:
        if not options:
            return "which turned away none"
        return (f"which turned away {offerings:,} offering{'' if offerings == 1 else 's'} ({options:,} offering x "
                "server counts) that fit")

    parts = []
    floor = applied.min_tokens_per_s_per_user
    if floor is not None:
        parts.append(f"decode at least {fmt_given(floor)} tokens/s a user{_interval(floor)}, "
                     + away(applied.offerings_dropped_by_floor, applied.options_dropped_by_floor))
    if applied.max_ttft_s is not None:
        parts.append(f"first token within {fmt_given(applied.max_ttft_s)} s, "
                     + away(applied.offerings_dropped_by_ttft, applied.options_dropped_by_ttft))
    return ("Per-user limits applied to each configuration's predicted figures at its own concurrency (the "
            f"calibrated prediction, not the roofline ceiling): {'; '.join(parts)}. An offering keeps the fastest "
            "layout and concurrency that meets them.")


def _interval(floor: float) -> str:
    """The floor as the time between tokens, 3 significant figures with separators (" (a token every 50 ms or
    sooner)"); none where that time outgrows what a plain number writes (a floor of 1e-300 tokens/s: 1e+303 ms, or
    inf ms below about 1e-305).

    >>> _interval(20.0), _interval(0.04), _interval(1e-300)
    (' (a token every 50 ms or sooner)', ' (a token every 25,000 ms or sooner)', '')
    """
    interval_ms = float(f"{1000 / floor:.3g}")
    if not interval_ms < 1e21:  # fmt_given's plain-number limit; also inf
        return ""
    return f" (a token every {fmt_given(interval_ms)} ms or sooner)"


def limits_json(applied: LimitsApplied) -> dict[str, Any]:
    """The JSON's ``limits``: each limit applied (null: not given) and, per limit, what it turned away."""
    return {
        "min_tokens_per_s_per_user": applied.min_tokens_per_s_per_user,
        "max_ttft_s": applied.max_ttft_s,
        "dropped": {
            "min_tokens_per_s_per_user": {"offerings": applied.offerings_dropped_by_floor,
                                          "options": applied.options_dropped_by_floor},
            "max_ttft_s": {"offerings": applied.offerings_dropped_by_ttft, "options": applied.options_dropped_by_ttft},
        },
    }
