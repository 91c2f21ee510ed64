"""What :func:`~anchorgpu.planner.plan.plan` offers beyond the configuration asked: the changes that would make
a workload fit (each planned again to check it does; the plan of the layout chosen for the user is
:mod:`.layout_choice`'s). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.inputs import (
    KV_CACHE_DTYPES,
    RECOMPUTES,
    Layout,
    Overheads,
    PrecisionPlan,
    Workload,
    recompute_ladder,
)
from anchorgpu.planner.layout_resolution import GPUS_PER_SERVER, tp_is_valid
from anchorgpu.planner.result import Plan, ResolvedLayout, Suggestion
from anchorgpu.planner.serving_queue import runs_fewer
from anchorgpu.planner.suggest_fraction import memory_fraction_suggestion
from anchorgpu.planner.train_sizes import train_cp_sizes
from anchorgpu.planner.training_gpu_counts import fewest_fitting_gpus

if TYPE_CHECKING:
    from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["suggestions_for"]

SMALL_SEQUENCE_CAP = 256
"""The ``--max-num-seqs`` "What would fit" offers a vLLM plan that does not fit: vLLM's own default on GPUs under
70 GiB (``engine_limits.engine_limits``), where its sampler's start-up profile is a quarter of a large GPU's 1,024."""


def suggestion_candidates(model: ModelSpec | DiffusionPipelineSpec, w: Workload, precision: PrecisionPlan,
                           layout: Layout, lay: ResolvedLayout, fmt: WeightFormat, gpu_vendor: str | None = None,
                           ) -> list[tuple[str, str, Workload, PrecisionPlan, Layout]]:
    out: list[tuple[str, str, Workload, PrecisionPlan, Layout]] = []
    if w.task == "inference":
        if lay.dp > 1 and isinstance(model, ModelSpec) and lay.pp * lay.dp <= model.num_layers:
            # the stages split every layer, experts too: a given EP would outlive the replicas it split over
            out.append((f"--tp {lay.tp} --pp {lay.pp * lay.dp}" + (" --ep 1" if lay.ep > 1 else ""),
                        "pipeline stages instead of replicas", w, precision,
                        Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp * lay.dp, dp=1)))
        if isinstance(model, ModelSpec) and not lay.attention_dp and 1 in _attention_dp_tp_sizes(model, lay.gpus, w.engine):
            out.append((f"--tp 1 --dp {lay.gpus} --ep {lay.gpus}",
                        "attention data parallelism: each GPU keeps its own sequences' KV cache, experts split over "
                        f"all {lay.gpus}", w, precision, Layout(gpus=lay.gpus, tp=1, pp=1, dp=lay.gpus, ep=lay.gpus)))
        elif (isinstance(model, ModelSpec) and not lay.attention_dp and lay.gpus > GPUS_PER_SERVER
              and lay.gpus % GPUS_PER_SERVER == 0 and 1 in _attention_dp_tp_sizes(model, GPUS_PER_SERVER, w.engine)):
            # several servers: one server's attention-DP engine on each (the experts split within a server)
            out.append((f"--tp 1 --dp {lay.gpus} --ep {GPUS_PER_SERVER}",
                        f"attention data parallelism, one server's engine on each of {lay.gpus // GPUS_PER_SERVER}: "
                        f"each GPU keeps its own sequences' KV cache, experts split over each server's "
                        f"{GPUS_PER_SERVER}", w, precision,
                        Layout(gpus=lay.gpus, tp=1, pp=1, dp=lay.gpus, ep=GPUS_PER_SERVER)))
        elif (isinstance(model, ModelSpec) and lay.attention_dp and lay.pp == 1 and lay.ep < GPUS_PER_SERVER
              and lay.gpus % GPUS_PER_SERVER == 0 and lay.tp in _attention_dp_tp_sizes(model, GPUS_PER_SERVER, w.engine)):
            # attention DP with its experts over part of a server: over all of it, each GPU holds fewer of them
            out.append((f"--ep {GPUS_PER_SERVER}", f"experts split over each server's {GPUS_PER_SERVER} GPUs, not "
                        f"{lay.ep}", w, precision, Layout(gpus=lay.gpus, tp=lay.tp, pp=1, dp=lay.dp, ep=GPUS_PER_SERVER)))
        # a larger memory fraction: searched, not listed (suggest_fraction.memory_fraction_suggestion)
        for gpus in (2, 4, 8, 16, 32):
            if gpus > lay.gpus:
                tp = min(gpus, GPUS_PER_SERVER)
                if tp_is_valid(model, tp):
                    new = Layout(gpus=gpus, tp=tp, pp=gpus // tp, dp=1)
                    out.append((f"--gpus {gpus} --tp {tp}" + (f" --pp {gpus // tp}" if gpus > tp else "")
                                + (" --ep 1" if lay.ep > 1 else ""), f"shard over {gpus} GPUs", w, precision, new))
        for name, above_bits in (("fp8", 8), ("int4-awq", 6)):
            if fmt.linear_bits > above_bits + 0.5:  # not when already in (a block-scaled variant of) it
                out.append((f"--weights {name}", f"store weights as {name}", w, evolve(precision, weights=name), layout))
        if KV_CACHE_DTYPES.get(precision.kv_cache, 2) > KV_CACHE_DTYPES["fp8"]:  # not from fp8 or nvfp4
            out.append(("--kv-cache fp8", "halve the KV cache with fp8", w, evolve(precision, kv_cache="fp8"), layout))
        if w.engine == "vllm" and (w.max_num_seqs or 0) > SMALL_SEQUENCE_CAP >= (w.concurrency or 1):
            # vLLM profiles its sampler over max_num_seqs sequences of the whole vocabulary at start-up (1,024 on
            # a large GPU): a cap of its smaller GPUs' default frees that for the KV cache when fewer users are asked
            out.append((f"--max-num-seqs {SMALL_SEQUENCE_CAP}",
                        f"cap vLLM at {SMALL_SEQUENCE_CAP} sequences at once (its start-up profile reserves the "
                        "sampler's logits for max_num_seqs sequences over the whole vocabulary)",
                        evolve(w, max_num_seqs=SMALL_SEQUENCE_CAP), precision, layout))
        if w.engine == "vllm" and gpu_vendor == "NVIDIA":
            out.append(("--engine trtllm", "serve with TensorRT-LLM (KV cache: a share of the memory free after "
                        "profiling)", evolve(w, engine="trtllm"), precision, layout))
    elif w.task in ("train", "lora", "qlora"):
        if lay.zero < 3 and lay.dp > 1:
            out.append(("--zero 3", "shard weights, gradients and optimizer over the data-parallel ranks", w,
                        precision, evolve(layout, zero=3, fsdp=False)))
        out += _split_candidates(model, w, precision, layout, lay)
        for rc in recompute_ladder(isinstance(model, ModelSpec) and model.moe is not None)[1:]:
            if RECOMPUTES.index(rc) > RECOMPUTES.index(w.recompute or "none"):
                what = ("recompute the MoE blocks in the backward pass" if rc == "moe" else f"{rc} activation recompute")
                out.append((f"--recompute {rc}", what, evolve(w, recompute=rc), precision, layout))
        seq = w.seq_tokens or 0
        if seq >= 256:
            out.append((f"--seq {seq // 2}", "halve the sequence length", evolve(w, seq_tokens=seq // 2), precision,
                        layout))
        if (w.micro_batch or 1) > 1:
            out.append(("--micro-batch 1", "one sequence per step (accumulate gradients instead)",
                        evolve(w, micro_batch=1), precision, layout))
        for gpus in (2, 4, 8, 16, 32, 64, 128, 256):
            if gpus > lay.gpus:
                sharded = Layout(gpus=gpus, zero=3, offload=layout.offload)
                out.append((f"--gpus {gpus} --zero 3", f"ZeRO-3 over {gpus} GPUs", w, precision, sharded))
                if w.recompute != "full":
                    out.append((f"--gpus {gpus} --zero 3 --recompute full", f"ZeRO-3 over {gpus} GPUs, full recompute",
                                evolve(w, recompute="full"), precision, sharded))
        if lay.offload == "none":
            out.append(("--offload optimizer", "keep optimizer state in CPU RAM", w, precision,
                        evolve(layout, offload="optimizer")))
        # planned again like every candidate: where Megatron-Core cannot offload (pipeline stages, recompute, another
        # stack) the plan refuses it and it is not offered
        half = model.num_layers // 2 if isinstance(model, ModelSpec) else 0  # as Megatron-Bridge's GB200 70B: 40 of 80
        if w.task == "train" and not w.offload_activation_layers and half:
            out.append((f"--offload-activations {half}",
                        f"keep the first {half} layers' activations in host memory between the passes (Megatron-Core "
                        "CPU offloading)", evolve(w, offload_activation_layers=half), precision, layout))
        if w.task == "train":
            out.append(("--task qlora", "a different job: fine-tune LoRA adapters on a frozen NF4 base", evolve(w, task="qlora"),
                        evolve(precision, weights=None), layout))
    else:
        if not w.vae_tiling:
            out.append(("--vae-tiling", "decode the image in tiles", evolve(w, vae_tiling=True), precision, layout))
        if layout.offload == "none":
            out.append(("--offload params", "model CPU offload", w, precision, evolve(layout, offload="params")))
        if fmt.linear_bits > 8:
            out.append(("--weights fp8", "fp8 denoiser", w, evolve(precision, weights="fp8"), layout))
            out.append(("--weights nf4", "NF4 denoiser", w, evolve(precision, weights="nf4"), layout))
    return out


def _split_candidates(model: ModelSpec | DiffusionPipelineSpec, w: Workload, precision: PrecisionPlan,
                      layout: Layout, lay: ResolvedLayout) -> list[tuple[str, str, Workload, PrecisionPlan, Layout]]:
    """Training on the same GPUs with each layer split wider (TP inside a server) or, for sequences of 16,384 tokens
    or more, each sequence split over GPUs (CP, the sizes the layout chooser tries), the rest of the layout as given
    (the data-parallel ranks give way); each also with full recompute, for what only both together hold."""
    out: list[tuple[str, str, Workload, PrecisionPlan, Layout]] = []
    if not isinstance(model, ModelSpec):
        return out
    full = evolve(w, recompute="full") if w.recompute != "full" else None
    splits: list[tuple[str, str, int, int]] = [
        (f"--tp {tp}", f"split each layer over {tp} GPUs (tensor parallelism)", tp, lay.cp)
        for tp in (2, 4, 8) if lay.tp < tp <= GPUS_PER_SERVER and tp_is_valid(model, tp)]
    splits += [(f"--cp {cp}", f"split each sequence over {cp} GPUs (context parallelism)", lay.tp, cp)
               for cp in train_cp_sizes(w.seq_tokens or 0) if cp > lay.cp]
    for change, description, tp, cp in splits:
        if lay.gpus % (tp * lay.pp * cp):
            continue
        new = evolve(layout, tp=tp, cp=cp, dp=lay.gpus // (tp * lay.pp * cp))
        out.append((change, description, w, precision, new))
        if full is not None:
            out.append((f"{change} --recompute full", f"{description}, full recompute", full, precision, new))
    return out


def _attention_dp_tp_sizes(model: ModelSpec, gpus: int, engine: str) -> tuple[int, ...]:
    """:func:`anchorgpu.planner.speed.serving_layouts.attention_dp_tp_sizes` (imported where it is needed: the layout chooser
    imports the planner)."""
    from anchorgpu.planner.speed.serving_layouts import attention_dp_tp_sizes

    return attention_dp_tp_sizes(model, gpus, engine)


def suggestions_for(model: ModelSpec | DiffusionPipelineSpec, w: Workload, precision: PrecisionPlan, layout: Layout,
                 lay: ResolvedLayout, fmt: WeightFormat, gpu: GpuSpec, overheads: Overheads,
                 asked: Workload | None = None, more_gpus: bool = True,
                 notes: list[str] | None = None, short_bytes: int = 0,
                 efficiencies: Overrides | None = None, asked_layout: Layout | None = None) -> tuple[Suggestion, ...]:
    """What would fit: each change planned again. ``w`` is the plan's workload (its defaults resolved), ``asked`` the
    one the user gave: the layout chosen on more GPUs chooses what the user left open, as ``plan --gpus N`` does
    (``more_gpus=False`` leaves that search out). ``notes`` takes the line saying no memory fraction the engine
    starts with makes a serving plan fit, where none does though the plan is ``short_bytes`` short by less than the
    memory its fraction leaves out. ``efficiencies``: the user's ``--mfu``/``--mbu``, which time a suggested training
    plan as they time the plan itself (none: the calibrated model). ``asked_layout``: the layout asked, where
    ``layout`` is the closest one tried in its place (:mod:`~anchorgpu.planner.closest_layout`): more GPUs and offload
    are chosen around it, as ``plan`` answers those commands."""
    from anchorgpu.planner.plan import plan  # plan() asks for suggestions; each one is planned again

    found: list[Suggestion] = []
    more_gpus_found = False
    given = asked_layout or layout
    if more_gpus and isinstance(model, ModelSpec) and w.task in ("train", "lora", "qlora") and given.dp is None:
        chosen = _more_gpus_chosen(model, asked or w, precision, given, lay.gpus, gpu, overheads, efficiencies)
        if chosen is not None:
            found.append(chosen)
    chosen_offload = asked_layout is not None  # offload chosen on these GPUs, not planned on the layout shown
    if chosen_offload and isinstance(model, ModelSpec):
        from anchorgpu.planner.closest_layout import offload_suggestions

        found += offload_suggestions(model, asked or w, precision, given, gpu, overheads, efficiencies)
    if isinstance(model, ModelSpec) and w.task == "inference":
        fraction, none_fits = memory_fraction_suggestion(model, w, precision, layout, gpu, overheads, short_bytes)
        if fraction is not None:
            change, description, alt = fraction
            assert alt.headroom_bytes is not None
            found.append(Suggestion(change=change, description=description, gpus=alt.layout.gpus,
                                    total_bytes=alt.per_gpu.total_bytes, headroom_bytes=alt.headroom_bytes))
        if none_fits is not None and notes is not None:
            notes.append(none_fits)
    candidates = suggestion_candidates(model, w, precision, layout, lay, fmt, gpu.vendor)
    if asked_layout is not None and asked is not None:  # more GPUs with the micro-batch and recompute asked, not the
        # closest layout's (the command pasted plans them so)
        base = evolve(w, micro_batch=asked.micro_batch, recompute=asked.recompute)
        candidates = [c for c in candidates if not c[0].startswith("--gpus")] + [
            c for c in suggestion_candidates(model, base, precision, asked_layout, lay, fmt, gpu.vendor)
            if c[0].startswith("--gpus")]
    for change, description, w2, p2, l2 in candidates:
        if more_gpus_found and change.startswith("--gpus") or chosen_offload and change.startswith("--offload "):
            continue  # the smallest GPU count that fits is the useful one; an offload is chosen above
        if asked is not None and asked.gpu_memory_utilization is None \
                and w2.gpu_memory_utilization == w.gpu_memory_utilization:
            # a memory share the user did not give is the engine's default for the change, as the command pasted
            # gets it: SGLang derives its mem_fraction_static from the layout (0.886 at TP 8, 0.758 at TP 1 x DP 8
            # for DeepSeek-V3 on H200), so the plan's own figure does not carry over to another layout
            w2 = evolve(w2, gpu_memory_utilization=None)
        if asked is not None and asked.max_num_seqs is None and w2.max_num_seqs == w.max_num_seqs:
            # nor a sequence cap the user did not give: the plan resolved it for its own layout and format (SGLang's
            # from the KV pool that format left, 1 where none), and a change planned with it "fit" by queueing every
            # user but one (Llama-3.1-70B on one H100 under SGLang: int4-awq offered at 41.50 GiB, which planned as
            # the command pasted needs 119.00 GiB)
            w2 = evolve(w2, max_num_seqs=None)
        try:
            alt = plan(model, w2, precision=p2, layout=l2, gpu=gpu, overheads=overheads, suggest=False,
                       choose_layout=False)
        except InvalidWorkload:
            continue
        if runs_fewer(alt.breakdown.get("kv_cache_sequences_per_replica"), alt.layout.dp, w.concurrency or 1, lay.dp):
            # pipeline stages in place of replicas would "fit" by queueing users the replicas ran: not offered
            continue
        if alt.fits and alt.headroom_bytes is not None:
            more_gpus_found = more_gpus_found or change.startswith("--gpus")
            found.append(Suggestion(change=change, description=description, gpus=alt.layout.gpus,
                                    total_bytes=alt.per_gpu.total_bytes, headroom_bytes=alt.headroom_bytes,
                                    **_train_speed(alt, efficiencies)))
    # Fewest GPUs first; among those, changes that keep the job (layout, recompute, offload) before a change of the
    # job (QLoRA instead of full training, shorter sequences); then, for training, the fastest (a lighter recompute
    # before full recompute, which an engineer reaches for last), then the smallest footprint.
    found.sort(key=lambda s: (s.gpus, s.change.startswith(("--task", "--seq")), -(s.train_tokens_per_s or 0.0),
                              s.total_bytes))
    # of the wider splits on the same GPUs (TP sizes, CP sizes, each with or without full recompute), the fastest of
    # each kind is the one to offer: the others would crowd out the different changes
    # and a change that plans what an earlier one already plans (``--gpus 16 --zero 3 --recompute full`` where the
    # layout chosen on 16 GPUs is that one) would only repeat it
    seen: set[str] = set()
    planned: set[tuple[int, int, float | None]] = set()
    kept = []
    for s in found:
        kind = s.change.split()[0] if s.change.startswith(("--tp ", "--cp ")) else None
        same = (s.gpus, s.total_bytes, s.train_tokens_per_s)
        if (kind is None or kind not in seen) and same not in planned:
            kept.append(s)
            planned.add(same)
            if kind is not None:
                seen.add(kind)
    return tuple(kept[:6])


def _more_gpus_chosen(model: ModelSpec, w: Workload, precision: PrecisionPlan, layout: Layout, gpus_now: int,
                      gpu: GpuSpec, overheads: Overheads, efficiencies: Overrides | None = None) -> Suggestion | None:
    """``--gpus N`` for the fewest GPUs of :data:`TRAINING_GPU_COUNTS` above ``gpus_now`` on which the layout chosen
    for the user (what ``plan --gpus N`` with the same other flags answers: whatever the user fixed kept) fits."""
    fewest = fewest_fitting_gpus(model, w, precision, layout, gpu, overheads, above=gpus_now, efficiencies=efficiencies)
    if fewest is None:
        return None
    gpus, _, (_, alt) = fewest
    if alt.headroom_bytes is None:
        return None
    r = alt.layout
    split = f"TP {r.tp} · PP {r.pp}" + (f" (v {r.virtual_stages})" if r.virtual_stages > 1 else "") \
        + (f" · CP {r.cp}" if r.cp > 1 else "") + f" · DP {r.dp}" + (f" · EP {r.ep}" if r.ep > 1 else "") \
        + {0: "", 1: " · ZeRO-1", 2: " · ZeRO-2", 3: " · ZeRO-3"}[r.zero] \
        + f", recompute {alt.workload.recompute}, micro-batch {alt.workload.micro_batch}"
    return Suggestion(change=f"--gpus {gpus}", description=f"the fastest layout on {gpus} GPUs: {split}",
                      gpus=gpus, total_bytes=alt.per_gpu.total_bytes, headroom_bytes=alt.headroom_bytes,
                      **_train_speed(alt, efficiencies))


_SPEED_KEYS = ("train_tokens_per_s", "train_tokens_per_s_low", "train_tokens_per_s_high")


def _train_speed(alt: Plan, efficiencies: Overrides | None = None) -> dict[str, float]:
    """The training tokens a second the speed model predicts for a suggestion's plan and its band, as
    :class:`Suggestion`'s fields (none where it gives no prediction), from the one estimate of that plan; with the
    user's ``efficiencies`` (``--mfu``/``--mbu``) in place of the calibrated ones where given, as the plan's own
    speed is timed (no band then: low = high = the prediction)."""
    if alt.workload.task not in ("train", "lora", "qlora"):
        return {}
    from anchorgpu.planner.speed.estimate import plan_performance  # the speed model reads plans, not the reverse

    try:
        perf = plan_performance(alt, mfu=efficiencies.mfu if efficiencies else None,
                                mbu=efficiencies.mbu if efficiencies else None)
    except InvalidWorkload:
        return {}
    if not perf.get("train_tokens_per_s"):
        return {}
    return {key: float(perf[key]) for key in _SPEED_KEYS if perf.get(key) is not None}
