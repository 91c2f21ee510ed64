"""Where no training layout fits the GPUs given: the closest one tried, shown as the plan, and the layouts chosen with
state offloaded to host memory on the same GPUs, offered under "What would fit". Pure.

An engineer shown that nothing fits 64 GPUs wants the layout that comes nearest on them and by how much it misses
(tens of GiB), not the unsplit layout's terabytes: :func:`closest_training_layout` plans each split the layout
chooser tries (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`) at its least memory (its smallest
micro-batch, the strongest recompute level searched) and keeps the one with the smallest per-GPU total, the
chooser's order breaking ties. The way such a job is run on the same GPUs is to keep state in host memory:
optimizer state (ZeRO-Offload; FSDP's ``CPUOffload``), then the parameters too (ZeRO-Infinity, ZeRO-3's offload
engine: https://deepspeed.readthedocs.io/en/stable/zero3.html; https://www.deepspeed.ai/tutorials/zero-offload/;
https://pytorch.org/docs/stable/fsdp.html ``cpu_offload=CPUOffload(offload_params=True)``), which
:func:`offload_suggestions` plans as ``plan --gpus N --offload ...`` answers it: the chooser's layout with that offload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload, default_seq_tokens
from anchorgpu.planner.result import Plan, ResolvedLayout, Suggestion
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["Closest", "closest_training_layout", "offload_suggestions", "split_words"]

OFFLOAD_STEPS = (("optimizer", "optimizer state in host memory (ZeRO-Offload)"),
                 ("params", "optimizer state and parameters in host memory (ZeRO-Infinity, FSDP CPU offload)"))
"""The offloads offered where no layout fits the GPUs given, in the order an engineer reaches for them: the
parameters go to the host only where the optimizer state alone is not enough (they are fetched every micro-batch)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Closest:
    """The closest layout tried, the workload it is planned with (micro-batch, recompute) and the sentence saying so."""

    layout: Layout
    workload: Workload
    line: str


def split_words(r: ResolvedLayout, recompute: str | None, micro_batch: int | None) -> str:
    """A resolved training layout in words, as "What would fit" names it.

    >>> r = ResolvedLayout(gpus=64, tp=8, pp=8, dp=1, ep=1, zero=1, fsdp=False, offload="none",
    ...                    sequence_parallel=True)
    >>> split_words(r, "full", 1)
    'TP 8 · PP 8 · DP 1 · ZeRO-1, recompute full, micro-batch 1'
    """
    return (f"TP {r.tp} · PP {r.pp}" + (f" (v {r.virtual_stages})" if r.virtual_stages > 1 else "")
            + (f" · CP {r.cp}" if r.cp > 1 else "") + f" · DP {r.dp}" + (f" · EP {r.ep}" if r.ep > 1 else "")
            + {0: "", 1: " · ZeRO-1", 2: " · ZeRO-2", 3: " · ZeRO-3"}[r.zero]
            + f", recompute {recompute}, micro-batch {micro_batch}")


def closest_training_layout(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                            overheads: Overheads) -> Closest | None:
    """The training layout on the ``given.gpus`` GPUs that comes nearest to fitting, where the chooser found none
    that fits: each split it tries (whatever the user fixed kept) planned once, at its smallest micro-batch and the
    strongest recompute level searched; the least per-GPU total kept (the first, in the chooser's order, of equals).
    None where no GPU count was given, nothing was planned, the flags given leave one split (TP, CP, PP, DP, EP,
    ZeRO; interleaving aside), or (never expected) one of them fits."""
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.speed.layouts import _candidates, _with_knobs, candidate_layout
    from anchorgpu.planner.speed.pipeline import default_batch_tokens

    gpus = given.gpus
    if gpus is None:
        return None
    seq = default_seq_tokens(w, model.max_context_tokens)
    batch = max(w.global_batch_tokens or default_batch_tokens(w.task, seq), 1)
    pairs, levels = _candidates(model, w, given, gpus, seq, batch)
    if not pairs and w.global_batch_tokens is None:  # as the chooser: the default batch raised to a micro-batch a rank
        pairs, levels = _candidates(model, w, given, gpus, seq, batch, fill=True)
    rc = levels[-1]  # least first: the last saves the most memory
    seen: set[tuple[int, ...]] = set()
    best: tuple[Plan, int, Layout] | None = None
    for lay, mb in pairs:  # a layout's first pair is its smallest micro-batch
        key = (lay.tp, lay.cp, lay.pp, lay.virtual_stages, lay.dp, lay.ep, lay.zero)
        if key in seen:
            continue
        seen.add(key)
        layout = candidate_layout(lay, given)
        try:
            p = plan(model, _with_knobs(w, micro_batch=mb, recompute=rc, seq_tokens=seq), precision=precision,
                     layout=layout, gpu=gpu, overheads=overheads, suggest=False,
                     choose_layout=False)
        except InvalidWorkload:
            continue
        if p.fits is not False:
            return None  # the chooser would have found it: nothing to stand in for
        if best is None or p.per_gpu.total_bytes < best[0].per_gpu.total_bytes:
            best = (p, mb, layout)
    if best is None or len({key[:3] + key[4:] for key in seen}) < 2:
        return None  # the split was the user's (--dp 8 --zero 0, --pp 8 on 8): planned as given, the lighter
        # recompute or micro-batch it lacks offered under "What would fit"
    p, mb, layout = best
    r, budget = p.layout, p.budget_bytes or 0
    states = p.per_gpu.weights_bytes + p.per_gpu.gradients_bytes + p.per_gpu.optimizer_bytes
    lacks = (f"its weights, gradients and optimizer state alone take {fmt_bytes(states)}" if states > budget
             else f"it needs {fmt_bytes(p.per_gpu.total_bytes)}")
    line = (f"No layout tried fits {gpus:,} {gpu.display_name} ({len(seen):,} splits, each at its least memory: smallest "
            f"micro-batch, recompute {rc}); the closest is planned, {split_words(r, rc, mb)}: {lacks} of the "
            f"{fmt_bytes(budget)} usable, short by {fmt_bytes(p.per_gpu.total_bytes - budget)} per GPU; see "
            "'What would fit'.")
    return Closest(layout=layout, workload=_with_knobs(w, micro_batch=mb, recompute=rc, seq_tokens=w.seq_tokens),
                   line=line)


def offload_suggestions(model: ModelSpec, asked: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                        overheads: Overheads, efficiencies: Overrides | None = None) -> list[Suggestion]:
    """``--offload optimizer`` (else ``--offload params``) on the GPUs given, as ``plan`` answers it with the layout
    left open: the fastest layout that fits with that state in host memory; the first offload that fits only."""
    from anchorgpu.planner.speed.layouts import choose_training_layout
    from anchorgpu.planner.suggest import _train_speed

    if given.gpus is None or given.offload != "none" or asked.task not in ("train", "lora", "qlora"):
        return []
    for offload, what in OFFLOAD_STEPS:
        try:
            found = choose_training_layout(model, asked, precision, evolve(given, offload=offload), gpu, overheads,
                                           efficiencies)
        except InvalidWorkload:
            continue
        alt = found[1] if found is not None else None
        if alt is None or alt.headroom_bytes is None:
            continue
        return [Suggestion(change=f"--offload {offload}",
                           description=f"{what}: the fastest layout on {given.gpus:,} GPUs with it, "
                                       f"{split_words(alt.layout, alt.workload.recompute, alt.workload.micro_batch)}",
                           gpus=alt.layout.gpus, total_bytes=alt.per_gpu.total_bytes,
                           headroom_bytes=alt.headroom_bytes, **_train_speed(alt, efficiencies))]
    return []
