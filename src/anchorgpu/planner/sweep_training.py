"""The sweep's training columns: each layout (and weight format) runs the fastest micro-batch, activation recompute
and pipeline interleaving that fits, as ``plan``'s chooser picks them for that layout
(:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`): micro-batches 1, 2 and 4 unless the workload
states one (:func:`~anchorgpu.planner.speed.micro_batch_ladder.micro_batches`; 8 too where 4 led and 8 is faster still and fits:
:func:`~anchorgpu.planner.speed.micro_batch_ladder.climb_ladder`), the recompute levels unless it states one,
plain 1F1B and the deepest interleave (:func:`~anchorgpu.planner.speed.interleave_choice.deepest_interleave`, or where no
``pp x v`` chunks split the layers the standard uneven layout, :func:`~anchorgpu.planner.speed.interleave_choice.uneven_interleave`)
where the training stack runs it. Speed from :func:`~anchorgpu.planner.speed.training.training_step`, memory from
:func:`~anchorgpu.planner.plan.plan` (once per distinct layout, GPU group and configuration), searched by
:func:`~anchorgpu.planner.sweep_search.fastest_fitting`. A layout that fits in no configuration shows its least memory
(the first micro-batch, the most recompute, 1F1B). ``splits_batch`` says whether a stated global batch gives each
data-parallel rank one micro-batch or more (``plan`` refuses the layout otherwise, and it is not timed). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import evolver
from anchorgpu.planner.inputs import RECOMPUTES, Layout, PrecisionPlan, Workload, default_seq_tokens, recompute_ladder
from anchorgpu.planner.plan import plan
from anchorgpu.planner.qlora_tp import task_interleaves
from anchorgpu.planner.speed.flops import Recompute, TrainKind, train_kind
from anchorgpu.planner.speed.interleave_choice import interleave_of, uneven_interleave
from anchorgpu.planner.speed.links import compute_precision_for_training
from anchorgpu.planner.speed.micro_batch_ladder import climb_ladder, micro_batches
from anchorgpu.planner.speed.overrides import calibrated
from anchorgpu.planner.speed.pipeline import (
    default_batch_tokens,
    interleaving_refusal,
    microbatches_for,
    pipeline_schedule,
    timed_batch_tokens,
)
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import tokens_per_s_bound, training_step
from anchorgpu.planner.sweep_grid import Layouts
from anchorgpu.planner.sweep_search import fastest_fitting

if TYPE_CHECKING:  # the sweep imports this module: types only here
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.inputs import Overheads
    from anchorgpu.planner.pipeline_layout import PipelineLayout
    from anchorgpu.planner.sweep_types import HardwareShape, Progress, SweepSpec

__all__ = ["stated_layouts", "training_columns"]

Config = tuple[int, Recompute, int]  # micro-batch (sequences), recompute level, interleaved chunks a GPU (1: 1F1B)
Memory = tuple[int, int, int, int]  # per GPU: weights, activations, gradients + optimizer state, total (bytes)
Pair = tuple[TrainLayout, int]  # a layout at one interleaving, and a micro-batch

_with_knobs = evolver(Workload, "micro_batch", "recompute")  # a candidate's workload, as replace() makes it


class _Memories:
    """The per-GPU memory of one layout's configurations with one weight format on one GPU group (vendor,
    low-precision units) and batch, each from :func:`plan` once, and whether one fits a GPU's memory."""

    def __init__(self, model: ModelSpec, overheads: Overheads, w: Workload, weights: str, gpu: GpuSpec,
                 lay: TrainLayout) -> None:
        self.model, self.overheads, self.w, self.gpu, self.lay = model, overheads, w, gpu, lay
        uneven = uneven_interleave(model, lay.pp)  # the interleaved chunks' stated layout, where one is needed
        self.layout_text = uneven.text if uneven is not None else None
        self.precision = PrecisionPlan(weights=weights)
        self.planned: dict[Config, Memory] = {}

    def memory(self, config: Config) -> Memory:
        found = self.planned.get(config)
        if found is None:
            mb, rc, v = config
            lay = self.lay
            p = plan(self.model, _with_knobs(self.w, micro_batch=mb, recompute=rc), precision=self.precision,
                     gpu=self.gpu, suggest=False, choose_layout=False, overheads=self.overheads,
                     layout=Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, zero=lay.zero,
                                   ep=lay.ep if lay.ep > 1 else None, cp=lay.cp, virtual_stages=v if v > 1 else None,
                                   pipeline_layout=self.layout_text if v > 1 else None))
            b = p.per_gpu
            found = self.planned[config] = (b.weights_bytes, b.activations_bytes,
                                            b.gradients_bytes + b.optimizer_bytes, b.total_bytes)
        return found

    def fits(self, config: Config, budget_bytes: int) -> bool:
        """Whether ``config`` fits ``budget_bytes``. At one recompute level the memory never shrinks with a larger
        micro-batch or with interleaving (tests/recommend/test_sweep_micro_batch.py holds the premise), so a
        configuration planned already may answer: one no larger that does not fit, or one no smaller that fits."""
        found = self.planned.get(config)
        if found is None:
            mb, rc, v = config
            for (mb_k, rc_k, v_k), mem in self.planned.items():
                if rc_k != rc:
                    continue
                if mem[3] > budget_bytes and mb_k <= mb and v_k in (1, v):
                    return False
                if mem[3] <= budget_bytes and mb_k >= mb and (v == 1 or v_k == v):
                    return True
            found = self.memory(config)
        return found[3] <= budget_bytes


