"""Vectorized sweep: every hardware shape x server count x layout x precision x batch, in numpy. Pure.

The sweep evaluates memory fit and speed for many configurations at once. It never sees prices (the
recommend service joins prices afterwards). Its memory figures are the planner's own: per-model
constants come from the same scalar functions :func:`anchorgpu.planner.plan` uses
(:mod:`anchorgpu.planner.memory`, :mod:`anchorgpu.planner.formats`), computed once per distinct
(format, TP, PP) and then broadcast over the grid; training memory, which depends only on the layout,
comes from :func:`~anchorgpu.planner.plan` itself, once per distinct layout. Speed follows
:mod:`anchorgpu.planner.speed` (serving written out in array form). ``tests/recommend`` checks both against
the scalar functions on sampled configurations.

Grid (in this order, which is also the order of the result columns; the sweep is deterministic):
shape -> servers (1..max_servers whole servers) -> TP (powers of two up to the GPUs of one server,
valid for the model's heads) -> PP (powers of two; across servers only where a fabric joins them)
-> DP (the rest of the GPUs) -> ZeRO stage (training) -> weight format -> KV-cache dtype -> concurrency.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner.formats import ModelParts, format_for_model, model_weight_parts, shipped_format
from anchorgpu.planner.inputs import (
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    KV_CACHE_DTYPES,
    Layout,
    Overheads,
    PrecisionPlan,
    Workload,
    default_seq_tokens,
    engine_limits,
)
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.calibration import Calibration, Overrides, calibrated, calibration
from anchorgpu.planner.speed.flops import Recompute, TrainKind, attention_flops_per_token, forward_matmul_params
from anchorgpu.planner.speed.launches import launch_ratio
from anchorgpu.planner.speed.links import (
    ACTIVATION_BYTES,
    compute_precision_for_training,
    compute_precision_for_weights,
    peak_for,
    tp_link,
)
from anchorgpu.planner.speed.serving import moe_product_shares, routed_share_per_gpu
from anchorgpu.planner.speed.training import DEFAULT_GLOBAL_BATCH_TOKENS, TrainLayout, training_step
from anchorgpu.planner.validate import tp_is_valid
from anchorgpu.units import GIB

__all__ = [
    "BATCH_LADDER",
    "DEFAULT_INFERENCE_WEIGHTS",
    "DEFAULT_KV_CACHES",
    "HardwareShape",
    "SweepResult",
    "SweepSpec",
    "sweep",
    "valid_tp",
]

BATCH_LADDER: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
"""Concurrencies tried when the workload names none."""
DEFAULT_INFERENCE_WEIGHTS: tuple[str, ...] = ("bf16", "fp8", "int4-awq")
"""Weight formats a serving sweep compares unless told otherwise (16-bit, 8-bit, 4-bit)."""
DEFAULT_KV_CACHES: tuple[str, ...] = ("bf16", "fp8")
POWERS_OF_TWO: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareShape:
    """A rentable server shape as the planner sees it: a GPU, how many per server, how servers connect.

    ``network_bytes_per_s`` is the server-to-server bandwidth per GPU, one direction. ``scale_out`` says
    whether a fabric joins servers so that pipeline stages may span them; without one, extra servers only
    add data-parallel replicas.
    """

    id: str
    gpu: GpuSpec
    gpus_per_server: int
    max_servers: int = 4
    network_bytes_per_s: float = field(default_factory=lambda: calibration().network_bytes_per_s)
    scale_out: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    """What to sweep. Empty tuples mean the task's defaults (stated in the result's assumptions)."""

    workload: Workload = field(default_factory=Workload)
    weights: tuple[str, ...] = ()
    kv_caches: tuple[str, ...] = ()
    concurrencies: tuple[int, ...] = ()
    prompt_tokens: int | None = None  # default: plan's, 1,024 within the context (inputs.DEFAULT_PROMPT_TOKENS)
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    train_tokens: int | None = None
    global_batch_tokens: int | None = None  # training: tokens per optimizer step (default performance's 2M)
    efficiencies: Overrides = field(default_factory=Overrides)  # --mfu / --mbu replace calibrated constants
    overheads: Overheads = field(default_factory=Overheads)
    max_pp: int = 8
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepResult:
    """Every configuration evaluated, as parallel numpy columns (one entry per configuration).

    Index columns: ``shape`` (into ``shapes``), ``servers``, ``gpus``, ``tp``, ``pp``, ``dp``, ``zero``,
    ``weights`` (into ``weights``), ``kv_cache`` (into ``kv_caches``), ``concurrency``. Memory columns
    (bytes per GPU): ``weights_bytes``, ``kv_cache_bytes``, ``activations_bytes``, ``other_bytes``,
    ``per_gpu_total_bytes``, ``budget_bytes``, ``fits``. Speed columns: ``prefill_s``,
    ``decode_tokens_per_s_per_user``, ``decode_tokens_per_s_total``, ``train_tokens_per_s``,
    ``train_time_s`` (NaN where the task has no such phase).
    """

    task: str
    evaluated: int
    shapes: tuple[HardwareShape, ...]
    weights: tuple[str, ...]
    kv_caches: tuple[str, ...]
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    columns: Mapping[str, npt.NDArray[Any]]
    assumptions: tuple[str, ...]
    warnings: tuple[tuple[str, str], ...]

    def row(self, i: int) -> dict[str, Any]:
        """Configuration ``i`` as plain Python values (names resolved)."""
        c = self.columns
        shape = self.shapes[int(c["shape"][i])]
        out: dict[str, Any] = {"shape": shape.id, "gpu": shape.gpu.name}
        for name, values in c.items():
            if name == "shape":
                continue
            value = values.item(i)
            if name == "weights":
                value = self.weights[value]
            elif name == "kv_cache":
                value = self.kv_caches[value]
            elif isinstance(value, float) and math.isnan(value):
                value = None
            out[name] = value
        return out


def valid_tp(model: ModelSpec, tp: int) -> bool:
    """TP must divide the attention heads and divide, or be a multiple of, the KV heads (MLA: any divisor).

    The same rule :func:`anchorgpu.planner.plan` enforces (``tp does not divide the heads`` otherwise).

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> [tp for tp in (1, 2, 3, 4, 8, 16) if valid_tp(llama_3_1_70b(), tp)]
    [1, 2, 4, 8, 16]
    """
    return tp_is_valid(model, tp)


# ------------------------------------------------------------------------------------------- layouts


@dataclass(frozen=True, slots=True)
class _Layouts:
    shape: IntArray
    servers: IntArray
    gpus: IntArray
    tp: IntArray
    pp: IntArray
    dp: IntArray
    zero: IntArray

    def __len__(self) -> int:
        return int(self.shape.size)


def _layouts(model: ModelSpec, shapes: Sequence[HardwareShape], *, training: bool, max_pp: int,
             zero_stages: Sequence[int]) -> _Layouts:
    tps = np.array([tp for tp in POWERS_OF_TWO if valid_tp(model, tp)], dtype=np.int64)
    pps = np.array([pp for pp in POWERS_OF_TWO if pp <= max_pp and pp <= model.num_layers], dtype=np.int64)
    zeros = np.array(sorted(set(zero_stages)) if training else [0], dtype=np.int64)
    per_server = np.array([sh.gpus_per_server for sh in shapes], dtype=np.int64)
    most_servers = np.array([sh.max_servers for sh in shapes], dtype=np.int64)
    fabric = np.array([sh.scale_out for sh in shapes], dtype=bool)
    servers_axis = np.arange(1, int(most_servers.max()) + 1, dtype=np.int64)
    # the whole candidate grid in loop order (shape, servers, tp, pp, zero), then the rules as masks
    s_i, n, tp, pp, z = (a.ravel() for a in np.meshgrid(np.arange(len(shapes)), servers_axis, tps, pps, zeros,
                                                         indexing="ij"))
    k = per_server[s_i]
    gpus = n * k
    ok = (n <= most_servers[s_i]) & (tp <= k) & (k % tp == 0) & (gpus % (tp * pp) == 0)
    ok &= fabric[s_i] | (tp * pp <= k)  # pipeline stages span servers only over a fabric
    dp = np.where(ok, gpus // (tp * pp), 0)
    ok &= (z == 0) | (dp > 1)  # ZeRO shards over data-parallel ranks: pointless with one
    if not ok.any():
        raise InvalidWorkload(f"no valid tensor-parallel layout for {model.name} on the shapes given")
    return _Layouts(s_i[ok], n[ok], gpus[ok], tp[ok], pp[ok], dp[ok], z[ok])


# ------------------------------------------------------------------------------------- inference


def _token_slots(model: ModelSpec, context_tokens: int, block_size: int) -> int:
    """KV token slots summed over the attention layers, paged and window-capped: the inner sum of
    :func:`anchorgpu.planner.memory.kv_cache_bytes` (layers grouped by their window)."""
    windows = model.attention_windows
    return sum(count * math.ceil((context_tokens if w is None else min(context_tokens, w)) / block_size) * block_size
               for w, count in Counter(windows).items())


@lru_cache(maxsize=128)
def _weight_parts(model: ModelSpec, weights_format: str) -> ModelParts:
    """:func:`anchorgpu.planner.formats.model_weight_parts`, once per (model, format): models are frozen."""
    return model_weight_parts(model, format_for_model(model, weights_format))


def _allreduce_array(message_bytes: FloatArray, ranks: IntArray, bw: FloatArray, latency: FloatArray,
                     cal: Calibration) -> FloatArray:
    """:func:`anchorgpu.planner.speed.links.allreduce_s` over arrays."""
    ranks_f = ranks.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = latency + 2.0 * (ranks_f - 1) / ranks_f * message_bytes / (bw * cal.link_efficiency)
    return np.where((ranks > 1) & (message_bytes > 0), t, 0.0)


def _per_value(keys: IntArray, fn: Callable[[int], float]) -> IntArray:
    """``fn`` applied once per distinct key, mapped back onto ``keys``."""
    unique, inverse = np.unique(keys, return_inverse=True)
    return np.array([fn(int(k)) for k in unique.tolist()], dtype=np.int64)[inverse]


def _links(shapes: Sequence[HardwareShape], lay: _Layouts, ranks: IntArray | None = None,
           network: bool = True) -> tuple[FloatArray, FloatArray]:
    """Per layout row: one-direction bandwidth and latency of the link a group of ``ranks`` adjacent GPUs
    crosses (default the TP group; one lookup per shape and group size)."""
    group = lay.tp if ranks is None else ranks
    key = lay.shape * 65536 + group
    unique, inverse = np.unique(key, return_inverse=True)
    bw = np.empty(unique.size)
    lat = np.empty(unique.size)
    for i, k in enumerate(unique.tolist()):
        shape = shapes[k // 65536]
        link = tp_link(shape.gpu, k % 65536, gpus_per_server=shape.gpus_per_server,
                       network_bytes_per_s=shape.network_bytes_per_s if network else None)
        bw[i], lat[i] = link.bytes_per_s, link.latency_s
    return bw[inverse], lat[inverse]


def _inference(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: _Layouts,
               weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...], ctx: int, prompt: int,
               progress: Progress | None) -> dict[str, npt.NDArray[Any]]:
    w = spec.workload
    ov = spec.overheads
    n_l, n_w, n_k, n_c = len(lay), len(weights), len(kvs), len(concs)
    total = n_l * n_w * n_k * n_c

    # ---- per (layout, format): weights bytes per GPU and compute peak (scalar functions, cached)
    try:
        parts = [_weight_parts(model, name) for name in weights]
    except TypeError:  # a model record that cannot be hashed: compute without the cache
        parts = [model_weight_parts(model, format_for_model(model, name)) for name in weights]
    tp_pp, tp_pp_row = np.unique(lay.tp * 4096 + lay.pp, return_inverse=True)
    weights_uw = np.array([[mm.shard_share(part, tp=key // 4096, pp=key % 4096, ep=1) for part in parts]
                           for key in tp_pp.tolist()], dtype=np.float64)
    weights_lw = weights_uw[tp_pp_row]
    precisions = [compute_precision_for_weights(name) for name in weights]
    distinct = sorted(set(precisions))
    peaks: dict[str, list[float]] = {}  # shapes share GPUs: one lookup per GPU and precision
    for sh in shapes:
        if sh.gpu.name not in peaks:
            by_precision = {p: peak_for(sh.gpu, p).flops_per_s for p in distinct}
            peaks[sh.gpu.name] = [by_precision[p] for p in precisions]
    peak_sw = np.array([peaks[sh.gpu.name] for sh in shapes])
    if progress:
        progress(total // 4, total)

    # ---- per layout: activations (vLLM profile run), non-torch, budget (as plan() does)
    large = np.array([sh.gpu.memory_bytes >= 70 * GIB for sh in shapes], dtype=np.int64)[lay.shape]

    def activation(key: int) -> int:  # vLLM defaults by GPU size, as plan() resolves them
        tp, big = key // 2, bool(key % 2)
        tokens, seqs = engine_limits(w, large_gpu=big)
        return (mm.prefill_activation_bytes(model, tokens=tokens, tp=tp)
                + mm.sampler_activation_bytes(sequences=min(tokens, seqs), vocab=model.vocab_size))

    act_l = _per_value(lay.tp * 2 + large, activation).astype(np.float64)
    non_torch_l = np.where(lay.tp * lay.pp == 1, ov.serving_non_torch_tp1_bytes, ov.serving_non_torch_multi_bytes)
    mem_s = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)
    budget_l = np.ceil(mem_s[lay.shape] * w.gpu_memory_utilization)

    # ---- per (layout, kv): KV bytes per sequence factor (exact form of memory.kv_cache_bytes)
    slots = _token_slots(model, ctx, w.block_size_tokens)
    n_layers = max(1, model.num_layers)
    # recurrent state per sequence (bytes, all layers): memory.recurrent_state_bytes in array form
    state_seq = model.state_bytes_per_sequence(mm.STATE_BYTES_PER_VALUE)
    values_l = _per_value(lay.tp, lambda tp: mm.kv_values_per_token_per_gpu(model, tp=tp))
    stage_l = _per_value(lay.pp, lambda pp: mm.stage_layers(model.num_layers, pp))
    bpv_k = np.array([KV_CACHE_DTYPES[k] for k in kvs], dtype=np.int64)
    cached = prompt + spec.output_tokens // 2
    read_slots = _token_slots(model, cached, 1)

    # ---- the grid (layout, weights, kv, concurrency): each term on the axes it depends on, numpy broadcasting
    # the rest (the same operations per element, on fewer elements), widened to the full grid when returned
    shape4 = (n_l, n_w, n_k, n_c)
    conc = np.array(concs, dtype=np.int64)[None, None, None, :]
    dp4 = lay.dp[:, None, None, None]
    per_replica = -(-conc // dp4)
    slot_bytes = (slots * values_l)[:, None, None, None] * bpv_k[None, None, :, None]
    kv4 = np.ceil(slot_bytes * per_replica * stage_l[:, None, None, None] / n_layers)
    if state_seq:
        kv4 = kv4 + np.ceil(state_seq * per_replica * stage_l[:, None, None, None]
                            / (lay.tp[:, None, None, None] * n_layers))
    weights4 = weights_lw[:, :, None, None]
    other4 = (act_l + non_torch_l)[:, None, None, None]
    total4 = weights4 + kv4 + other4
    fits4 = total4 <= budget_l[:, None, None, None]
    if progress:
        progress(total // 2, total)

    # ---- speed (speed.serving.decode_step in array form, steady state: B decodes + B*I/O prefill tokens)
    cal = calibrated(spec.efficiencies)
    stacks = [cal.stack(sh.gpu) for sh in shapes]
    mbu_l = np.array([k.decode_mbu for k in stacks])[lay.shape][:, None, None, None]
    # per (shape, format): the serving efficiency scaled for FP8/FP4 products, as speed.serving does
    mm_eff_sw = np.array([[k.serve_matmul_efficiency * cal.low_precision_ratio(sh.gpu, peak_for(sh.gpu, p).precision)
                           for p in precisions] for sh, k in zip(shapes, stacks, strict=True)])
    half_l = np.array([k.serve_matmul_half_width for k in stacks])[lay.shape]
    width_l = model.hidden_size / lay.tp
    mm_eff_l = (mm_eff_sw[lay.shape] * (width_l / (width_l + half_l))[:, None])[:, :, None, None]
    att_eff_l = np.array([k.attention_efficiency for k in stacks])[lay.shape][:, None, None, None]
    # fixed cost per pipeline tick: the step's, and the launches of the stage's layers (speed.serving)
    fixed_l = (np.array([k.per_step_s for k in stacks])[lay.shape]
               + model.num_layers / lay.pp * np.array([k.per_layer_step_s for k in stacks])[lay.shape]
               * launch_ratio(model, cal.launches))
    bf16_l = np.array([peak_for(sh.gpu, "bf16").flops_per_s for sh in shapes])[lay.shape][:, None, None, None]
    kv_read = (read_slots * values_l)[:, None, None, None] * bpv_k[None, None, :, None] * stage_l[:, None, None, None] / n_layers
    if state_seq:
        kv_read = kv_read + np.ceil(state_seq * 1 * stage_l[:, None, None, None] / (lay.tp[:, None, None, None] * n_layers))
    out_tokens = spec.output_tokens if spec.output_tokens else 256
    batch = per_replica.astype(np.float64)
    bw_mem = np.array([sh.gpu.memory_bandwidth_bytes_per_s for sh in shapes])[lay.shape][:, None, None, None]
    peak4 = peak_sw[lay.shape][:, :, None, None]
    tp4 = lay.tp[:, None, None, None]
    pp4 = lay.pp[:, None, None, None]
    split = (tp4 * pp4).astype(np.float64)
    p_matmul = 2.0 * forward_matmul_params(model)
    knee_l = np.array([k.roofline_exponent for k in stacks])[lay.shape][:, None, None, None]
    inv_knee_l = 1.0 / knee_l
    attn_dec = attention_flops_per_token(model, 2 * cached, causal=True)
    attn_pre = attention_flops_per_token(model, prompt, causal=True)
    bw_l, lat_l = _links(shapes, lay)
    ew_l = np.array([k.elementwise_bytes_per_hidden / 3.0 for k in stacks])[lay.shape][:, None, None, None]
    per_token_ew = model.num_layers / pp4 * ew_l * model.hidden_size / tp4 / bw_mem
    routed = routed_share_per_gpu(model, tp=1, ep=1)  # every layout the sweep tries splits experts with TP
    # a MoE's routed-expert products slow down with few tokens per expert (speed.serving.expert_rows_factor)
    expert_share, route_share = moe_product_shares(model)
    half_tokens_l = np.array([k.moe_expert_half_tokens for k in stacks])[lay.shape][:, None, None, None]

    pp_bw_l, pp_lat_l = _links(shapes, lay, lay.tp * lay.pp, network=False)
    pp_bw4, pp_lat4 = pp_bw_l[:, None, None, None], pp_lat_l[:, None, None, None]

    def tick_of(decode: npt.NDArray[Any], prefill: npt.NDArray[Any] | float) -> npt.NDArray[Any]:
        """speed.serving._tick over the grid: one micro-batch of ``decode`` sequences and ``prefill`` prompt tokens
        through one pipeline stage."""
        tokens = decode + prefill
        weights_read = weights4
        frac: npt.NDArray[Any] | float = 1.0
        if model.moe is not None and model.params_total:
            frac = 1.0 - (1.0 - model.moe.experts_per_token / model.moe.num_experts) ** np.maximum(tokens, 1.0)
            weights_read = weights4 * (1 - routed + routed * frac)
        memory_s = weights_read / (bw_mem * mbu_l)
        compute_s = tokens * p_matmul / split / (peak4 * mm_eff_l)
        if expert_share:  # the rows of each expert the step touches
            rows = tokens * route_share / frac
            compute_s = compute_s * np.where(rows > 0, 1.0 + expert_share * half_tokens_l / np.where(
                rows > 0, np.maximum(rows, cal.moe_tile_rows), 1.0), 1.0)  # at least one tile's rows
        big = np.maximum(memory_s, compute_s)
        small = np.minimum(memory_s, compute_s)
        safe = np.where(big > 0, big, 1.0)
        # soft_roofline: the larger part over itself is exactly 1, so (m/big)^p + (c/big)^p = 1 + (small/big)^p
        weights_s = np.where(small > 0, big * (1.0 + (small / safe) ** knee_l) ** inv_knee_l, big)
        attention_s = np.maximum(decode * kv_read / (bw_mem * mbu_l),
                                 (decode * attn_dec + prefill * attn_pre) / split / (bf16_l * att_eff_l))
        message = tokens * model.hidden_size * ACTIVATION_BYTES
        comm = 2 * model.num_layers / pp4 * _allreduce_array(message, tp4, bw_l[:, None, None, None],
                                                             lat_l[:, None, None, None], cal)
        p2p = np.where((pp4 > 1) & (message > 0), pp_lat4 + message / (pp_bw4 * cal.link_efficiency), 0.0)
        return np.asarray(fixed_l[:, None, None, None] + weights_s + attention_s + tokens * per_token_ew + comm + p2p)

    def step_of(decode: npt.NDArray[Any], prefill: npt.NDArray[Any] | float, one_chunk: bool = False,
                first_token: bool = False) -> npt.NDArray[Any]:
        """speed.serving._step over the grid: up to ``pp`` micro-batches, one per stage each tick; a cycle is the
        larger of a stage's work on all of them and one micro-batch's way through every stage. ``one_chunk``: the
        prompt tokens are one prompt's chunk, in one micro-batch."""
        groups = np.where(pp4 > 1, np.minimum(pp4, np.maximum(1.0, decode)), 1.0)
        each = decode / groups
        if not one_chunk:
            return np.asarray(pp4 * tick_of(each, prefill / groups))
        heavy, light = tick_of(each, prefill), tick_of(each, 0.0)
        through = pp4 * heavy if first_token else pp4 * light + (heavy - light)
        staged = np.maximum((groups - 1.0) * light + heavy, through)
        return np.asarray(np.where(pp4 > 1, staged, heavy))

    # steady state (speed.serving._steady): B*I/O prompt tokens a step, spread over every step when they fill a
    # chunk, else whole chunks (up to the step's token budget) in that share of the steps
    budget_tokens = np.array([engine_limits(w, large_gpu=sh.gpu.memory_bytes >= 70 * GIB)[0]
                              for sh in shapes])[lay.shape][:, None, None, None]
    prefill_avg = batch * prompt / out_tokens
    chunk = np.maximum(1.0, np.minimum(float(prompt), budget_tokens - np.floor(batch)))
    share = prefill_avg / chunk
    spread = step_of(batch, prefill_avg)
    mixed = share * step_of(batch, chunk, one_chunk=True) + (1.0 - share) * step_of(batch, 0.0)
    step = np.where(share >= 1.0, spread, mixed)
    per_user = 1.0 / step
    total_tps = conc / step
    # time to first token: the prompt's chunks, each sharing a step with the other running sequences
    others = (batch - 1.0)
    room = np.maximum(1.0, budget_tokens - others)
    first_chunk = np.minimum(float(prompt), room)
    chunks = np.ceil(prompt / room)
    ttft = chunks * step_of(others, first_chunk, one_chunk=True, first_token=True)
    nan4 = np.full(shape4, np.nan)
    columns = {
        "weights_bytes": weights4, "kv_cache_bytes": kv4, "activations_bytes": act_l[:, None, None, None],
        "other_bytes": non_torch_l[:, None, None, None], "per_gpu_total_bytes": total4,
        "budget_bytes": budget_l[:, None, None, None], "fits": fits4, "concurrency": conc, "prefill_s": ttft,
        "decode_tokens_per_s_per_user": per_user, "decode_tokens_per_s_total": total_tps,
        "train_tokens_per_s": nan4, "train_time_s": nan4,
    }
    return {name: np.broadcast_to(values, shape4) for name, values in columns.items()}


