"""recommend keeps, per (offering, servers), the fastest configuration that fits (ties: less memory, then grid
order) and, where none fits, the closest miss. The linear selection must pick what a full lexicographic sort
picks, ties, infinities and groups out of order included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.recommend.selection import _finite, _first_best, _first_best_rows

VALUES = st.sampled_from([0.0, 1.0, 2.0, 3.5, -1.0, np.inf, -np.inf])


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8), shuffled=st.booleans(), data=st.data())
def test_the_linear_selection_picks_what_the_sort_picks(sizes: list[int], shuffled: bool, data: st.DataObject) -> None:
    group = np.repeat(np.arange(len(sizes)) * 3 + 1, sizes)  # runs of equal keys, as the grid lists them
    n = group.size
    if shuffled:
        group = group[np.array(data.draw(st.permutations(list(range(n)))), dtype=np.int64)]
    first_key = np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)))
    second_key = np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)))
    for keys in ((first_key,), (first_key, second_key)):
        order = np.lexsort((np.arange(n), *reversed(keys), group))
        g_sorted = group[order]
        first = np.concatenate(([True], g_sorted[1:] != g_sorted[:-1]))
        expected = {(int(g) // 1024, int(g) % 1024): int(p) for g, p in zip(g_sorted[first], order[first], strict=True)}
        assert _first_best(group, keys) == expected
        among = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        idx = np.flatnonzero(among)  # only the entries among: what a sort of those alone picks, by position
        order = np.lexsort((idx, *(key[idx] for key in reversed(keys)), group[idx]))
        g_sorted = group[idx][order]
        first = np.concatenate(([True], g_sorted[1:] != g_sorted[:-1]))[:idx.size]
        expected = {(int(g) // 1024, int(g) % 1024): int(p)
                    for g, p in zip(g_sorted[first], idx[order][first], strict=True)}
        assert _first_best(group, keys, among=among) == expected


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), VALUES), max_size=40),
       nan=st.sampled_from([0.0, np.inf]))
def test_finite_is_nan_to_num(values: list[float], nan: float) -> None:
    array = np.array(values, dtype=np.float64)
    expected = np.nan_to_num(array, nan=nan)
    got = _finite(array, nan)
    assert got.tobytes() == expected.tobytes()  # to the bit, signed zeros included


_LARGEST = float(np.finfo(np.float64).max)
ROW_VALUES = st.sampled_from([0.0, 1.0, 2.0, -1.0, _LARGEST, -_LARGEST, np.inf, -np.inf, np.nan])


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=6), entries=st.integers(1, 4), tail=st.booleans(),
       finite=st.booleans(), data=st.data())
def test_the_selection_by_layout_picks_what_the_linear_one_picks(sizes: list[int], entries: int, tail: bool,
                                                                 finite: bool, data: st.DataObject) -> None:
    """Groups made of whole rows (layouts), some rows of a group after the others' (as the attention-DP layouts come
    last): the per-row reduction picks what :func:`_first_best` picks over the same entries, or declines (None) only
    where a row's least first key is not an ordinary finite number; over a subset of the rows (``row_ids``) it picks
    what the subset alone gives, at the configurations' own indices."""
    row_group = np.repeat(np.arange(len(sizes)) * 1024 + 1, sizes)
    if tail:  # a group's extra rows at the end, out of group order
        row_group = np.concatenate((row_group, row_group[:1]))
    rows = row_group.size
    values = VALUES if finite else ROW_VALUES
    shape = (rows, entries)
    keys = tuple(np.array(data.draw(st.lists(values, min_size=rows * entries, max_size=rows * entries))).reshape(shape)
                 for _ in range(2))
    among = np.array(data.draw(st.lists(st.booleans(), min_size=rows * entries, max_size=rows * entries))).reshape(shape)
    group = np.repeat(row_group, entries)
    for n in (1, 2):
        for mask in (None, among):
            got = _first_best_rows(row_group, keys[:n], among=mask)
            flat = None if mask is None else mask.reshape(-1)
            expected = _first_best(group, tuple(k.reshape(-1) for k in keys[:n]), among=flat)
            first = keys[0] if mask is None else keys[0][mask]
            if finite and not np.isinf(first).any():
                assert got is not None
            assert got is None or got == expected
    ids = np.flatnonzero(np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows))))
    if ids.size:
        got = _first_best_rows(row_group[ids], tuple(k[ids] for k in keys), row_ids=ids)
        sub = _first_best(np.repeat(row_group[ids], entries), tuple(k[ids].reshape(-1) for k in keys))
        assert got is None or got == {g: int(ids[p // entries] * entries + p % entries) for g, p in sub.items()}