class _Steps:
    """Training steps of the layouts of one hardware shape, timed as ``plan`` times them (its calibration, the
    batch the step runs), and the cheaper bound on each pair's speed (the same for every ZeRO stage)."""

    def __init__(self, model: ModelSpec, w: Workload, spec: SweepSpec, seq_tokens: int) -> None:
        self.model, self.w, self.seq, self.stated = model, w, seq_tokens, spec.global_batch_tokens
        self.default_tokens = default_batch_tokens(w.task, seq_tokens)  # the batch plan times when none is stated
        self.kind: TrainKind = train_kind(w.task)
        self.schedule = pipeline_schedule(w.task, w.train_stack)  # as plan times it (speed.estimate)
        self.precision = compute_precision_for_training(w.train_precision)
        self.cal = calibrated(spec.efficiencies)  # --mfu/--mbu time a training step here as they do in plan
        self.bounds: dict[tuple[Any, ...], float] = {}

    def batch_tokens(self, dp: int, micro_batch: int) -> int:
        """The global batch a step is timed with, as plan times it (speed.pipeline.timed_batch_tokens)."""
        return timed_batch_tokens(self.stated, dp=dp, micro_batch=micro_batch, seq_tokens=self.seq,
                                  default_tokens=self.default_tokens)

    def speed(self, shape: HardwareShape, lay: TrainLayout, micro_batch: int, recompute: Recompute,
              base_format: str) -> float:
        w = self.w
        return training_step(
            self.model, shape.gpu, lay, seq_tokens=self.seq, micro_batch=micro_batch,
            global_batch_tokens=self.batch_tokens(lay.dp, micro_batch), recompute=recompute, kind=self.kind,
            precision=self.precision, gpus_per_server=shape.gpus_per_server,
            network_bytes_per_s=shape.network_bytes_per_s, train_stack=w.train_stack,
            offload_activation_layers=w.offload_activation_layers, optimizer_state=w.optimizer_state,
            cal=self.cal, schedule=self.schedule, base_format=base_format).tokens_per_s

    def bound(self, shape: HardwareShape, lay: TrainLayout, micro_batch: int, base_format: str) -> float:
        key = (shape.gpu.name, shape.gpus_per_server, shape.network_bytes_per_s, lay.gpus, lay.tp, lay.cp, lay.pp,
               lay.virtual_stages, lay.ep, micro_batch, self.base(base_format))
        found = self.bounds.get(key)
        if found is None:
            found = self.bounds[key] = tokens_per_s_bound(
                self.model, shape.gpu, lay, seq_tokens=self.seq, micro_batch=micro_batch,
                global_batch_tokens=self.batch_tokens(lay.dp, micro_batch), kind=self.kind, precision=self.precision,
                gpus_per_server=shape.gpus_per_server, network_bytes_per_s=shape.network_bytes_per_s, cal=self.cal,
                train_stack=self.w.train_stack, schedule=self.schedule, base_format=base_format)
        return found

    def base(self, weights: str) -> str:
        """The part of a weight format a step's time reads: QLoRA's base, whose bits its dequantization reads
        (speed.dequant); nothing for full training and LoRA (their 16-bit base is not dequantized)."""
        return weights if self.kind == "qlora" else ""


