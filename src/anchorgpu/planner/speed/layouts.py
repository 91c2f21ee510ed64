"""Layouts chosen for the user: the fastest training layout that fits (the serving chooser, the cheapest serving
layout, is :mod:`~anchorgpu.planner.speed.serving_layouts`, which shares :class:`Choice` and :func:`tp_ok`). Pure.

Training: every combination of tensor parallelism inside one server, context parallelism (long sequences
only), pipeline stages, data parallelism, ZeRO stage (1: distributed optimizer; 2: gradients sharded too; 3: FSDP), interleaved
chunks, activation recompute and micro-batch is ranked by the predicted step time of
:func:`~anchorgpu.planner.speed.training.training_step`; the memory planner then checks them fastest first
and the first that fits is the answer, climbed past micro-batch 4 while that is faster
(:func:`~anchorgpu.planner.speed.micro_batch_ladder.climb_ladder`), unless
another split, any whose climb could beat it (:mod:`~anchorgpu.planner.speed.chooser_climb`), climbs to a speed the calibration can tell apart from it (faster by more than its
training layout margin, or simpler and faster: :mod:`~anchorgpu.planner.speed.chooser_margin`). Whatever the user fixed
is kept. The ranking times only what that order
needs (:func:`~anchorgpu.planner.speed.chooser_order.fastest_first`): a layout's recompute levels once its fastest
reaches the front, and the layout itself once a cheaper bound on its speed
(:func:`~anchorgpu.planner.speed.training.tokens_per_s_bound`) does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolver
from anchorgpu.planner.formats import qlora_default_format
from anchorgpu.planner.global_batch import splits, unsplit_by_any_refusal
from anchorgpu.planner.inputs import (
    Layout,
    Overheads,
    PrecisionPlan,
    Recompute,
    Workload,
    default_seq_tokens,
    recompute_ladder,
)
from anchorgpu.planner.pipeline_layout import parse_pipeline_layout
from anchorgpu.planner.sequence_parallel import sequence_split_refusal, splits_whatever_stated
from anchorgpu.planner.speed.chooser_climb import climbers
from anchorgpu.planner.speed.chooser_margin import pick_split, split_of
from anchorgpu.planner.speed.chooser_order import add_zero2_block, fastest_first, zero1_twins
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT
from anchorgpu.planner.speed.flops import TrainKind, train_kind
from anchorgpu.planner.speed.interleave_choice import deepest_interleave, interleave_of
from anchorgpu.planner.speed.layout_reason import SERVER_GPUS, training_reason
from anchorgpu.planner.speed.layout_reason import Found as _Found
from anchorgpu.planner.speed.links import compute_precision_for_training
from anchorgpu.planner.speed.micro_batch_ladder import LADDER_PAST, climb_ladder, micro_batches, rung_candidates
from anchorgpu.planner.speed.overrides import Overrides, calibrated
from anchorgpu.planner.speed.pipeline import default_batch_tokens, interleaving_refusal_line, pipeline_schedule
from anchorgpu.planner.speed.ranking import speed_rank
from anchorgpu.planner.speed.rung_bound import Growth, growth_of, rung_bounds
from anchorgpu.planner.speed.topology import network_bytes_per_s_of
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import tokens_per_s_bound, training_step
from anchorgpu.planner.train_sizes import train_cp_sizes, train_ep_sizes, train_pp_sizes

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["SERVER_GPUS", "Choice", "candidate_layout", "choose_training_layout", "sharded_with_stages", "tp_ok"]

_with_knobs = evolver(Workload, "micro_batch", "recompute", "seq_tokens")  # a candidate's workload, as replace() makes it


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """The chosen inputs and the sentence that says why."""

    layout: Layout
    workload: Workload
    reason: str


def tp_ok(model: ModelSpec, tp: int) -> bool:
    """Whether ``tp`` splits the model's attention heads and its KV heads (or replicates them whole, MLA's latent)."""
    if model.num_attention_heads % tp:
        return False
    return model.mla is not None or model.num_kv_heads % tp == 0 or tp % model.num_kv_heads == 0


def sharded_with_stages(zero: int, train_stack: str) -> bool:
    """Whether a training search (this chooser and the sweep behind ``recommend``) tries ZeRO stage ``zero`` with
    pipeline stages on ``train_stack``: where neither the stack's rule for ZeRO-2 nor the Megatron-FSDP rule refuses
    it. ZeRO-1 (Megatron-Core's distributed optimizer, DeepSpeed's stage 1) runs with them on both stacks. ZeRO-2: on
    neither. Megatron's ZeRO-2 is Megatron-FSDP's ``optim_grads``
    (:func:`~anchorgpu.planner.layout_checks.sharded_pipeline_refusal`); on the PyTorch stack ``plan`` takes it
    as Llama 3's own FSDP, which no public launcher runs (:mod:`~.zero2`: DeepSpeed's pipeline engine refuses stage
    2, and torchtitan's pipelining holds the gradients whole across the step, ZeRO-1's memory). FSDP (3):
    on the PyTorch stack only, where FSDP2 runs under ``torch.distributed.pipelining`` (torchtitan's Llama 3.1 405B on
    512 H100, FSDP 8 x TP 8 x PP 8: pytorch/torchtitan ``benchmarks/llama3_h100_202412_torchtitan.md`` at 31a17bf,
    row T28 of perf_measured.md); Megatron-FSDP runs no pipeline stages (NVIDIA/Megatron-LM issue #1455 open, its
    roadmap #4003 lists "PP support" as future work, PR #6486 "Enable Pipeline Parallelism Support for M-FSDP v2"
    open; its user guide's example scripts set no --pipeline-model-parallel-size).

    >>> [sharded_with_stages(z, "megatron") for z in (1, 2, 3)], [sharded_with_stages(z, "pytorch") for z in (1, 2, 3)]
    ([True, False, False], [True, False, True])
    """
    from anchorgpu.planner.layout_checks import sharded_pipeline_refusal

    if zero == 2:  # Megatron refuses it; the PyTorch stack plans it when asked, as Llama 3's FSDP (no launcher)
        return False
    return sharded_pipeline_refusal(train_stack, 2, zero) is None


def _candidates(model: ModelSpec, w: Workload, given: Layout, gpus: int, seq: int, batch: int,
                refused: list[str] | None = None, unsplit: list[tuple[int, int]] | None = None,
                zero2_blocks: list[tuple[int, int, int]] | None = None, fill: bool = False,
                ) -> tuple[list[tuple[TrainLayout, int]], tuple[Recompute, ...]]:
    """The layouts and micro-batches a search tries, each at every recompute level of the second (the same for all,
    least first): candidate ``g * len(levels) + j`` is pair ``g`` at level ``j``. Interleaved chunks only where the
    training stack runs them with the step's micro-batches (:func:`~.pipeline.interleaving_refusal`); the line
    refusing each such layout is added to ``refused`` when given. A stated global batch is kept as given: only the
    DP x micro-batch pairs that split it into whole micro-batches are tried (:func:`~anchorgpu.planner.global_batch.splits`),
    the others added to ``unsplit`` when given; the default batch needs one micro-batch per rank. Each run of ZeRO-2
    pairs that repeats the ZeRO-1 run before it but for the stage is added to ``zero2_blocks`` when given, as (its
    first pair, one past its last, how far back its ZeRO-1 run starts): :func:`~.chooser_order.zero1_twins`. ``fill``
    (the default batch only): a layout with more DP ranks than the batch has sequences is tried too, at its smallest
    micro-batch, the batch raised to one micro-batch a rank, as ``plan()`` times such a layout given."""
    # every split dimension not given is searched around the ones that are (--tp, --pp, --zero, --fsdp, --dp, --cp,
    # --ep), but for the ones the launch asked for cannot run (Workload.launch_stages, launch_tp_cp), held at 1; --tp
    # and --pp together fix the split as before (CP and EP 1 where not given, DP the rest)
    from anchorgpu.planner.qlora_tp import (  # QLoRA's 4-bit base: TP 1, no interleaving, device_map stages alone
        device_map_refusal,
        task_interleaves,
        task_runs_tp,
    )

    split_given = given.tp is not None and given.pp is not None
    tps = [given.tp or 1] if given.tp is not None or not (w.launch_tp_cp and task_runs_tp(w.task)) else [  # SP on and
        t for t in (1, 2, 4, 8)  # --tp-overlap need TP
        if t <= min(gpus, SERVER_GPUS) and tp_ok(model, t) and (t > 1 or not (given.sequence_parallel or given.tp_overlap))]
    cps = [given.cp or 1] if split_given or given.cp or not w.launch_tp_cp else list(train_cp_sizes(seq))
    fixed_zero = 3 if given.fsdp else given.zero
    moe = model.moe
    # a mixture of experts: expert parallelism too, over GPUs of one stage (tp x dp) that divide the experts
    eps = [given.ep or 1] if split_given or given.ep or moe is None else list(train_ep_sizes(moe.num_experts))
    out: list[tuple[TrainLayout, int]] = []
    mbs = micro_batches(w)
    rcs: tuple[Recompute, ...] = (w.recompute,) if w.recompute else recompute_ladder(moe is not None)
    if w.offload_activation_layers:  # Megatron-Core offloads activations with one stage and no recompute only
        rcs = ("none",)
    for tp in tps:
        for cp in cps:
            if gpus % (tp * cp):
                continue
            if (given.sequence_parallel is not False or splits_whatever_stated(w.train_stack)) \
                    and sequence_split_refusal(tp, cp, seq, w.train_stack):
                continue  # sequence parallelism (on with TP unless turned off) cannot split the sequence
            rest = gpus // (tp * cp)
            pps = ([given.pp or 1] if given.pp is not None or w.offload_activation_layers or not w.launch_stages
                   else train_pp_sizes(model.num_layers, rest))
            for pp in pps:
                if rest % pp:
                    continue
                dp = rest // pp
                if given.dp and given.dp != dp:
                    continue
                if device_map_refusal(w.task, w.train_stack, pp, dp, SERVER_GPUS) is not None:
                    continue  # QLoRA's stages on the PyTorch stack: one process on one server (planner.qlora_tp)
                zeros = [fixed_zero] if fixed_zero is not None else ([1, 2, 3] if dp * cp > 1 else [0])
                deepest, uneven = ((deepest_interleave(model, pp), None)
                                   if given.virtual_stages or given.pipeline_layout is not None
                                   else interleave_of(model, pp))  # uneven: layers no pp x v chunks split
                vs = ([given.virtual_stages] if given.virtual_stages
                      else sorted({1, deepest}) if task_interleaves(w.task) else [1])  # QLoRA: no interleaving
                stated = None
                if given.pipeline_layout is not None:  # the user's layout fixes the chunks; plan() refuses a bad one
                    try:
                        stated = parse_pipeline_layout(given.pipeline_layout, pp=pp, virtual_stages=given.virtual_stages,
                                                       num_layers=model.num_layers, model_name=model.name)
                    except InvalidWorkload:
                        continue
                    vs = [stated.virtual_stages]
                starts: dict[int, int] = {}
                for zero in zeros:
                    if zero2_blocks is not None and zero == 3 and 1 in starts and 2 in starts:  # ZeRO-2's run ends
                        add_zero2_block(zero2_blocks, starts[1], starts[2], len(out))
                    starts[zero] = len(out)
                    if pp > 1 and not sharded_with_stages(zero, w.train_stack):
                        continue  # the stack will not run this stage with pipeline stages
                    for v in vs:
                        if v > 1 and pp == 1:
                            continue
                        # EP folds over a stage's TP, CP, DP: one layout per EP size, whatever the micro-batch
                        lays = [TrainLayout(gpus=gpus, tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, zero=zero, virtual_stages=v,
                                            tp_overlap=given.tp_overlap, ep_overlap=given.ep_overlap,
                                            offload=given.offload or "none",
                                            pipeline_layout=stated if stated is not None or v == 1 else uneven,
                                            sequence_parallel=given.sequence_parallel)
                                for ep in eps if (tp * cp * dp) % ep == 0]
                        for mb in mbs:
                            if w.global_batch_tokens is not None and not splits(batch, dp=dp, micro_batch=mb,
                                                                                 seq_tokens=seq):
                                if unsplit is not None:
                                    unsplit.append((dp, mb))
                                continue  # the stated batch is not whole micro-batches for each DP rank
                            if dp * mb * seq > batch and not (fill and mb == mbs[0]):
                                continue  # fewer sequences than one micro-batch per DP rank
                            line = interleaving_refusal_line(pp, v, dp=dp, micro_batch=mb, seq_tokens=seq,
                                                             global_batch_tokens=max(batch, dp * mb * seq),
                                                             batch_given=w.global_batch_tokens is not None,
                                                             train_stack=w.train_stack)
                            if line is None:
                                out += [(lay, mb) for lay in lays]
                            elif refused is not None:
                                refused.append(line)
    return out, rcs


def candidate_layout(lay: TrainLayout, given: Layout) -> Layout:
    """The :class:`Layout` that plans search candidate ``lay``, what the user gave (FSDP, offload, EP, sequence
    parallelism) kept."""
    return Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep if lay.ep > 1 else given.ep, cp=lay.cp,
                  virtual_stages=lay.virtual_stages, zero=lay.zero, fsdp=given.fsdp, offload=given.offload,
                  tp_overlap=lay.tp_overlap, ep_overlap=lay.ep_overlap,
                  pipeline_layout=lay.pipeline_layout.text if lay.pipeline_layout is not None else None,
                  sequence_parallel=given.sequence_parallel)


def choose_training_layout(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                           overheads: Overheads, efficiencies: Overrides | None = None) -> tuple[Choice, Plan] | None:
    """The fastest layout that fits ``gpu`` (and the plan of it), or ``None`` when none does. ``efficiencies`` (the
    user's ``--mfu``/``--mbu``) time the candidates as they time the plan shown and recommend's sweep
    (``sweep_training``), so the layout chosen is the fastest at the speed the answer prints."""
    from anchorgpu.planner.plan import plan

    gpus = given.gpus or 1
    seq = default_seq_tokens(w, model.max_context_tokens)
    batch = w.global_batch_tokens or default_batch_tokens(w.task, seq)
    cal = calibrated(efficiencies)
    kind: TrainKind = train_kind(w.task)
    # QLoRA's base, whose bits its dequantization reads, as plan() resolves and times it (speed.dequant)
    base = (precision.weights or qlora_default_format(model).name) if kind == "qlora" else QLORA_BASE_FORMAT
    schedule = pipeline_schedule(w.task, w.train_stack)  # as plan() times the layout chosen (speed.estimate)
    prec = compute_precision_for_training(w.train_precision)
    network = network_bytes_per_s_of(w.network_gbit_per_s_per_gpu)  # None: the calibration's
    fixed_zero = 3 if given.fsdp else given.zero
    refused: list[str] = []
    unsplit: list[tuple[int, int]] = []
    blocks: list[tuple[int, int, int]] = []
    pairs, levels = _candidates(model, w, given, gpus, seq, max(batch, 1), refused, unsplit, blocks)
    twins = zero1_twins(blocks) if w.train_stack == "megatron" else None
    if not pairs and refused and given.pp is None and given.virtual_stages is not None:
        # only the stated --virtual-stages left nothing: say why (with --pp stated, plan() refuses the layout itself;
        # with none stated, the layout planned instead says what rules the rest out, such as an EP no stage splits)
        raise InvalidWorkload(said("--virtual-stages {virtual_stages}: no layout of the {gpus} GPUs interleaves "
                                   "with this batch; the first tried: {value}", virtual_stages=given.virtual_stages,
                                   gpus=gpus, value=refused[0]))
    if not pairs and unsplit and not refused:  # the stated batch splits over none of the layouts: never rounded
        raise InvalidWorkload(unsplit_by_any_refusal(batch, unsplit, seq, gpus))
    if not pairs and w.global_batch_tokens is None:  # every split has more DP ranks than the default has sequences
        # (4,095 GPUs: TP, PP and CP are powers of two, so DP 4,095): the default raised to one micro-batch a rank, as
        # plan() times a layout given so, and its batch line says (global_batch.batch_timed_line)
        blocks = []
        pairs, levels = _candidates(model, w, given, gpus, seq, max(batch, 1), refused, unsplit, blocks, fill=True)

    def speed(lay: TrainLayout, mb: int, rc: Recompute) -> float:
        return training_step(model, gpu, lay, seq_tokens=seq, micro_batch=mb,
                             global_batch_tokens=max(batch, lay.dp * mb * seq), recompute=rc, kind=kind,
                             precision=prec, cal=cal, train_stack=w.train_stack, network_bytes_per_s=network,
                             offload_activation_layers=w.offload_activation_layers,
                             optimizer_state=w.optimizer_state, schedule=schedule, base_format=base).tokens_per_s

    bounds: dict[tuple[int, int, int, int, int, int], float] = {}

    def bound(lay: TrainLayout, mb: int) -> float:  # at least speed(lay, mb, "none"), for less work
        key = (lay.tp, lay.cp, lay.pp, lay.virtual_stages, lay.ep, mb)  # the same for every ZeRO stage of a layout
        found = bounds.get(key)
        if found is None:
            found = bounds[key] = tokens_per_s_bound(
                model, gpu, lay, seq_tokens=seq, micro_batch=mb, global_batch_tokens=max(batch, lay.dp * mb * seq),
                kind=kind, precision=prec, cal=cal, train_stack=w.train_stack, network_bytes_per_s=network,
                schedule=schedule, base_format=base)
        return found

    def grows(lay: TrainLayout, low: int) -> Growth:  # its micro-batch parts at low, as bound reads them
        return growth_of(model, gpu, lay, seq_tokens=seq, micro_batch=low, cal=cal, kind=kind, precision=prec,
                         train_stack=w.train_stack, network_bytes_per_s=network, base_format=base)

    rung_bound, over = rung_bounds(grows, seq, batch, schedule, micro_batches(w)[0])

    def runs(lay: TrainLayout, mb: int) -> bool:  # a rung past the ladder (climb_ladder), checked as _candidates does
        if w.global_batch_tokens is not None and not splits(batch, dp=lay.dp, micro_batch=mb, seq_tokens=seq):
            return False
        return lay.dp * mb * seq <= batch and interleaving_refusal_line(
            lay.pp, lay.virtual_stages, dp=lay.dp, micro_batch=mb, seq_tokens=seq, global_batch_tokens=batch,
            batch_given=w.global_batch_tokens is not None, train_stack=w.train_stack) is None

    def fitting(layout: Layout, mb: int, rc: Recompute) -> Plan | None:
        try:
            p = plan(model, _with_knobs(w, micro_batch=mb, recompute=rc, seq_tokens=seq), precision=precision,
                     layout=layout, gpu=gpu, overheads=overheads, suggest=False)
        except InvalidWorkload:
            return None
        return p

    outgrown: set[int] = set()  # the layouts (by id: the pairs share them) whose model states alone outgrow the GPU
    planned: dict[tuple[int, int, Recompute], Plan | None] = {}  # (layout id, micro-batch, level) -> its plan, if it fits
    too_big: set[tuple[int, int, Recompute]] = set()  # those of them planned that do not fit (not refused)

    def fit_of(lay: TrainLayout, mb: int, rc: Recompute) -> Plan | None:  # the plan of a configuration that fits
        key = (id(lay), mb, rc)
        if key in planned:
            return planned[key]
        p = fitting(candidate_layout(lay, given), mb, rc)
        if p is not None and not p.fits:
            too_big.add(key)
            if w.task == "train" and _states_outgrow(p):
                outgrown.add(id(lay))
            p = None
        planned[key] = p
        return p

    def first_fit(stream: Iterator[tuple[float, int, TrainLayout, int, Recompute]],
                  ) -> tuple[float, int, TrainLayout, int, Recompute, Plan] | None:
        for value, i, lay, mb, rc in stream:
            if id(lay) in outgrown:
                continue  # no micro-batch or recompute level of it fits (_states_outgrow)
            p = fit_of(lay, mb, rc)
            if p is not None:
                return value, i, lay, mb, rc, p
        return None

    climbs = not w.micro_batch and bool(LADDER_PAST)

    def climbed(lay: TrainLayout, mb: int, rc: Recompute, value: float, p: Plan) -> _Found:
        if climbs:  # past micro-batch 4 while it keeps getting faster (climb_ladder)
            def fits_at(mb_k: int, rc_k: Recompute) -> Plan | None:
                return fit_of(lay, mb_k, rc_k)

            def runs_at(mb_k: int) -> bool:
                return runs(lay, mb_k)

            def speed_at(mb_k: int, rc_k: Recompute) -> float:
                return speed(lay, mb_k, rc_k)

            mb, rc, value, p = climb_ladder((mb, rc, value, p), levels, runs_at, speed_at, fits_at)
        return _Found(value, lay, candidate_layout(lay, given), mb, rc, p)

    head = first_fit(fastest_first(pairs, levels, speed, bound, twins, outgrown, over))
    if head is None:
        return None
    value, index, lay, mb, rc, p = head
    found = [climbed(lay, mb, rc, value, p)]  # the first layout that fits, climbed, then each split past it
    margin = cal.training_layout_margin
    if climbs:  # only another split's climb can beat the first (chooser_climb), every one that could is met
        n = len(levels)
        order: dict[int, tuple[float, int]] = {}  # a split's row -> (its speed before the climb, its candidate)

        def row(stream: Iterator[tuple[float, int, TrainLayout, int, Recompute]], members: list[int],
                ) -> _Found | None:
            hit = first_fit(stream)
            if hit is None:
                return None
            value, i, lay, mb, rc, p = hit
            f = climbed(lay, mb, rc, value, p)
            order[id(f)] = (-speed_rank(value), members[i // n] * n + i % n)
            return f

        def unfit(lay: TrainLayout, mb: int, rc: Recompute) -> bool:
            return (id(lay), mb, rc) in too_big

        def fits(lay: TrainLayout, mb: int, rc: Recompute) -> bool:
            return fit_of(lay, mb, rc) is not None

        more = climbers(pairs, levels, found[0].lay, found[0].tokens_per_s, margin,
                        given.fsdp or w.train_stack == "pytorch",  # a PyTorch training recipe may launch the plan
                        speed=speed, bound=bound, rung_bound=rung_bound, over=over, runs=runs, fits=fits, unfit=unfit, row=row, outgrown=outgrown,
                        settled={split_of(lay)})
        found += sorted(more, key=lambda f: order[id(f)])  # in the chooser's order, as recommend's rows weigh them
    first = found[0]
    pick = pick_split([(f.lay, f.tokens_per_s) for f in found], margin)
    chosen = found[pick]
    kept = max((f for f in found[1:] if f.tokens_per_s > chosen.tokens_per_s), key=lambda f: f.tokens_per_s,
               default=None)  # a faster split within the margin of the first: said, as recommend's sweep shows it
    rungs = rung_candidates(pairs, runs) * len(levels) if climbs else 0
    return Choice(layout=chosen.layout, workload=_with_knobs(w, micro_batch=chosen.mb, recompute=chosen.rc, seq_tokens=seq),
                  reason=training_reason(model, given, w, gpu, chosen, len(pairs) * len(levels) + rungs, fixed_zero,
                                         kept, first, margin)), chosen.plan


def _states_outgrow(p: Plan) -> bool:
    """Whether a full-training plan's weights, gradients and optimizer state alone exceed its GPU. The memory planner
    reads them from the layout, the weight format and the optimizer alone, not the micro-batch or the recompute, and
    adds only terms that are never negative (activations, overheads): then no micro-batch or recompute level of that
    layout fits either, and a search need not plan them (tests/speed/test_chooser_order.py holds the premise)."""
    per_gpu = p.per_gpu
    return p.budget_bytes is not None and (
        per_gpu.weights_bytes + per_gpu.gradients_bytes + per_gpu.optimizer_bytes > p.budget_bytes)
