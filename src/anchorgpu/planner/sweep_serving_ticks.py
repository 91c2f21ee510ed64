"""The serving sweep's pipeline tick and step over the grid (:mod:`anchorgpu.planner.sweep_serving`):
:mod:`anchorgpu.planner.speed.serving`'s ``_tick`` and ``_step`` in array form, every per-layout constant looked up
once. The terms live on the axes they depend on (per layout ``(L,)``, per concurrency and layout ``(C, L)``, or per
pair ``(1, P)``; per KV dtype ``(K, 1, L)``; per weight format ``(W, 1, 1, L)``) and numpy broadcasts the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed.attention_rate import (
    attention_rate_ratio,
    prompt_extra_pairs_factor,
    timed_prefill_attention_flops_per_token,
    trtllm_context_attention,
)
from anchorgpu.planner.speed.constants import StackConstants
from anchorgpu.planner.speed.flops import (
    decode_attention_flops_per_token,
    forward_matmul_params,
    lm_head_params,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.launches import fuses_norms_into_allreduce, is_block_fp8, launch_ratio
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, host_kind, peak_for, weights_precision_on
from anchorgpu.planner.speed.mixed_attention import mixed_step_kv_read_factor, mixed_step_l2_kv_bytes
from anchorgpu.planner.speed.moe_backend import (
    VLLM_MARLIN,
    expert_half_tokens,
    marlin_expert_rate,
    trtllm_moe_backend,
    vllm_moe_backend,
)
from anchorgpu.planner.speed.overrides import calibrated
from anchorgpu.planner.speed.product_shares import head_quantized_share, quantized_product_shares
from anchorgpu.planner.speed.serving import moe_product_shares, routed_weight_bytes_share_per_gpu
from anchorgpu.planner.speed.step_constants import allreduce_latency_s, prompt_attention_apart, trtllm_kv_read_applies
from anchorgpu.planner.sweep_grid import Layouts
from anchorgpu.planner.sweep_serving_lookups import distinct_gpus, links, mixed_rates
from anchorgpu.planner.sweep_serving_lookups import peaks as peaks_of
from anchorgpu.planner.sweep_serving_memory import KvFactors, per_format, streamed_weights
from anchorgpu.planner.sweep_sglang import absorbed_dequant_terms, graph_max_batch, padded_rows

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape, SweepSpec

__all__ = ["Ticks"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _soft_roofline(big: FloatArray, small: FloatArray, knee: FloatArray, inv_knee: FloatArray) -> FloatArray:
    """``speed.serving.soft_roofline`` over arrays, written over ``small``: ``big * (1 + (small / big) ** knee) **
    (1 / knee)``, ``big`` where ``small`` is not positive (``big`` counted as 1 where it is 0). The masks are
    skipped when every ``small`` is positive (then so is every ``big``), the usual case."""
    positive = small > 0
    every = bool(positive.all())
    out = np.divide(small, big if every else np.where(big > 0, big, 1.0), out=small)
    np.power(out, knee, out=out)
    out += 1.0
    np.power(out, inv_knee, out=out)
    out *= big
    if not every:
        np.copyto(out, big, where=~positive)
    return out


class Ticks:
    """speed.serving's pipeline tick and step over the grid, with every per-layout constant looked up once."""

    def __init__(self, model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                 weights: tuple[str, ...], kv: KvFactors, weights_wl: FloatArray, prompt: int, output: int) -> None:
        cal = calibrated(spec.efficiencies)
        # each GPU's figures looked up once (shapes share GPUs), then per layout by its shape's GPU (``s``)
        gpus, s = distinct_gpus(shapes, lay)
        stacks = [cal.stack(gpu) for gpu in gpus]

        def per_layout(field: Callable[[StackConstants], float]) -> FloatArray:
            return np.array([field(k) for k in stacks])[s]

        # per (GPU, format): an FP4 format the GPU's FP4 units do not take runs at BF16's rate (speed.peaks)
        precisions_gw = [[weights_precision_on(gpu, name) for name in weights] for gpu in gpus]
        self.model = model
        self.weights = weights_wl = streamed_weights(model, lay, weights, weights_wl)  # less the untied embedding
        self.bw_mem = np.array([gpu.memory_bandwidth_bytes_per_s for gpu in gpus])[s]
        self.bw_mbu = self.bw_mem * per_layout(lambda k: k.decode_mbu)  # the bandwidth a decode step reaches
        self.memory_s = weights_wl / self.bw_mbu  # reading the weights (a MoE: the experts a step touches, per tick)
        # per (shape, format): the serving efficiency scaled for FP8/FP4 products, as speed.serving does
        # (FP8 in blocks keeps the fitted rate on every GPU: Calibration.serve_gemm_ratio)
        blocks = [is_block_fp8(format_for_model(model, name).name) for name in weights]
        mm_eff_gw = np.array([[cal.serve_precision_efficiency(gpu, peak_for(gpu, p).precision, block_fp8=b)
                               for p, b in zip(row, blocks, strict=True)] for gpu, row in zip(gpus, precisions_gw,
                                                                                                strict=True)])
        width_l = model.hidden_size / lay.tp
        half_l = per_layout(lambda k: k.serve_matmul_half_width)
        width_share = width_l / (width_l + half_l)
        scaled_eff = mm_eff_gw[s] * width_share[:, None]
        peaks = peaks_of(gpus, precisions_gw)[s]
        # a format that keeps some layers 16-bit runs their products at BF16's rate (speed.product_shares)
        shares = [quantized_product_shares(model, format_for_model(model, name)) for name in weights]
        heads = np.array([head_quantized_share(model, format_for_model(model, name)) for name in weights])
        self.expert_ratio: FloatArray | float = 1.0
        if not any(q < 1.0 or e < 1.0 for q, e in shares):
            self.peak_eff = per_format(peaks) * per_format(scaled_eff)  # the products' achieved peak
            self.head_peak_eff = self.peak_eff  # every product, the LM head's too, at one precision
        else:
            eff16 = np.array([cal.serve_precision_efficiency(gpu, "bf16") for gpu in gpus])[s]
            b16 = (np.array([peak_for(gpu, "bf16").flops_per_s for gpu in gpus])[s] * eff16 * width_share)[:, None]
            low = peaks * scaled_eff
            mixed = mixed_rates(low, b16, np.array([q for q, _ in shares]))
            self.peak_eff = per_format(mixed)
            # the routed experts' products' rate over the whole products' (1.0 where they share one precision)
            self.expert_ratio = per_format(mixed / mixed_rates(low, b16, np.array([e for _, e in shares])))
            self.head_peak_eff = per_format(mixed_rates(low, b16, heads))  # the LM head's rate (16-bit: BF16's)
        # fixed cost per pipeline tick: the step's, and the launches of the stage's layers (speed.serving)
        # (a checkpoint FP8 in blocks launches a quantisation before each product: per format)
        block_fp8 = [is_block_fp8(format_for_model(model, name).name) for name in weights]
        ratio_w = np.array([launch_ratio(model, cal.launches, block_fp8=b) for b in block_fp8])
        trtllm = spec.workload.engine == "trtllm"
        # the prompt chunk's attention as a kernel after the decodes' (speed.step_constants.prompt_attention_apart)
        self.prompt_apart = prompt_attention_apart(spec.workload.engine)
        if fuses_norms_into_allreduce(model, spec.workload.engine, 2):  # TP > 1: norms inside the all-reduces
            fused_w = np.array([launch_ratio(model, cal.launches, block_fp8=b, norms_in_allreduce=True)
                                for b in block_fp8])
            ratio_lw = np.where((lay.tp > 1)[:, None], fused_w[None, :], ratio_w[None, :])
        else:
            ratio_lw = np.broadcast_to(ratio_w[None, :], (lay.tp.size, ratio_w.size))
        per_layer = model.num_layers / lay.pp * np.array([cal.per_layer_step_s(gpu) for gpu in gpus])[s]
        sglang = spec.workload.engine == "sglang"
        # SGLang on AMD GPUs dequantises an FP8 MLA model's absorbed weights every step: more launches, and bytes
        dequant = absorbed_dequant_terms(model, shapes, lay, weights, cal.launches, block_fp8,
                                         per_layout(lambda k: k.decode_mbu) * self.bw_mem) if sglang else None
        self.fixed = per_layout(lambda k: k.per_step_s) + per_format(
            per_layer[:, None] * ratio_lw if dequant is None else per_layer[:, None] * dequant[0] + dequant[1])
        # SGLang's decode-only steps run the captured CUDA graph that holds the batch (None: no padding)
        self.graph_max_bs = graph_max_batch(shapes, lay) if sglang else None
        bf16 = np.array([peak_for(gpu, "bf16").flops_per_s for gpu in gpus])[s]
        # fused attention's rate scaled by head size (speed.attention_rate), as speed.serving does
        head_ratio = np.array([attention_rate_ratio(model, gpu, cal) for gpu in gpus])[s]
        self.attention_rate = bf16 * per_layout(lambda k: k.attention_efficiency) * head_ratio
        kv_read = kv.read_bytes * kv.stage_layers / kv.n_layers
        if kv.state_per_sequence:
            kv_read = kv_read + np.ceil(kv.state_per_sequence * 1 * kv.stage_layers / (lay.tp * kv.n_layers))
        if kv.cross_read is not None:  # an encoder's output or the images, read through cross-attention every step
            kv_read = kv_read + kv.cross_read
        self.kv_read = kv_read
        # the rate the KV cache is read: decode_mbu's, or a MoE's FP8 cache on TensorRT-LLM at its decode attention's
        # measured share of the bandwidth (speed.step_constants.trtllm_kv_read_fraction), per KV dtype ``(K, 1, L)``
        self.kv_rate: FloatArray = self.bw_mbu
        if trtllm_kv_read_applies(model, spec.workload.engine) and len(kv.kv_caches) == kv.read_bytes.shape[0]:
            share = np.array([cal.trtllm_decode_attention_kv_fraction.get(gpu.name, 0.0) for gpu in gpus])[s]
            fp8 = np.array([name == "fp8" for name in kv.kv_caches])[:, None, None]
            if np.any(share > 0) and np.any(fp8):
                self.kv_rate = np.where(fp8 & (share > 0), self.bw_mem * share, self.bw_mbu)
        # a tick holding a prompt chunk reads its decodes' caches this many times where they outgrow the L2, per
        # layout ``(L,)``, or per KV dtype ``(K, 1, L)`` where one is FP8 (vLLM's FlashAttention 2 on SM 8.x:
        # speed.mixed_attention, as speed.step_constants' mixed_kv_factor and mixed_kv_l2_bytes); None where every
        # layout reads them once
        factor_gt = {(g, t): mixed_step_kv_read_factor(model, gpus[g], engine=spec.workload.engine, tp=t)
                     for g, t in set(zip(s.tolist(), lay.tp.tolist(), strict=True))}
        self.mixed_read: FloatArray | None = None
        if any(f != 1.0 for f in factor_gt.values()):
            pairs = list(zip(s.tolist(), lay.tp.tolist(), lay.pp.tolist(), strict=True))
            self.mixed_read = np.array([factor_gt[g, t] for g, t, _ in pairs])
            if any(name == "fp8" for name in kv.kv_caches):  # an FP8 cache is not FlashAttention 2's (1.0)
                self.mixed_read = np.where(np.array([name == "fp8" for name in kv.kv_caches])[:, None, None], 1.0,
                                           self.mixed_read)
            self.mixed_l2 = np.array([mixed_step_l2_kv_bytes(model, gpus[g], tp=t, pp=p) for g, t, p in pairs])
        self.tp, self.pp = lay.tp, lay.pp
        self.split = (lay.tp * lay.pp).astype(np.float64)
        self.p_matmul = 2.0 * forward_matmul_params(model)
        # the LM head runs at the last token of each prompt only (speed.flops.unsampled_prompt_share)
        self.p_head = 2.0 * lm_head_params(model)
        self.head_skip = unsampled_prompt_share(prompt)
        self.knee = per_layout(lambda k: k.roofline_exponent)
        self.inv_knee = 1.0 / self.knee
        cached = prompt + output // 2
        self.attn_dec = decode_attention_flops_per_token(model, cached)
        self.attn_pre = timed_prefill_attention_flops_per_token(model, prompt, cal.window_attention_extra_tokens)
        # the prompt's kernel where it runs apart (TensorRT-LLM): on an FP8 cache at its measured rate, with its extra
        # key pairs a query (speed.attention_rate.trtllm_context_attention), per KV dtype ``(K, 1, L)``; else as fused
        self.prompt_rate: FloatArray = self.attention_rate
        self.attn_pre_apart: FloatArray | float = self.attn_pre
        context = [trtllm_context_attention(gpu, cal, apart=self.prompt_apart, kv_fp8=True) for gpu in gpus]
        fp8_k = np.array([name == "fp8" for name in kv.kv_caches])[:, None, None]
        if any(context) and bool(fp8_k.any()):
            share = np.array([ctx[0] if ctx else 0.0 for ctx in context])[s]
            factor = np.array([prompt_extra_pairs_factor(ctx[1], prompt) if ctx else 1.0 for ctx in context])[s]
            on = fp8_k & (share > 0)
            self.prompt_rate = np.where(on, bf16 * share * head_ratio, self.attention_rate)
            self.attn_pre_apart = np.where(on, self.attn_pre * factor, self.attn_pre)
        # the TP all-reduces of a tick (speed.links.allreduce_s): latency + 2 (n - 1) / n x message / bandwidth
        bw, self.lat = links(shapes, lay, allreduce_latency=(
            (lambda gpu, link: allreduce_latency_s(gpu, link, "trtllm", cal)) if trtllm else None))
        ranks = lay.tp.astype(np.float64)
        self.ring_share = 2.0 * (ranks - 1) / ranks
        self.ring_rate = bw * cal.link_efficiency
        self.comm_layers = 2 * model.num_layers / lay.pp  # two all-reduces per layer of the stage
        ew_l = per_layout(lambda k: k.elementwise_bytes_per_hidden / 3.0)
        self.per_token_ew = model.num_layers / lay.pp * ew_l * model.hidden_size / lay.tp / self.bw_mem
        if model.moe is not None and spec.workload.engine == "trtllm":  # speed.step_constants.trtllm_moe_s_per_token
            row_s = np.array([cal.trtllm_moe_s_per_routed_row.get(gpu.compute_capability or "", 0.0)
                              for gpu in gpus])[s]
            # every GPU runs each routed row on its slice where the experts are split with TP (EP 1), 1 / EP of them
            # where they are whole over the TP group (step_constants.routed_rows_per_token_share)
            share = np.where((lay.ep > 1) & (lay.ep <= lay.tp), 1.0 / lay.ep, 1.0)
            self.per_token_ew = self.per_token_ew + (row_s * model.moe.experts_per_token * model.moe.num_moe_layers
                                                     / lay.pp * share)
        # the routed experts' share of a GPU's weight bytes, per format: alike with the experts split by TP or whole
        # over the TP group
        self.routed: FloatArray | float = 0.0
        if model.moe is not None:
            routed_w = [routed_weight_bytes_share_per_gpu(model, format_for_model(model, name), tp=1, ep=1)
                        for name in weights]
            self.routed = per_format(np.tile(np.array(routed_w), (lay.tp.size, 1)))
        # a MoE's routed-expert products slow down with few tokens per expert (speed.serving.expert_rows_factor)
        self.expert_share, self.route_share = moe_product_shares(model)
        self.half_tokens: FloatArray = per_layout(lambda k: k.moe_expert_half_tokens)
        if trtllm and model.moe is not None:  # TensorRT-LLM's MoE kernel by GPU and format (speed.moe_backend)
            self.half_tokens = per_format(np.array([[expert_half_tokens(
                trtllm_moe_backend(model, gpu, name, spec.workload.moe_backend), gpu, k.moe_expert_half_tokens, cal)
                for name in weights] for gpu, k in zip(gpus, stacks, strict=True)])[s])
        # vLLM's Marlin MoE kernel, where the plan states it or vLLM picks it (speed.moe_backend.vllm_moe_backend):
        # the routed products at its measured rate and falloff in place of the step's (serving._tick's
        # expert_kernel_rate), as expert_rate / that rate
        self.kernel_ratio: FloatArray | None = None
        marlin_gw = [[spec.workload.engine == "vllm" and vllm_moe_backend(model, name, spec.workload.moe_backend, gpu)
                      == VLLM_MARLIN for name in weights] for gpu in gpus]
        if any(map(any, marlin_gw)):
            marlin = per_format(np.array([[marlin_expert_rate(VLLM_MARLIN, gpu, peak_for(gpu, "bf16").flops_per_s, cal)
                                           if on else 0.0 for on in row] for gpu, row in zip(gpus, marlin_gw,
                                                                                             strict=True)])[s])
            self.kernel_ratio = np.where(marlin > 0, self.peak_eff / self.expert_ratio / np.where(
                marlin > 0, marlin, 1.0), 1.0)
            self.half_tokens = per_format(np.array([[expert_half_tokens(
                VLLM_MARLIN if on else "", gpu, k.moe_expert_half_tokens, cal) for on in row]
                for gpu, k, row in zip(gpus, stacks, marlin_gw, strict=True)])[s])
        self.moe_tile_rows = cal.moe_tile_rows
        # the engine's CPU work per running sequence a step, overlapped with the GPU's (speed.serving's host term);
        # TensorRT-LLM works through every running sequence at each of a cycle's pp micro-batches
        # (speed.step_constants.host_passes_per_cycle)
        self.host = np.array([cal.host_s_per_sequence_step[host_kind(gpu)] for gpu in gpus])[s]
        # TensorRT-LLM's ranks before the last wait for each forward, so one pass of that work a cycle adds to the
        # GPUs' (speed.step_constants.host_waited_passes); None where no layout has stages or the engine overlaps it
        self.host_waited: FloatArray | None = None
        self.host_serial: FloatArray | None = None  # prompt steps add it (engine_terms.prompt_step_host_serial)
        if trtllm and model.moe is not None and bool(((lay.tp == 1) & (lay.pp == 1)).any()):
            self.host_serial = self.host * ((lay.tp == 1) & (lay.pp == 1))
        if trtllm:
            staged = lay.pp > 1
            if bool(staged.any()):
                self.host_waited = self.host * staged
            self.host = self.host * lay.pp
        pp_bw, self.pp_lat = links(shapes, lay, lay.tp * lay.pp, network=False)
        self.pp_rate = pp_bw * cal.link_efficiency
        # the terms no tick of this model reads, dropped so that taking the ticks at pairs (expanded, part) skips
        # them: the bandwidth (read above only), a MoE's weights read per tick and its experts' rows
        del self.bw_mem
        if model.moe is None or not model.params_total:
            del self.weights, self.bw_mbu
        if not self.expert_share:
            del self.expert_ratio, self.half_tokens
        if not self.prompt_apart:  # the prompt's attention runs fused with the decodes'
            del self.prompt_rate, self.attn_pre_apart

    def expanded(self, rows: IntArray) -> Ticks:
        """These ticks with every per-layout term (each array, on its last axis) taken at ``rows``: the ticks of
        layouts that share all a tick reads (:func:`~anchorgpu.planner.sweep_grid.tick_pairs`), the same values."""
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray):
                setattr(self, name, value.take(rows, axis=-1))
        return self

    def taken(self, rows: IntArray) -> Ticks:
        """A copy of these ticks :meth:`expanded` at ``rows``, these left as they were (formed without ``copy.copy``'s
        reduction protocol: a round of the limit search forms a few)."""
        out = object.__new__(Ticks)
        out.__dict__ = {name: value.take(rows, axis=-1) if type(value) is np.ndarray else value
                        for name, value in vars(self).items()}
        return out

    def part(self, at: slice) -> Ticks:
        """These ticks of the pairs ``at`` only (views of every per-pair term; these ticks where ``at`` is all)."""
        if at.start == 0 and at.stop == self.knee.shape[-1]:
            return self
        part = object.__new__(Ticks)
        part.__dict__ = {name: value[..., at] if type(value) is np.ndarray else value
                         for name, value in vars(self).items()}
        return part

    def tick(self, decode: FloatArray, prefill: FloatArray | float, rows: FloatArray | None = None) -> FloatArray:
        """speed.serving._tick: one micro-batch of ``decode`` sequences and ``prefill`` prompt tokens (``(C, L)``, or
        ``(1, P)`` over the pairs the terms were taken at) through one pipeline stage, ``(W, K, C, L)`` (or
        ``(W, K, 1, P)``): a new array (the terms on their own axes, summed in place).
        ``rows``: the decode rows the products multiply where a captured graph pads them (default ``decode``)."""
        model = self.model
        tokens = (decode if rows is None else rows) + prefill
        memory_s = self.memory_s
        frac: FloatArray | float = 1.0
        if model.moe is not None and model.params_total:
            frac = 1.0 - (1.0 - model.moe.experts_per_token / model.moe.num_experts) ** np.maximum(tokens, 1.0)
            memory_s = self.weights * (1 - self.routed + self.routed * frac) / self.bw_mbu
        compute_s = tokens * self.p_matmul / self.split / self.peak_eff
        if self.expert_share:  # the rows of each expert the step touches
            rows = tokens * self.route_share / frac
            falloff = self.half_tokens / np.where(rows > 0, np.maximum(rows, self.moe_tile_rows), 1.0)  # a tile's
            if self.kernel_ratio is not None:  # on a kernel of their own rate: (1 + falloff) at it, less the step's
                falloff = self.kernel_ratio * (1.0 + falloff) - 1.0
            compute_s *= np.where(rows > 0, 1.0 + self.expert_share * self.expert_ratio * falloff, 1.0)
        if self.head_skip and np.any(prefill):  # the prompt tokens' products without the LM head's (speed.serving)
            compute_s -= prefill * self.head_skip * self.p_head / self.split / self.head_peak_eff
        big = np.maximum(memory_s, compute_s)
        weights_s = _soft_roofline(big, np.minimum(memory_s, compute_s, out=compute_s), self.knee, self.inv_knee)
        weights_s += self.fixed
        attention_s = decode * self.kv_read
        if self.mixed_read is not None and np.any(prefill):  # reread beside a chunk past the L2 (_tick's): multiplied
            reread = np.greater(attention_s, self.mixed_l2)  # only there, no factor of 1.0 formed for the rest
            if np.ndim(prefill):  # (a scalar one is above 0)
                reread &= np.greater(prefill, 0.0)
            np.multiply(attention_s, self.mixed_read, out=attention_s, where=reread)
        attention_s /= self.kv_rate
        if self.prompt_apart:  # the larger of the KV read and the decodes' arithmetic, then the prompt's
            np.maximum(attention_s, decode * self.attn_dec / self.split / self.attention_rate, out=attention_s)
            attention_s += prefill * self.attn_pre_apart / self.split / self.prompt_rate
        else:
            np.maximum(attention_s, (decode * self.attn_dec + prefill * self.attn_pre) / self.split / self.attention_rate,
                       out=attention_s)
        message = tokens * model.hidden_size * ACTIVATION_BYTES
        sent = message > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            comm = self.comm_layers * np.where((self.tp > 1) & sent, self.lat + self.ring_share * message / self.ring_rate,
                                               0.0)
        comm += np.where((self.pp > 1) & sent, self.pp_lat + message / self.pp_rate, 0.0)
        # the terms that vary only with the concurrency and layout ``(C, L)`` summed first, then onto the KV axis,
        # so the whole grid ``(W, K, C, L)`` is formed by one addition
        comm += tokens * self.per_token_ew
        attention_s += comm
        return np.add(weights_s, attention_s)

    def groups(self, decode: FloatArray) -> FloatArray:
        """Micro-batches a step's ``decode`` sequences are split into: up to ``pp``, one per stage each tick."""
        return np.where(self.pp > 1, np.minimum(self.pp, np.maximum(1.0, decode)), 1.0)

    def hosted(self, step: FloatArray, decode: FloatArray, prefill: FloatArray | float = 0.0) -> FloatArray:
        """``step`` (written over) no shorter than the engine's CPU work for its ``decode`` sequences, and longer by
        the part of it the GPUs wait for (TensorRT-LLM with stages, and its eager prompt steps on one GPU)."""
        if self.host_waited is not None:
            step += decode * self.host_waited
        if self.host_serial is not None and np.any(prefill):
            step += decode * self.host_serial * np.greater(prefill, 0.0)
        np.maximum(step, decode * self.host, out=step)
        return step

    def step(self, decode: FloatArray, prefill: FloatArray | float) -> FloatArray:
        """speed.serving._step with the prompt tokens spread over the micro-batches."""
        groups = self.groups(decode)
        step = self.tick(decode / groups, prefill / groups)
        step *= self.pp
        return self.hosted(step, decode, prefill)

    def decode_only_step(self, decode: FloatArray, light: FloatArray) -> FloatArray:
        """speed.serving._step of ``decode`` sequences and no prompt tokens, from ``light`` (a tick of its
        micro-batches, written over) or, where the engine pads the step to a captured graph (SGLang), the padded tick
        (speed.batching._steady's ``padded``)."""
        if self.graph_max_bs is not None:
            rows = padded_rows(decode, self.graph_max_bs)
            if bool((rows > decode).any()):
                groups = self.groups(decode)
                light = self.tick(decode / groups, 0.0, np.maximum(decode / groups, rows / groups))
        light *= self.pp
        return self.hosted(light, decode)

    def chunk_ticks(self, decode: FloatArray, prefill: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(micro-batches, the tick that carries one prompt's chunk, a tick without it): ``prefill`` is one prompt's
        chunk, in one micro-batch."""
        groups = self.groups(decode)
        each = decode / groups
        return groups, self.tick(each, prefill), self.tick(each, 0.0)

    def chunk_step(self, groups: FloatArray, heavy: FloatArray, light: FloatArray, decode: FloatArray,
                   chunks: FloatArray | float = 1.0) -> FloatArray:
        """speed.serving._step with one prompt's chunk beside ``decode`` sequences (in ``chunks`` of the micro-batches
        a cycle), written over ``heavy``: a cycle is the larger of a stage's work on all the micro-batches and one
        micro-batch's way through every stage (with more than one stage), and no shorter than the engine's CPU work
        for the sequences."""
        through = heavy - light
        through *= chunks
        through += light * self.pp
        staged = (groups - chunks) * light
        staged += chunks * heavy
        np.maximum(staged, through, out=staged)
        np.copyto(heavy, staged, where=self.pp > 1)
        return self.hosted(heavy, decode, 1.0)