# -------------------------------------------------------------------------------------- training


def _training(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: _Layouts,
              weights: tuple[str, ...], progress: Progress | None) -> dict[str, npt.NDArray[Any]]:
    """Training memory from :func:`plan` once per distinct layout and GPU group (vendor, low-precision units), with the least activation
    recompute that fits (none, selective, full) unless the workload names one; speed per layout from
    :func:`anchorgpu.planner.speed.training.training_step`."""
    w = replace(spec.workload, micro_batch=spec.workload.micro_batch or 1)
    n_l, n_w = len(lay), len(weights)
    ladder: tuple[Recompute, ...] = (w.recompute,) if w.recompute else ("none", "selective", "full")
    # a layout's training memory depends on the GPU only through its vendor (the CUDA or ROCm context) and
    # whether it computes in the training precision (plan() refuses FP8/FP4 training without the units): planned
    # once per such group and recompute level, the fit then read against each GPU's memory as plan() reads it
    mem_cache: dict[tuple[str, int, int, int, int, str, bool, str], tuple[int, int, int, int, str]] = {}
    weights_lw = np.empty((n_l, n_w))
    act_lw = np.empty((n_l, n_w))
    total_lw = np.empty((n_l, n_w))
    state_lw = np.empty((n_l, n_w))
    recompute_lw = np.empty((n_l, n_w), dtype=object)
    rows = zip(lay.gpus.tolist(), lay.tp.tolist(), lay.pp.tolist(), lay.dp.tolist(), lay.zero.tolist(),
               lay.shape.tolist(), strict=True)
    by_recompute = {rc: replace(w, recompute=rc) for rc in ladder}  # built once, not per layout
    by_weights = {name: PrecisionPlan(weights=name) for name in weights}
    for i, (gpus, tp, pp, dp, zero, s) in enumerate(rows):
        for j, name in enumerate(weights):
            gpu = shapes[s].gpu
            group = (name, tp, pp, dp, zero, gpu.vendor, gpu.computes_in(w.train_precision))
            for rc in ladder:  # the least recompute that fits this GPU, as plan(...).fits says
                key = (*group, rc)
                if key not in mem_cache:
                    p = plan(model, by_recompute[rc], precision=by_weights[name], gpu=gpu, suggest=False,
                             choose_layout=False, layout=Layout(gpus=gpus, tp=tp, pp=pp, dp=dp, zero=zero),
                             overheads=spec.overheads)
                    b = p.per_gpu
                    mem_cache[key] = (b.weights_bytes, b.activations_bytes, b.gradients_bytes + b.optimizer_bytes,
                                      b.total_bytes, p.workload.recompute or "none")
                if gpu.memory_bytes - mem_cache[key][3] >= 0:
                    break
            wb, ab, sb, tb, rc_used = mem_cache[key]
            weights_lw[i, j], act_lw[i, j], state_lw[i, j], total_lw[i, j] = wb, ab, sb, tb
            recompute_lw[i, j] = rc_used
        if progress and i % 64 == 0:
            progress(i * n_w, n_l * n_w)
    budget_l = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)[lay.shape]
    fits = total_lw <= budget_l[:, None]
    seq = default_seq_tokens(w, model.max_context_tokens)
    kind: TrainKind = "full" if w.task == "train" else "lora"
    precision = compute_precision_for_training(w.train_precision)
    speed_cache: dict[tuple[int, int, int, int, int, str], float] = {}
    tps = np.empty((n_l, n_w))
    micro = w.micro_batch or 1
    for i in range(n_l):
        s_i, gpus, tp, pp, zero = (int(lay.shape[i]), int(lay.gpus[i]), int(lay.tp[i]), int(lay.pp[i]),
                                   int(lay.zero[i]))
        dp = gpus // (tp * pp)
        for j in range(n_w):
            rc_ij: Recompute = recompute_lw[i, j]
            speed_key = (s_i, gpus, tp, pp, zero, str(rc_ij))
            if speed_key not in speed_cache:
                shape = shapes[s_i]
                batch = max(spec.global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS, dp * micro * seq)
                speed_cache[speed_key] = training_step(
                    model, shape.gpu, TrainLayout(gpus=gpus, tp=tp, pp=pp, dp=dp, zero=zero), seq_tokens=seq,
                    micro_batch=micro, global_batch_tokens=batch, recompute=rc_ij,
                    kind=kind, precision=precision, gpus_per_server=shape.gpus_per_server,
                    network_bytes_per_s=shape.network_bytes_per_s).tokens_per_s
            tps[i, j] = speed_cache[speed_key]
    shape2 = (n_l, n_w)
    time_s = spec.train_tokens / tps if spec.train_tokens else np.full(shape2, np.nan)
    nan2 = np.full(shape2, np.nan)
    return {
        "weights_bytes": weights_lw, "kv_cache_bytes": np.zeros(shape2), "activations_bytes": act_lw,
        "other_bytes": total_lw - weights_lw - act_lw, "per_gpu_total_bytes": total_lw,
        "budget_bytes": np.broadcast_to(budget_l[:, None], shape2), "fits": fits,
        "concurrency": np.broadcast_to(np.full(n_l, micro)[:, None], shape2),
        "prefill_s": nan2, "decode_tokens_per_s_per_user": nan2, "decode_tokens_per_s_total": nan2,
        "train_tokens_per_s": tps, "train_time_s": time_s,
    }


