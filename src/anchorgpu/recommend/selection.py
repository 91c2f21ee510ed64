"""Which configuration of a sweep each offering and server count keeps: the fastest that fits (ties: less memory,
then grid order) and, where none fits, the one closest to fitting. Linear passes over the grid's (shape, servers)
runs, held to a full lexicographic sort by ``tests/recommend/test_group_selection.py``. A (shape, servers) group is a
run of whole layouts (the grid's first axis), so the first key is reduced per layout, then per group, and only the
few layouts that hold a group's least value are read entry by entry (:func:`_first_best_rows`, held equal to
:func:`_first_best` by the same tests)."""

from __future__ import annotations

import numpy as np

from anchorgpu.planner.sweep_types import SweepResult

__all__ = ["best_per_group", "best_serving_per_group", "closest_miss", "group_keys", "stages_on_scale_up_grid"]

Groups = dict[tuple[int, int], int]


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


def _first_best(group: np.ndarray, keys: tuple[np.ndarray, ...], among: np.ndarray | None = None) -> Groups:
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
    picked, runs = _rest_of_keys(tuple(key[positions] for key in keys[1:]), runs, starts.size)
    positions = positions[picked]
    chosen = positions if order is None else order[positions]
    # as Python ints (tolist), read in one pass rather than one numpy scalar at a time
    return {(g // 1024, g % 1024): p for g, p in zip(group[starts[runs]].tolist(), chosen.tolist(), strict=True)}


def _rest_of_keys(keys: tuple[np.ndarray, ...], runs: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Among entries tied on the first key (each key's values at them, in grid order; ``runs``: each one's group of
    ``groups``): which to keep, the least of each further key (NaN as infinite) and then the first of each group,
    with their groups."""
    picked = np.arange(runs.size)
    for key in keys:
        values = _finite(key[picked], np.inf)
        least = np.full(groups, np.inf)
        np.minimum.at(least, runs, values)
        keep = values == least[runs]
        picked, runs = picked[keep], runs[keep]
    first = np.empty(runs.size, dtype=bool)  # the first entry of each run still tied
    first[:1] = True
    np.not_equal(runs[1:], runs[:-1], out=first[1:])
    return picked[first], runs[first]


def _first_best_rows(row_group: np.ndarray, keys: tuple[np.ndarray, ...], among: np.ndarray | None = None,
                     row_ids: np.ndarray | None = None, *, own_first: bool = False) -> Groups | None:
    """:func:`_first_best` of a grid whose groups are made of whole rows (layouts): ``row_group`` the group of each
    row, ``keys`` and ``among`` of shape (rows, entries a row); entry ``j`` of row ``r`` is configuration
    ``row_ids[r] * entries + j`` (``row_ids`` default: ``r``, in increasing order). The first key is reduced per row
    and then per group, and only the rows holding their group's least value are compared entry by entry (rows out of
    group order, as the attention-DP layouts come last, are put in order by a stable sort of the rows alone). None
    (the caller takes :func:`_first_best`) where that could differ: a row whose least first key among its entries is
    NaN, infinite or +-the largest float (where :func:`_finite`'s mapping could tie or part entries). ``own_first``:
    ``keys[0]`` is the caller's scratch, written over (the entries not ``among`` as infinite) rather than copied."""
    rows, entries = keys[0].shape
    if rows == 0 or entries == 0:
        return None
    if among is None:
        first_key = keys[0]
    elif own_first:
        first_key = keys[0]
        np.copyto(first_key, np.inf, where=~among)
    else:
        first_key = np.where(among, keys[0], np.inf)
    # per row, over the flat entries (reduceat: a few times quicker than a reduction along a short last axis);
    # NaN wins a row (np.minimum propagates it): refused below
    row_starts = np.arange(0, rows * entries, entries)
    row_least = np.minimum.reduceat(first_key.reshape(-1), row_starts)
    present = None if among is None else np.logical_or.reduceat(among.reshape(-1), row_starts)  # an entry to count
    plain = np.abs(row_least if present is None else row_least[present]) < _LARGEST
    if not bool(plain.all()):
        return None
    order = None  # rows in group order, each group's in grid order
    if rows > 1 and bool((row_group[1:] < row_group[:-1]).any()):
        order = np.argsort(row_group, kind="stable")
        row_group, row_least = row_group[order], row_least[order]
        present = None if present is None else present[order]
    starts = np.flatnonzero(np.concatenate(([True], row_group[1:] != row_group[:-1])))
    row_runs = np.repeat(np.arange(starts.size), np.diff(np.append(starts, rows)))
    least = np.minimum.reduceat(row_least, starts)  # a group with no entry to count: inf, left out below
    held = row_least == least[row_runs]
    candidates = np.flatnonzero(held if present is None else held & present)
    source = candidates if order is None else order[candidates]  # the same rows in the arrays given
    tied = first_key[source] == row_least[candidates, None]
    if among is not None:
        tied &= among[source]
    at, columns = np.nonzero(tied)  # row by row, each in order: grid order within each group
    in_rows = source[at]
    picked, runs = _rest_of_keys(tuple(key[in_rows, columns] for key in keys[1:]), row_runs[candidates[at]],
                                 starts.size)
    ids = in_rows[picked] if row_ids is None else row_ids[in_rows[picked]]
    chosen = ids * entries + columns[picked]
    return {(g // 1024, g % 1024): p
            for g, p in zip(row_group[starts[runs]].tolist(), chosen.tolist(), strict=True)}


def _by_row(result: SweepResult, values: np.ndarray) -> np.ndarray:
    """``values`` (broadcastable to the grid) with one row per layout (the grid's first axis); a view where it can be."""
    shape = result.columns.shape
    return np.broadcast_to(values, shape).reshape(shape[0], -1)


def _layout_groups(result: SweepResult) -> np.ndarray | None:
    """(shape, servers) of each layout as one integer, as :func:`group_keys` gives it per configuration; None where
    they vary on another axis than the layouts'."""
    c = result.columns
    group = c.compact("shape") * 1024 + c.compact("servers")
    if group.ndim == 0 or group.size != group.shape[0] or group.shape[0] != c.shape[0]:
        return None
    return group.reshape(-1)


def best_per_group(result: SweepResult, usable: np.ndarray, group: np.ndarray | None = None, *,
                   margin: float | None = None, reach_held: bool = False) -> Groups:
    """Index of the fastest usable configuration per (shape, servers); ties: for training the more data-parallel
    ranks (the fewer GPUs a sequence's model is split over: Llama 3.1 8B at 131,072 tokens on 8 MI355X is CP 4 x DP 2,
    as ``plan`` chooses it, not CP 8 x DP 1 predicted as fast, whose ring attention has twice the hops), then less
    memory, then grid order. ``group``: :func:`group_keys` of the result, where the caller has it.

    ``margin`` (a training sweep; the calibration's training layout margin): each group's layout is picked by
    ``plan``'s chooser's rule instead (:func:`_by_chooser_rule`), ``reach_held`` as the chooser holds the launch."""
    found = _fastest_per_group(result, usable, group)
    if margin is None or result.task == "inference" or "train_order_tokens_per_s" not in result.columns:
        return found
    return _by_chooser_rule(result, usable, found, margin, reach_held, group)


# plan's chooser meets two candidates of one speed in its candidates' order (speed.layouts._candidates' loops: TP, CP,
# PP, ZeRO, interleaving, micro-batch, EP), the sweep's weight formats last
_CANDIDATE_ORDER = ("tp", "cp", "pp", "zero", "virtual_stages", "concurrency", "ep", "weights")
# two speeds that ranking.speed_rank may tie lie within a part in 10^8 of each other (RANK_DIGITS = 9)
_NEAR = 1e-8


def _by_chooser_rule(result: SweepResult, usable: np.ndarray, found: Groups, margin: float, reach_held: bool,
                     group: np.ndarray | None) -> Groups:
    """``found`` with each training group's configuration picked as ``plan``'s chooser picks a layout
    (:func:`~anchorgpu.planner.speed.chooser_margin.pick_split`): against the *first* layout that fits, the fastest by
    its speed before the climb past micro-batch 4 (``train_order_tokens_per_s``; ties at
    :func:`~anchorgpu.planner.speed.ranking.speed_rank`, then in the chooser's candidate order), another replaces
    it only where predicted faster by more than ``margin``, or simpler and faster at all, and within the launch's reach
    (:func:`~anchorgpu.planner.speed.chooser_margin.in_reach`), among the configurations the chooser tries. Mixtral 8x7B on 2 x 8 B200: ZeRO-1 at micro-batch 4
    (247,633 tok/s), as ``plan`` keeps it, not ZeRO-2 at 8 predicted 1.4% faster. Every split of the group is weighed,
    as the chooser weighs every split whose climb could beat the first
    (:func:`~anchorgpu.planner.speed.chooser_climb.climbers`).

    Vectorised down to the few configurations that can matter: per group the first's order speed, then only the
    configurations near it or faster than it (few: those that climbed past it) are read one by one."""
    from anchorgpu.planner.speed.chooser_margin import in_reach, pick_split
    from anchorgpu.planner.speed.ranking import speed_rank
    from anchorgpu.planner.speed.train_layout import TrainLayout

    c = result.columns
    keys = group_keys(result) if group is None else group
    codes, inverse = np.unique(keys, return_inverse=True)
    order = _finite(np.asarray(c["train_order_tokens_per_s"], dtype=np.float64), -np.inf)
    speed = _finite(np.asarray(c["train_tokens_per_s"], dtype=np.float64), -np.inf)
    # plan's chooser tries ZeRO 1-3 wherever DP x CP > 1 and no sharding only where it is 1 (layouts._candidates); the
    # sweep has no sharding everywhere (a LoRA tie with ZeRO-1): the rule weighs the configurations plan tries
    dp_cp = np.asarray(c["dp"]) * np.asarray(c["cp"])
    tried = usable & ((np.asarray(c["zero"]) > 0) | (dp_cp == 1))
    np.copyto(order, -np.inf, where=~tried)
    top = np.full(codes.size, -np.inf)
    np.maximum.at(top, inverse, order)
    floor = top[inverse] * (1.0 - _NEAR)
    near = np.flatnonzero(tried & (top[inverse] > 0) & ((order >= floor) | (speed > floor)))
    if near.size == 0:
        return found
    cols = {name: np.asarray(c[name])[near].tolist()
            for name in ("gpus", "dp", *_CANDIDATE_ORDER)}
    rows: dict[int, list[tuple[tuple[float, ...], TrainLayout, float, int]]] = {}
    for k, (i, g) in enumerate(zip(near.tolist(), inverse[near].tolist(), strict=True)):
        at = {name: int(values[k]) for name, values in cols.items()}
        lay = TrainLayout(gpus=at["gpus"], tp=at["tp"], pp=at["pp"], cp=at["cp"], dp=at["dp"], ep=at["ep"],
                          zero=at["zero"], virtual_stages=at["virtual_stages"])
        rows.setdefault(g, []).append(((-speed_rank(float(order[i])), *(at[n] for n in _CANDIDATE_ORDER)),
                                       lay, float(speed[i]), i))
    out = dict(found)
    for g, met in rows.items():
        met.sort(key=lambda row: row[0])  # the order the chooser meets them in: its first layout that fits first
        _, first, first_speed, first_i = met[0]
        others = [(lay, s, i) for _, lay, s, i in met[1:] if s > first_speed and in_reach(lay, first, reach_held)]
        pick = pick_split([(first, first_speed), *((lay, s) for lay, s, _ in others)], margin)
        code = int(codes[g])
        out[(code // 1024, code % 1024)] = first_i if pick == 0 else others[pick - 1][2]
    return out


def _fastest_per_group(result: SweepResult, usable: np.ndarray, group: np.ndarray | None) -> Groups:
    """:func:`best_per_group` with no margin: the fastest usable configuration per group, ties as it says."""
    c = result.columns
    name = "decode_tokens_per_s_total" if result.task == "inference" else "train_tokens_per_s"
    ranks = result.task != "inference" and "dp" in c
    layouts = _layout_groups(result)
    if layouts is not None:
        speed = np.negative(_by_row(result, np.asarray(c.compact(name), dtype=np.float64)))
        mem = _by_row(result, np.asarray(c.compact("per_gpu_total_bytes"), dtype=np.float64))
        dp = (np.negative(_by_row(result, np.asarray(c.compact("dp"), dtype=np.float64))),) if ranks else ()
        found = _first_best_rows(layouts, (speed, *dp, mem), among=usable.reshape(c.shape[0], -1), own_first=True)
        if found is not None:
            return found
    mem = np.asarray(c["per_gpu_total_bytes"], dtype=np.float64)
    speed = _speed_column(result)
    dp_all = (np.negative(np.asarray(c["dp"], dtype=np.float64)),) if ranks else ()
    return _first_best(group_keys(result) if group is None else group,
                       (np.negative(speed, out=speed), *dp_all, mem), among=usable)


def stages_on_scale_up_grid(result: SweepResult) -> np.ndarray:
    """Per configuration of a serving sweep: whether its replica runs pipeline stages on servers whose GPUs all
    share a scale-up link (:func:`~anchorgpu.planner.speed.serving_stages.stages_on_scale_up`,
    which plan's chooser reads)."""
    from anchorgpu.planner.speed.serving_stages import stages_on_scale_up

    c = result.columns
    tp, pp, shape = (np.asarray(c.compact(k), dtype=np.int64) for k in ("tp", "pp", "shape"))
    span = np.broadcast_arrays(tp * pp, shape)
    keys, where = np.unique(span[1] * 65536 + span[0], return_inverse=True)
    # per (shape, TP x PP): whether stages of a replica spanning that many GPUs run on scale-up servers
    inside = np.array([stages_on_scale_up(result.shapes[k // 65536].gpu, 1, k % 65536,
                                              gpus_per_server=result.shapes[k // 65536].gpus_per_server)
                       for k in keys.tolist()], dtype=bool)
    return c.widen(inside[where.reshape(span[0].shape)] & (pp > 1))


def best_serving_per_group(result: SweepResult, usable: np.ndarray) -> Groups:
    """:func:`best_per_group` of a serving sweep under the serving chooser's rule for pipeline stages
    (:mod:`~anchorgpu.planner.speed.serving_stages`): in a (shape, servers) group where a usable configuration of TP
    alone (no stages, no attention data parallelism) runs, the configurations with stages on scale-up servers are
    left out; elsewhere (PCIe-only servers, or TP alone holds nothing) all are ranked by speed, as plan's chooser
    ranks them."""
    inside = stages_on_scale_up_grid(result)
    if not bool((inside & usable).any()):
        return best_per_group(result, usable)
    c = result.columns
    without_stages = usable & ~inside
    # the groups where TP alone runs: only which groups hold such a configuration is read, not which is fastest
    tp_alone = _groups_holding(result, without_stages & c.widen(np.asarray(c.compact("ep")) <= np.asarray(
        c.compact("tp"))))
    if not tp_alone:
        return best_per_group(result, usable)
    # each group ranked once: those where TP alone runs without stages on scale-up servers, the others with them
    layouts = _layout_groups(result)
    if layouts is not None:
        codes = np.array(sorted(s * 1024 + servers for s, servers in tp_alone), dtype=layouts.dtype)
        in_tp = codes[np.minimum(np.searchsorted(codes, layouts), codes.size - 1)] == layouts  # (no np.isin: numpy.ma)
        found = [_fastest_in_rows(result, layouts, among, np.flatnonzero(rows))
                 for among, rows in ((usable, ~in_tp), (without_stages, in_tp))]
        if found[0] is not None and found[1] is not None:
            return dict(sorted({**found[0], **found[1]}.items()))  # in group order, as one ranking gives them
    best = best_per_group(result, usable)
    without = best_per_group(result, without_stages)
    return {key: (without[key] if key in tp_alone else i) for key, i in best.items()}


def _fastest_in_rows(result: SweepResult, layouts: np.ndarray, usable: np.ndarray, rows: np.ndarray) -> Groups | None:
    """:func:`_fastest_per_group` of a serving sweep over the layouts ``rows`` alone (whole groups, ascending; their
    groups ranked as over every layout), or None where :func:`_first_best_rows` would leave it to :func:`_first_best`."""
    if rows.size == 0:
        return {}
    c = result.columns
    speed = np.negative(_by_row(result, np.asarray(c.compact("decode_tokens_per_s_total"), dtype=np.float64))[rows])
    mem = _by_row(result, np.asarray(c.compact("per_gpu_total_bytes"), dtype=np.float64))[rows]
    return _first_best_rows(layouts[rows], (speed, mem), among=usable.reshape(c.shape[0], -1)[rows], row_ids=rows,
                            own_first=True)


def _groups_holding(result: SweepResult, among: np.ndarray) -> set[tuple[int, int]]:
    """The (shape, servers) groups with a configuration ``among``: the keys :func:`best_per_group` of ``among`` gives
    (a group with none is left out of it, one with any kept whatever its figures)."""
    layouts = _layout_groups(result)
    if layouts is not None:
        codes = layouts[among.reshape(layouts.size, -1).any(axis=1)]
    else:
        codes = group_keys(result)[among]
    return {(g // 1024, g % 1024) for g in set(codes.tolist())}


def closest_miss(result: SweepResult, group: np.ndarray | None = None, *,
                 skip: Groups | None = None) -> Groups:
    """Per (shape, servers) with nothing that fits: the configuration closest to fitting (least overshoot). A training
    sweep's layouts that split the stated global batch (``splits_batch``) come first; where none does, the one with
    the fewest data-parallel ranks. ``skip``: groups whose answer is not wanted (those with a configuration kept);
    they may be left out. ``group``: :func:`group_keys` of the result, where the caller has it."""
    c = result.columns  # on the grid's axes: the budget is per layout
    layouts = _layout_groups(result)
    if layouts is not None:
        rows = None
        if skip:
            codes = np.sort(np.array([s * 1024 + servers for s, servers in skip], dtype=layouts.dtype))
            at = np.minimum(np.searchsorted(codes, layouts), codes.size - 1)
            rows = np.flatnonzero(codes[at] != layouts)  # the layouts of the groups not skipped
            if rows.size == 0:
                return {}
        found = _first_best_rows(layouts if rows is None else layouts[rows], _miss_keys(result, rows), row_ids=rows)
        if found is not None:
            return found
    keys = tuple(c.widen(key) for key in _miss_keys(result, None, grid=True))
    return _first_best(group_keys(result) if group is None else group, keys)


def _miss_keys(result: SweepResult, rows: np.ndarray | None, *, grid: bool = False) -> tuple[np.ndarray, ...]:
    """The keys of :func:`closest_miss`: the memory over the budget, after the data-parallel ranks where a training
    sweep's layout does not split the global batch; one row per layout (``rows`` of them, default all), or on the
    grid's axes (``grid``)."""
    c = result.columns

    def column(name: str) -> np.ndarray:
        values = c.compact(name)
        if grid:
            return values
        by_row = _by_row(result, values)
        return by_row if rows is None else by_row[rows]

    over = (np.asarray(column("per_gpu_total_bytes"), dtype=np.float64)
            - np.asarray(column("budget_bytes"), dtype=np.float64))
    if "splits_batch" not in c:
        return (over,)
    return (np.where(column("splits_batch"), 0, column("dp")).astype(np.float64), over)
