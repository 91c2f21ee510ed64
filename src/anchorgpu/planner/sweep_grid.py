"""The sweep's grid of layouts: every hardware shape x server count x TP x PP (x ZeRO, EP and CP when training)
that the model's heads and the shapes allow, in the sweep's order, as parallel integer columns. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.layout_resolution import tp_is_valid
from anchorgpu.planner.speed.layouts import sharded_with_stages
from anchorgpu.planner.train_sizes import train_cp_sizes, train_ep_sizes, train_pp_sizes

if TYPE_CHECKING:  # the sweep imports this module: a type only here
    from anchorgpu.planner.sweep_types import HardwareShape

__all__ = ["POWERS_OF_TWO", "Layouts", "TickPairs", "layout_grid", "tick_groups", "tick_pairs", "valid_tp"]

POWERS_OF_TWO: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)

IntArray = npt.NDArray[np.int64]


def valid_tp(model: ModelSpec, tp: int) -> bool:
    """TP must divide the attention heads and divide, or be a multiple of, the KV heads (MLA: any divisor).

    The same rule :func:`anchorgpu.planner.plan` enforces (``tp does not divide the heads`` otherwise).

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> [tp for tp in (1, 2, 3, 4, 8, 16) if valid_tp(llama_3_1_70b(), tp)]
    [1, 2, 4, 8, 16]
    """
    return tp_is_valid(model, tp)


@dataclass(frozen=True, slots=True)
class Layouts:
    shape: IntArray
    servers: IntArray
    gpus: IntArray
    tp: IntArray
    pp: IntArray
    dp: IntArray
    zero: IntArray
    ep: IntArray  # expert parallelism: 1 but for a mixture of experts (training; serving: TP's size, or attention DP)
    cp: IntArray  # context parallelism: 1 but for training long sequences (train_cp_sizes)

    def __len__(self) -> int:
        return int(self.shape.size)

    def take(self, rows: IntArray) -> Layouts:
        """The layouts at ``rows``, in that order."""
        return Layouts(*(getattr(self, name)[rows] for name in self.__slots__))


@dataclass(frozen=True, slots=True)
class TickPairs:
    """The distinct (hardware shape, TP, PP, EP, sequences a replica) of a serving grid ``(C, L)``: a pipeline tick and
    step depend on nothing else of a layout (its DP and servers only through the sequences a replica runs), so
    layouts that differ only there share every figure. ``groups``: one layout of each distinct (shape, TP, PP, EP),
    ``(G,)``; per pair ``(P,)``, in order of the sequences a replica runs: its group (``group``) and sequences a
    replica (``batch``); ``inverse`` ``(C, L)``: the pair of each (concurrency, layout). Where sharing would save
    little (over a quarter of the grid's), every (concurrency, layout) is a pair of its own, in the grid's order, each
    layout its own group."""

    groups: IntArray
    group: IntArray
    batch: IntArray
    inverse: IntArray


def tick_pairs(lay: Layouts, conc: IntArray, per_replica: IntArray) -> TickPairs:
    """The distinct (shape, TP, PP, EP, ``per_replica``) of the grid (``per_replica`` ``(C, L)``: ``conc`` ``(C, 1)``
    over each layout's DP, rounded up), found without sorting the grid: the sequences a replica runs take at most
    (distinct concurrencies x distinct DPs) values, so each pair has a small dense key.

    >>> lay = Layouts(*(np.array(v) for v in ([0, 0, 0], [1, 2, 1], [8, 16, 8], [8, 8, 4], [1, 1, 1], [1, 2, 2],
    ...                                       [0, 0, 0], [1, 1, 1], [1, 1, 1])))
    >>> conc = np.array([[1], [2], [4]])  # layouts 0 and 1 share (shape, TP, PP); 2 has TP 4, listed first
    >>> p = tick_pairs(lay, conc, -(-conc // lay.dp))
    >>> p.groups.tolist(), p.group.tolist(), p.batch.tolist(), p.inverse.tolist()
    ([2, 0], [0, 1, 0, 1, 1], [1, 1, 2, 2, 4], [[1, 1, 0], [3, 1, 0], [4, 3, 2]])
    """
    if per_replica.shape[0] == 1:  # one concurrency: a group's layouts differ in DP, so in sequences a replica
        return _each_its_own(per_replica)
    groups, group_l = tick_groups(lay)
    values, index = _value_index(lay, conc, per_replica)
    key = index * groups.size + group_l  # (C, L), below V x G
    present = np.zeros(values.size * groups.size, dtype=bool)
    present[key] = True
    ids = np.flatnonzero(present)
    if 4 * ids.size > 3 * per_replica.size:  # layouts share few pairs: each (concurrency, layout) its own
        return _each_its_own(per_replica)
    pair = np.empty(present.size, dtype=np.int64)
    pair[ids] = np.arange(ids.size)
    return TickPairs(groups=groups, group=ids % groups.size, batch=values[ids // groups.size], inverse=pair[key])


def tick_groups(lay: Layouts) -> tuple[IntArray, IntArray]:
    """The first layout of each distinct (shape, TP, PP, EP), ``(G,)``, ascending by that key, and each layout's group
    ``(L,)``: all of a layout a tick reads but its sequences a replica. EP too: a mixture of experts is swept with each
    single-stage layout twice, its experts split by TP (EP 1) and whole over the TP group (EP = TP,
    :func:`layout_grid`), and a TensorRT-LLM tick of the latter charges 1 / EP of the routed rows
    (sweep_serving_ticks, speed.step_constants.routed_rows_per_token_share). The one grouping of the sweep's pairs
    (:func:`tick_pairs`) and of its per-user limit search (sweep_serving_limits.layout_limit_rungs), so the two cannot part.

    >>> lay = Layouts(*(np.array(v) for v in ([0, 0, 0], [1, 1, 2], [8, 8, 16], [8, 8, 8], [1, 1, 1], [1, 1, 2],
    ...                                       [0, 0, 0], [1, 8, 1], [1, 1, 1])))
    >>> firsts, group = tick_groups(lay)  # layouts 0 and 2 differ in servers and DP only; 1 in EP
    >>> firsts.tolist(), group.tolist()
    ([0, 1], [0, 1, 0])
    """
    _, firsts, group = np.unique(((lay.shape * 65536 + lay.tp) * 65536 + lay.pp) * 1024 + lay.ep,
                                 return_index=True, return_inverse=True)
    return firsts, group


def _value_index(lay: Layouts, conc: IntArray, per_replica: IntArray) -> tuple[IntArray, IntArray]:
    """(values, index): the values ``per_replica`` takes (a sorted superset: exactly them, or every quotient of a
    distinct concurrency by a distinct DP), and each element's position among them ``(C, L)``. Sequences a replica
    are whole and at least 1, and rarely more than the grid has elements: then a table over 0..max marks the values
    (no sort of the grid; the saturation and floor rungs make ``conc`` one row a layout, thousands of values), and
    its running count is each one's position (no search)."""
    top = int(per_replica.max())
    if top <= 4 * per_replica.size:
        seen = np.zeros(top + 1, dtype=bool)
        seen[per_replica] = True
        position = np.cumsum(seen) - 1  # each value's place among those seen
        return np.flatnonzero(seen), position[per_replica]
    dps = distinct(lay.dp)
    values = distinct(-(-distinct(conc)[:, None] // dps[None, :]))  # every value per_replica can take
    return values, np.searchsorted(values, per_replica)


def distinct(a: IntArray) -> IntArray:
    """The distinct values of ``a``, ascending, flattened: ``np.unique(a)`` without its masked-array check, which
    imports ``numpy.ma`` (about 17 ms of a cold start, used nowhere else on recommend's path).

    >>> distinct(np.array([[3, 1], [3, 2]])).tolist()
    [1, 2, 3]
    """
    s = np.sort(a, axis=None)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def _each_its_own(per_replica: IntArray) -> TickPairs:
    """Every (concurrency, layout) a pair of its own, in the grid's order, each layout its own group."""
    layouts = np.arange(per_replica.shape[1])
    return TickPairs(groups=layouts, group=np.tile(layouts, per_replica.shape[0]), batch=per_replica.ravel(),
                     inverse=np.arange(per_replica.size).reshape(per_replica.shape))


def layout_grid(model: ModelSpec, shapes: Sequence[HardwareShape], *, training: bool, max_pp: int,
                zero_stages: Sequence[int], seq_tokens: int = 0, train_stack: str = "megatron",
                launch_stages: bool = True, launch_tp_cp: bool = True, launch_tp: bool = True,
                stages_alone: bool = False) -> Layouts:
    """The layouts of the grid. Training tries the pipeline depths plan()'s chooser tries
    (:func:`~anchorgpu.planner.train_sizes.train_pp_sizes`) and each ZeRO stage with pipeline stages only where the chooser
    does (:func:`~anchorgpu.planner.speed.layouts.sharded_with_stages`), PP 1 only where the launch runs no stages
    (``launch_stages`` False, as the chooser), TP and CP 1 where it runs neither (``launch_tp_cp``), TP 1 where the
    task runs none (``launch_tp``: QLoRA, :mod:`~anchorgpu.planner.qlora_tp`), stages only as one process on one server
    (``stages_alone``: QLoRA's ``device_map`` on the PyTorch stack, DP 1); serving, the depths up to ``max_pp``."""
    tps = np.array([tp for tp in POWERS_OF_TWO
                    if valid_tp(model, tp) and (tp == 1 or (launch_tp_cp and launch_tp) or not training)],
                   dtype=np.int64)
    pps = np.array(((1,) if not launch_stages else train_pp_sizes(model.num_layers)) if training else
                   [pp for pp in POWERS_OF_TWO if pp <= max_pp and pp <= model.num_layers], dtype=np.int64)
    zeros = np.array(sorted(set(zero_stages)) if training else [0], dtype=np.int64)
    # training a mixture of experts: expert parallelism too, sizes that divide the experts (as plan()'s chooser)
    eps = np.array(train_ep_sizes(model.moe.num_experts) if training and model.moe is not None else (1,),
                   dtype=np.int64)
    # training long sequences: context parallelism too, the sizes plan()'s chooser tries (train_cp_sizes)
    cps = np.array(train_cp_sizes(seq_tokens) if training and launch_tp_cp else (1,), dtype=np.int64)
    per_server = np.array([sh.gpus_per_server for sh in shapes], dtype=np.int64)
    most_servers = np.array([sh.max_servers for sh in shapes], dtype=np.int64)
    fabric = np.array([sh.scale_out for sh in shapes], dtype=bool)
    servers_axis = np.arange(1, int(most_servers.max()) + 1, dtype=np.int64)
    # the whole candidate grid in loop order (shape, servers, tp, pp, zero, ep, cp), then the rules as masks
    s_i, n, tp, pp, z, ep, cp = (a.ravel() for a in np.meshgrid(np.arange(len(shapes)), servers_axis, tps, pps,
                                                                 zeros, eps, cps, indexing="ij"))
    k = per_server[s_i]
    gpus = n * k
    ok = (n <= most_servers[s_i]) & (tp <= k) & (k % tp == 0) & (gpus % (tp * cp * pp) == 0)
    ok &= fabric[s_i] | (tp * cp * pp <= k)  # pipeline stages and CP rings span servers only over a fabric
    if training and train_stack == "megatron" and seq_tokens:  # sequence parallelism (on with TP) splits each CP
        ok &= (seq_tokens // cp) % tp == 0  # rank's tokens over the TP ranks (planner.sequence_parallel)
    if training and train_stack == "pytorch" and seq_tokens:  # torchtitan asserts seq % (TP x 2 x CP) with TP
        ok &= (tp == 1) | (seq_tokens % (tp * 2 * cp) == 0)  # (planner.sequence_parallel.sequence_split_refusal)
    dp = np.where(ok, gpus // (tp * cp * pp), 0)
    if stages_alone:  # QLoRA's device_map: one process on one server's GPUs (planner.qlora_tp.device_map_refusal)
        ok &= (pp == 1) | ((dp == 1) & (pp <= k))
    ok &= (z == 0) | (dp * cp > 1)  # ZeRO shards over the data-parallel and CP ranks: pointless with one
    for stage in zeros.tolist():  # a ZeRO stage the stack does not run with pipeline stages (as plan())
        if not sharded_with_stages(stage, train_stack):
            ok &= (z != stage) | (pp == 1)
    ok &= (tp * cp * dp) % ep == 0  # the experts split over GPUs of one stage (folded over TP, CP and DP)
    if not ok.any():
        raise InvalidWorkload(said("no valid tensor-parallel layout for {model_name} on the shapes given",
                                   model_name=model.name))
    columns = [s_i[ok], n[ok], gpus[ok], tp[ok], pp[ok], dp[ok], z[ok], ep[ok], cp[ok]]
    if not training and model.moe is not None:  # serving a mixture of experts: after every layout above, each
        # single-stage one again with the routed experts whole over its TP group (EP = TP), as plan()'s chooser
        # tries it (serving_layouts.ep_inside_tp_sizes), listed last so that a tie keeps the TP-sliced one
        from anchorgpu.planner.speed.serving_layouts import ep_inside_tp_sizes

        sizes = [set(ep_inside_tp_sizes(model, int(k_s))) for k_s in per_server.tolist()]
        inside = np.array([t in sizes[sh] and p == 1 for sh, t, p in zip(columns[0].tolist(), columns[3].tolist(),
                                                                          columns[4].tolist(), strict=True)],
                          dtype=bool)
        if inside.any():
            extra = [c[inside] for c in columns]
            extra[7] = extra[3].copy()  # ep = tp
            columns = [np.concatenate((c, e)) for c, e in zip(columns, extra, strict=True)]
    return Layouts(*columns)