# ------------------------------------------------------------------------------------------ entry


def sweep(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec | None = None, *,
          progress: Progress | None = None) -> SweepResult:
    """Evaluate every configuration of ``spec`` on ``shapes``; see the module docstring for the grid.

    The workload is validated once through :func:`anchorgpu.planner.plan` (same one-line errors, same
    defaults); its assumptions and warnings that hold for every configuration are returned.
    ``progress(done, total)`` is called a few times for long sweeps.
    """
    spec = spec or SweepSpec()
    w = spec.workload
    if not shapes:
        raise InvalidWorkload("nothing to sweep: no hardware shapes given")
    if w.task not in ("inference", "train", "lora", "qlora"):
        raise InvalidWorkload(f"the sweep covers inference and training tasks, not {w.task!r}")
    training = w.task != "inference"
    if training:
        shipped_fmt = shipped_format(model)  # QLoRA over a checkpoint that ships bitsandbytes 4-bit keeps it (as plan())
        bnb_4bit = shipped_fmt.storage is not None and shipped_fmt.storage.flat_block > 0
        weights = spec.weights or ((shipped_fmt.name if bnb_4bit else "nf4-dq",) if w.task == "qlora" else ("bf16",))
        kvs: tuple[str, ...] = ("bf16",)
        concs: tuple[int, ...] = (w.micro_batch or 1,)
    else:
        shipped = shipped_format(model).name  # the checkpoint's own format first, then the usual three
        weights = spec.weights or tuple(dict.fromkeys((shipped, *DEFAULT_INFERENCE_WEIGHTS)))
        kvs = spec.kv_caches or DEFAULT_KV_CACHES
        concs = spec.concurrencies or ((w.concurrency,) if w.concurrency is not None else BATCH_LADDER)
        if min(concs) < 1:
            raise InvalidWorkload(f"concurrency={min(concs)}: at least one sequence")
    for name in weights:
        format_for_model(model, name)  # unknown format: one-line error
    for k in kvs:
        if k not in KV_CACHE_DTYPES:
            raise InvalidWorkload(f"unknown kv-cache dtype {k!r}; valid: {', '.join(KV_CACHE_DTYPES)}")
    # a request's prompt given without a context: each sequence is sized at prompt + output, as plan() sizes it
    by_request = not training and w.context_tokens is None and spec.prompt_tokens is not None
    probe_w = replace(w, concurrency=concs[0] if w.concurrency is None else w.concurrency)
    if by_request:
        probe_w = replace(probe_w, prompt_tokens=spec.prompt_tokens, output_tokens=spec.output_tokens)
    # validate once with the scalar planner (context limit, task rules, formats allowed for the task)
    probe = plan(model, probe_w, precision=PrecisionPlan(weights=weights[0], kv_cache=kvs[0]),
                 layout=Layout(gpus=1, tp=1, pp=1, dp=1), suggest=False, choose_layout=False)
    ctx = probe.workload.context_tokens or model.max_context_tokens
    output = spec.output_tokens if by_request else min(spec.output_tokens, max(1, ctx // 2))
    # the request shape plan() estimates with when none is given: a 1,024-token prompt within the context
    prompt = spec.prompt_tokens if spec.prompt_tokens is not None else max(1, min(DEFAULT_PROMPT_TOKENS, ctx - output))
    if not training and prompt + output > ctx:
        raise InvalidWorkload(f"prompt {prompt} + output {output} tokens exceed the {ctx}-token context")
    lay = _layouts(model, shapes, training=training, max_pp=spec.max_pp, zero_stages=spec.zero_stages)
    if training:
        cols = _training(model, shapes, spec, lay, weights, progress)
        inner = len(weights)
    else:
        cols = _inference(model, shapes, spec, lay, weights, kvs, concs, ctx, prompt, progress)
        inner = len(weights) * len(kvs) * len(concs)
    n = len(lay) * inner
    flat: dict[str, npt.NDArray[Any]] = {}
    for name, values in (("shape", lay.shape), ("servers", lay.servers), ("gpus", lay.gpus), ("tp", lay.tp),
                         ("pp", lay.pp), ("dp", lay.dp), ("zero", lay.zero)):
        flat[name] = np.repeat(values, inner)
    grid_w = np.arange(len(weights), dtype=np.int64)
    if training:
        flat["weights"] = np.tile(grid_w, len(lay))
        flat["kv_cache"] = np.zeros(n, dtype=np.int64)
    else:
        per_w = len(kvs) * len(concs)
        flat["weights"] = np.tile(np.repeat(grid_w, per_w), len(lay))
        flat["kv_cache"] = np.tile(np.repeat(np.arange(len(kvs), dtype=np.int64), len(concs)), len(lay) * len(weights))
    for name, values in cols.items():
        flat[name] = np.ascontiguousarray(values).reshape(n)
    if progress:
        progress(n, n)
    assumptions = [a for a in probe.assumptions if not a.startswith("Layout not given")]
    assumptions.append(
        f"Swept {len(shapes)} hardware shape(s) x whole servers x TP/PP/DP"
        + ("/ZeRO" if training else "") + f" layouts x weights {','.join(weights)}"
        + ("" if training else f" x KV cache {','.join(kvs)} x concurrency {','.join(map(str, concs))}") + ".")
    if model.moe is not None:
        assumptions.append("Expert parallelism is not swept: experts are split with TP (EP 1).")
    if not training:
        assumptions.append(
            f"Decode speed at {prompt + output // 2} cached tokens per sequence (prompt {prompt} + half of "
            f"{output} output tokens); prefill of one {prompt}-token prompt.")
    warnings = tuple((x.code, x.message) for x in probe.warnings
                     if x.code in ("quantization_quality_unchecked", "context_beyond_model_limit",
                                   "checkpoint_restore_unverified"))
    return SweepResult(
        task=w.task, evaluated=n, shapes=tuple(shapes), weights=tuple(weights), kv_caches=kvs,
        context_tokens=ctx, prompt_tokens=prompt, output_tokens=output, columns=flat,
        assumptions=tuple(assumptions), warnings=warnings,
    )