# a configuration's speed (tokens/s; NaN where not timed), its memory, and its speed before the ladder's climb past
# micro-batch 4 (what orders the layout in plan's chooser: the first layout that fits is the fastest by it)
Chosen = tuple[float, Config, Memory, float]


class _Search:
    """What every layout of one training sweep searches with: its candidates' micro-batches and recompute levels,
    the steps timed, the memory planned (per layout, GPU group and weight format), the stated batch."""

    def __init__(self, model: ModelSpec, spec: SweepSpec, pps: set[int]) -> None:
        w = self.w = spec.workload
        self.model, self.overheads, self.stated = model, spec.overheads, spec.global_batch_tokens
        self.mbs = micro_batches(w)
        self.ladder: tuple[Recompute, ...] = (w.recompute,) if w.recompute else recompute_ladder(model.moe is not None)
        self.least: Config = (self.mbs[0], self.ladder[-1], 1)  # what a layout that fits in no configuration shows
        self.seq = default_seq_tokens(w, model.max_context_tokens)
        self.steps = _Steps(model, w, spec, self.seq)
        interleaves = {pp: interleave_of(model, pp) for pp in pps}
        # QLoRA interleaves no stages on any stack (anchorgpu.planner.qlora_tp): plain 1F1B only
        self.deepest = {pp: v if task_interleaves(w.task) else 1 for pp, (v, _) in interleaves.items()}
        self.uneven = {pp: stated for pp, (_, stated) in interleaves.items()}
        self.groups: dict[tuple[Any, ...], _Memories] = {}
        self.pair_lists: dict[TrainLayout, list[Pair]] = {}

    def splits(self, dp: Any, micro: Any) -> Any:
        """Whether a stated global batch is whole micro-batches for each data-parallel rank (arrays too)."""
        # a stated global batch is kept: a layout it does not give whole micro-batches per data-parallel rank does not
        # run it (plan() refuses it: planner.global_batch.split_refusal); without one, the default batch grows to one
        # micro-batch per rank, as plan() times an explicit layout
        return True if self.stated is None else self.stated % (dp * micro * self.seq) == 0

    def trained_tokens(self, train_tokens: int, dp: npt.NDArray[np.int64],
                       micro: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The tokens a run of ``train_tokens`` trains in whole optimizer steps at each layout's step (its global
        batch timed, speed.pipeline.timed_batch_tokens, in whole micro-batches: the training step's
        ``tokens_per_step``), as plan's estimate times the run (planner.run_steps)."""
        per_micro = dp * micro * self.seq
        batch = self.stated if self.stated is not None else np.maximum(self.steps.default_tokens, per_micro)
        step = -(-batch // per_micro) * per_micro
        return -(-train_tokens // step) * step

    def memories(self, weights: str, shape: HardwareShape, base: TrainLayout, runs: bool) -> _Memories:
        w, gpu = self.w, shape.gpu
        sized = replace(w, global_batch_tokens=self.stated) if self.stated is not None and runs else w
        group = (weights, base.gpus, base.tp, base.pp, base.dp, base.zero, base.ep, base.cp, gpu.vendor,
                 gpu.training_stack(w.train_precision), sized.global_batch_tokens or 0)
        found = self.groups.get(group)
        if found is None:
            found = self.groups[group] = _Memories(self.model, self.overheads, sized, weights, gpu, base)
        return found

    def pairs(self, base: TrainLayout) -> list[Pair]:
        """The layout's interleavings and micro-batches (:func:`_pairs`), once per layout: they read no GPU, and the
        grid repeats each layout on every hardware shape that holds it."""
        found = self.pair_lists.get(base)
        if found is None:
            found = self.pair_lists[base] = _pairs(base, self.deepest[base.pp], self.mbs, self.seq,
                                                   self.stated or self.steps.default_tokens, self.splits,
                                                   self.steps.batch_tokens, self.w.train_stack,
                                                   self.uneven[base.pp])
        return found

    def row(self, shape: HardwareShape, base: TrainLayout, weights: tuple[str, ...]) -> list[Chosen]:
        """One layout on one shape, per weight format: the fastest configuration that fits, else its least memory;
        with its speed before the climb past micro-batch 4 (the same where it did not climb)."""
        runs = bool(self.splits(base.dp, self.mbs[0]))  # else it is not timed: plan() refuses the stated batch
        timed: dict[tuple[int, int, Recompute, str], float] = {}  # kept for the next weight format (not QLoRA's)
        budget = shape.gpu.memory_bytes

        def speed(pair: Pair, rc: Recompute) -> float:
            key = (pair[0].virtual_stages, pair[1], rc, self.steps.base(name))
            if key not in timed:
                timed[key] = self.steps.speed(shape, pair[0], pair[1], rc, name)
            return timed[key]

        pairs: list[Pair] | None = None
        out = []
        for name in weights:
            known = self.memories(name, shape, base, runs)
            # a full-training layout whose model states alone outgrow the GPU fits in no configuration (they read
            # none of the micro-batch, recompute or interleaving: tests/speed/test_chooser_order.py), and is not timed
            held = self.w.task != "train" or _states_bytes(known.memory(self.least)) <= budget
            found, unclimbed = None, None
            if held and runs:
                pairs = pairs if pairs is not None else self.pairs(base)
                found = self.fastest(shape, base, known, pairs, speed)
                if found is not None and not self.w.micro_batch:
                    unclimbed = found[0]
                    found = self.climbed(found, known, budget, speed)
            elif held:  # not timed, but sized at the least recompute that fits, for the reason it is rejected
                found = next(((np.nan, (base, self.mbs[0]), rc) for rc in self.ladder
                              if known.fits((self.mbs[0], rc, 1), budget)), None)
            if found is None:
                found = (speed((base, self.mbs[0]), self.least[1]) if runs else np.nan, (base, self.mbs[0]),
                         self.least[1])
            tokens_per_s, (lay_v, mb), rc = found
            config = (mb, rc, lay_v.virtual_stages)
            out.append((tokens_per_s, config, known.memory(config), tokens_per_s if unclimbed is None else unclimbed))
        return out

    def climbed(self, found: tuple[float, Pair, Recompute], known: _Memories, budget: int,
                speed: Callable[[Pair, Recompute], float]) -> tuple[float, Pair, Recompute]:
        """``found`` (the layout's fastest configuration that fits) with the micro-batch ladder climbed past 4 as
        ``plan``'s chooser climbs it (:func:`~anchorgpu.planner.speed.micro_batch_ladder.climb_ladder`), at its interleaving."""
        tokens_per_s, (lay_v, mb), rc = found
        batch = self.stated or self.steps.default_tokens

        def runs(mb_k: int) -> bool:
            return _runs(lay_v, mb_k, self.seq, batch, self.splits, self.steps.batch_tokens, self.w.train_stack)

        def fitting(mb_k: int, rc_k: Recompute) -> bool | None:
            return True if known.fits((mb_k, rc_k, lay_v.virtual_stages), budget) else None

        mb, rc, tokens_per_s, _ = climb_ladder((mb, rc, tokens_per_s, True), self.ladder, runs,
                                               lambda mb_k, rc_k: speed((lay_v, mb_k), rc_k), fitting)
        return tokens_per_s, (lay_v, mb), rc

    def fastest(self, shape: HardwareShape, base: TrainLayout, known: _Memories, pairs: list[Pair],
                speed: Callable[[Pair, Recompute], float]) -> tuple[float, Pair, Recompute] | None:
        """The fastest of ``pairs`` at a recompute level that fits ``shape``'s GPU, or ``None``."""
        budget, deepest = shape.gpu.memory_bytes, self.deepest[base.pp]
        interleaved = {mb for t, mb in pairs if t.virtual_stages > 1}

        def wanted(pair: Pair, rc: Recompute) -> bool:
            # plain 1F1B is slower than the interleaved schedule at the same micro-batch and recompute (more chunks
            # only shrink the bubble: tests/recommend/test_sweep_micro_batch.py): wanted only where that does not fit
            lay_v, mb = pair
            if lay_v.virtual_stages == 1 and mb in interleaved and known.fits((mb, rc, deepest), budget):
                return False
            return known.fits((mb, rc, lay_v.virtual_stages), budget)

        # more recompute only slows a step down, but where FSDP's gathers, ZeRO-2's per-micro-batch gradient
        # reduction (speed.zero2) or offloaded activations' copies hide behind each micro-batch's computation it can
        # hide a hair more of them, and on the PyTorch stack a mixture of experts' op-level selective recompute can
        # cost more than recomputing the MoE blocks: there the search times the next level before it takes one
        # (tests/recommend/test_sweep_micro_batch.py)
        weights = known.precision.weights or ""

        def bound(pair: Pair) -> float:
            return self.steps.bound(shape, pair[0], pair[1], weights)

        hair = (base.zero >= 2 or self.w.offload_activation_layers > 0
                or (self.w.train_stack != "megatron" and self.model.moe is not None))
        return fastest_fitting(pairs, self.ladder, speed, bound, wanted, hair)


def training_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                     weights: tuple[str, ...], progress: Progress | None) -> dict[str, npt.NDArray[Any]]:
    """Per layout and weight format: the fastest micro-batch, recompute and interleaving that fits (the module
    docstring), its memory from :func:`plan` and its speed from
    :func:`anchorgpu.planner.speed.training.training_step`."""
    n_l, n_w = len(lay), len(weights)
    search = _Search(model, spec, set(lay.pp.tolist()))
    weights_lw, act_lw, state_lw, total_lw, tps, order_tps = (np.empty((n_l, n_w)) for _ in range(6))
    recompute_lw, virtual_lw, micro_lw = (np.empty((n_l, n_w), dtype=np.int64) for _ in range(3))
    rows = zip(lay.gpus.tolist(), lay.tp.tolist(), lay.pp.tolist(), lay.dp.tolist(), lay.zero.tolist(),
               lay.ep.tolist(), lay.cp.tolist(), lay.shape.tolist(), strict=True)
    for i, (gpus, tp, pp, dp, zero, ep, cp, s) in enumerate(rows):
        base = TrainLayout(gpus=gpus, tp=tp, pp=pp, cp=cp, dp=dp, zero=zero, ep=ep)
        for j, (tokens_per_s, (mb, rc, v), mem, unclimbed) in enumerate(search.row(shapes[s], base, weights)):
            order_tps[i, j] = unclimbed
            tps[i, j], micro_lw[i, j], recompute_lw[i, j], virtual_lw[i, j] = tokens_per_s, mb, RECOMPUTES.index(rc), v
            weights_lw[i, j], act_lw[i, j], state_lw[i, j], total_lw[i, j] = mem
        if progress and i % 64 == 0:
            progress(i * n_w, n_l * n_w)
    budget_l = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)[lay.shape]
    shape2 = (n_l, n_w)
    time_s = (search.trained_tokens(spec.train_tokens, lay.dp[:, None], micro_lw) / tps if spec.train_tokens
              else np.full(shape2, np.nan))
    nan2 = np.full(shape2, np.nan)
    return {
        "weights_bytes": weights_lw, "kv_cache_bytes": np.zeros(shape2), "activations_bytes": act_lw,
        "other_bytes": total_lw - weights_lw - act_lw, "per_gpu_total_bytes": total_lw,
        "budget_bytes": np.broadcast_to(budget_l[:, None], shape2), "fits": total_lw <= budget_l[:, None],
        "splits_batch": np.broadcast_to(search.splits(lay.dp[:, None], micro_lw), shape2),  # at each one's micro-batch
        "concurrency": micro_lw,  # the micro-batch each configuration runs (sequences a GPU step)
        "prefill_s": nan2, "decode_tokens_per_s_per_user": nan2, "decode_tokens_per_s_total": nan2,
        "train_tokens_per_s": tps, "train_time_s": time_s,
        # the speed before the climb past micro-batch 4, that orders the layout in plan's chooser (its first layout
        # that fits is the fastest by it): recommend.selection.best_per_group picks a layout by the chooser's rule
        "train_order_tokens_per_s": order_tps,
        # the recompute level each configuration was sized and timed with, as its index in RECOMPUTES
        "recompute": recompute_lw,
        "virtual_stages": virtual_lw,  # interleaved chunks a GPU of each configuration runs (1: plain 1F1B)
    }


