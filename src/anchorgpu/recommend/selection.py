"""Which configuration of a sweep each offering and server count keeps: the fastest that fits (ties: less memory,
then grid order) and, where none fits, the one closest to fitting. Linear passes over the grid's (shape, servers)
runs, held to a full lexicographic sort by ``tests/recommend/test_group_selection.py``."""

from __future__ import annotations

import numpy as np

from anchorgpu.planner.sweep import SweepResult

__all__ = ["best_per_group", "closest_miss", "group_keys"]


_LARGEST = float(np.finfo(np.float64).max)


def _finite(values: np.ndarray, nan: float) -> np.ndarray:
    """``np.nan_to_num(values, nan=nan)`` of a float64 array (a new array: NaN as ``nan``, infinities as the largest
    finite floats), in three ufunc passes instead of its five with their Python-level checks."""
    out: np.ndarray = np.minimum(values, _LARGEST)  # NaN stays NaN through the clamps
    np.maximum(out, -_LARGEST, out=out)
    np.copyto(out, nan, where=np.isnan(out))
    return out


def _speed_column(result: SweepResult) -> np.ndarray:
    name = "decode_tokens_per_s_total" if result.task == "inference" else "train_tokens_per_s"
    return _finite(np.asarray(result.columns[name], dtype=np.float64), 0.0)


def group_keys(result: SweepResult) -> np.ndarray:
    """(shape, servers) of every configuration as one integer (computed once per layout, then widened)."""
    c = result.columns
    return c.widen(c.compact("shape") * 1024 + c.compact("servers"))


def _first_best(group: np.ndarray, keys: tuple[np.ndarray, ...],
                among: np.ndarray | None = None) -> dict[tuple[int, int], int]:
    """Per (shape, servers) group: the position of the first entry with the least ``keys[0]``, ties by the least
    ``keys[1]`` and so on (NaN counts as infinite), counting only the entries ``among`` (default all; a group
    with none is left out): the first entry of each group in ``np.lexsort((position, *reversed(keys), group))``
    over those entries, in a few linear passes over the groups' runs (the grid lists shapes, then servers, so
    the groups are already runs; a stable sort makes them runs otherwise)."""
    order = None
    if group.size > 1 and bool((group[1:] < group[:-1]).any()):
        order = np.argsort(group, kind="stable")
        group, keys = group[order], tuple(key[order] for key in keys)
        among = None if among is None else among[order]
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    # the first key over every entry; the next ones only over the entries still tied (few)
    masked = _finite(keys[0], np.inf)
    if among is not None:
        np.copyto(masked, np.inf, where=~among)
    tied = masked == np.repeat(np.minimum.reduceat(masked, starts), np.diff(np.append(starts, group.size)))
    positions = np.flatnonzero(tied if among is None else tied & among)
    runs = np.searchsorted(starts, positions, side="right") - 1
    for key in keys[1:]:
        values = _finite(key[positions], np.inf)
        least = np.full(starts.size, np.inf)
        np.minimum.at(least, runs, values)
        keep = values == least[runs]
        positions, runs = positions[keep], runs[keep]
    first = np.empty(runs.size, dtype=bool)  # the first entry of each run still tied
    first[:1] = True
    np.not_equal(runs[1:], runs[:-1], out=first[1:])
    positions, runs = positions[first], runs[first]
    chosen = positions if order is None else order[positions]
    # as Python ints (tolist), read in one pass rather than one numpy scalar at a time
    return {(g // 1024, g % 1024): p for g, p in zip(group[starts[runs]].tolist(), chosen.tolist(), strict=True)}


def best_per_group(result: SweepResult, usable: np.ndarray, group: np.ndarray) -> dict[tuple[int, int], int]:
    """Index of the fastest usable configuration per (shape, servers); ties: less memory, then grid order."""
    mem = np.asarray(result.columns["per_gpu_total_bytes"], dtype=np.float64)
    speed = _speed_column(result)
    return _first_best(group, (np.negative(speed, out=speed), mem), among=usable)


def closest_miss(result: SweepResult, group: np.ndarray) -> dict[tuple[int, int], int]:
    """Per (shape, servers) with nothing that fits: the configuration closest to fitting (least overshoot). A training
    sweep's layouts that split the stated global batch (``splits_batch``) come first; where none does, the one with
    the fewest data-parallel ranks."""
    c = result.columns  # on the grid's axes: the budget is per layout
    over = (np.asarray(c.compact("per_gpu_total_bytes"), dtype=np.float64)
            - np.asarray(c.compact("budget_bytes"), dtype=np.float64))
    if "splits_batch" not in c:
        return _first_best(group, (c.widen(over),))
    ranks_over = np.where(c.compact("splits_batch"), 0, c.compact("dp")).astype(np.float64)
    return _first_best(group, (c.widen(ranks_over), c.widen(over)))
