"""The serving sweep forms its speed once per distinct (hardware shape, TP, PP, sequences a replica)
(``sweep_grid.tick_pairs``) and takes it onto the grid: every (concurrency, layout) must land on a pair of its own
shape, TP, PP and sequences a replica, and the pairs must be distinct, or a configuration would read another's
figures (the catalog's batch 1..512 grid of the benchmarks' 70B sweep)."""

from __future__ import annotations

import numpy as np

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner.sweep import BATCH_LADDER
from anchorgpu.planner.sweep_grid import layout_grid, tick_pairs
from anchorgpu.recommend import shapes_from_catalog


def test_each_configuration_lands_on_its_own_pair_and_the_pairs_are_distinct() -> None:
    model = load_model("llama-3.1-70b")
    lay = layout_grid(model, shapes_from_catalog(load_catalog().offerings), training=False, max_pp=8,
                      zero_stages=(0,))
    conc = np.array(BATCH_LADDER, dtype=np.int64)[:, None]
    per_replica = -(-conc // lay.dp)
    pairs = tick_pairs(lay, conc, per_replica)
    layout = pairs.groups[pairs.group]  # a layout standing for each pair's group
    for name in ("shape", "tp", "pp"):
        assert (getattr(lay, name)[layout][pairs.inverse] == getattr(lay, name)[None, :]).all(), name
    assert (pairs.batch[pairs.inverse] == per_replica).all()
    keys = set(zip(lay.shape[layout].tolist(), lay.tp[layout].tolist(), lay.pp[layout].tolist(),
                   pairs.batch.tolist(), strict=True))
    assert len(keys) == pairs.batch.size < per_replica.size  # distinct, and fewer than the grid's
    assert (np.diff(pairs.batch) >= 0).all()  # in order of the sequences a replica runs (the steady step's spans)


def test_a_row_of_concurrencies_a_layout_gives_the_pairs_the_sorted_values_give() -> None:
    """With the saturation and limit rungs the concurrencies are one row a layout (thousands of values a replica):
    the pairs come from a table over the values then, and past four values an element (a few huge rungs) from the
    sorted quotients as before; both give the same pairs in the same order (the order the steady step's spans read)."""
    model = load_model("llama-3.1-70b")
    lay = layout_grid(model, shapes_from_catalog(load_catalog().offerings), training=False, max_pp=8,
                      zero_stages=(0,))
    ladder = np.broadcast_to(np.array(BATCH_LADDER, dtype=np.int64)[:, None], (len(BATCH_LADDER), len(lay)))
    rungs = np.random.default_rng(7).integers(2, 3000, size=(4, len(lay)))
    for top in (3000, 10**9):  # a table over the values; past 4 x the grid's size, the sorted quotients
        conc = np.concatenate((ladder, np.minimum(rungs, top), np.full((1, len(lay)), top)))
        per_replica = -(-conc // lay.dp)
        pairs = tick_pairs(lay, conc, per_replica)
        _, group_l = np.unique(((lay.shape * 65536 + lay.tp) * 65536 + lay.pp) * 1024 + lay.ep, return_inverse=True)
        key = per_replica * (group_l.max() + 1) + group_l  # (sequences a replica, group): the order of the pairs
        unique, inverse = np.unique(key, return_inverse=True)
        assert (pairs.inverse == inverse.reshape(key.shape)).all()
        assert (pairs.batch == unique // (group_l.max() + 1)).all()