def stated_layouts(model: ModelSpec, pps: Iterable[int]) -> tuple[tuple[int, int, str], ...]:
    """(PP, virtual stages, layout) of each pipeline depth of ``pps`` that the sweep interleaves at a stated layout
    (:func:`~anchorgpu.planner.speed.interleave_choice.uneven_interleave`), as its rows state it.

    >>> from anchorgpu.architectures import load_model
    >>> stated_layouts(load_model("deepseek-v3"), [1, 8, 8, 16])
    ((8, 4, 'Et|(tt|)*30L'), (16, 2, 'Et|(tt|)*30L'))
    """
    found = ((pp, uneven_interleave(model, pp)) for pp in sorted(set(pps)))
    return tuple((pp, stated.virtual_stages, stated.text) for pp, stated in found if stated is not None)


def _states_bytes(mem: Memory) -> int:
    """The model states of a memory plan: weights, gradients and optimizer state per GPU."""
    return mem[0] + mem[2]


def _pairs(base: TrainLayout, deepest: int, mbs: tuple[int, ...], seq: int, batch: int,
           splits: Callable[[int, int], bool], batch_tokens: Callable[[int, int], int],
           train_stack: str, uneven: PipelineLayout | None = None) -> list[Pair]:
    """The layout's interleavings and micro-batches the chooser tries, in its order (plain 1F1B first; the
    micro-batches ascending): a micro-batch past the first only where ``batch`` (the stated one, else the task's
    default) is whole micro-batches for each data-parallel rank (``splits``: always, for the default) and holds one per
    rank; interleaved chunks only where the stack runs them
    with the step's micro-batches (:func:`~anchorgpu.planner.speed.pipeline.interleaving_refusal`), at ``uneven``'s
    stated layout where given."""
    dp, out = base.dp, []
    for v in sorted({1, deepest}):
        lay_v = base if v == 1 else TrainLayout(gpus=base.gpus, tp=base.tp, pp=base.pp, cp=base.cp, dp=dp, ep=base.ep,
                                                zero=base.zero, virtual_stages=v, pipeline_layout=uneven)
        out += [(lay_v, mb) for mb in mbs
                if _runs(lay_v, mb, seq, batch, splits, batch_tokens, train_stack, first=mb == mbs[0])]
    return out


def _runs(lay_v: TrainLayout, mb: int, seq: int, batch: int, splits: Callable[[int, int], bool],
          batch_tokens: Callable[[int, int], int], train_stack: str, first: bool = False) -> bool:
    """Whether the search tries ``lay_v`` at micro-batch ``mb`` (:func:`_pairs`, and a rung the ladder climbs past
    4): ``batch`` whole micro-batches for each data-parallel rank and at least one a rank (``first``, the least
    micro-batch: whatever the batch), and the interleaved chunks run with the step's micro-batches."""
    dp = lay_v.dp
    if not first and not (splits(dp, mb) and dp * mb * seq <= batch):
        return False
    m = microbatches_for(batch_tokens(dp, mb), dp=dp, micro_batch=mb, seq_tokens=seq)
    return lay_v.virtual_stages == 1 or interleaving_refusal(lay_v.pp, lay_v.virtual_stages, m, train_stack) is None
