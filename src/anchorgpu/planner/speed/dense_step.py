"""The serving step of a dense model on one pipeline stage, the case a plan asks most: :func:`~anchorgpu.planner.speed.
serving._tick` and :func:`~anchorgpu.planner.speed.serving._step`'s single-stage tail in one call, without the
mixture of experts' terms, the same operations in the same order (``benchmarks/equivalence.py`` checks every value
to the last bit). Pure; :mod:`.batching`'s steady state and first token call it."""

from __future__ import annotations

from anchorgpu.planner.speed.links import ACTIVATION_BYTES
from anchorgpu.planner.speed.serving import _INF, soft_roofline
from anchorgpu.planner.speed.step_constants import ServingSetup, _StepConstants

__all__ = ["_dense_step"]


def _dense_step(setup: ServingSetup, c: _StepConstants, batch: float, prefill_tokens: float, decode_attn_flops: float,
                prefill_attn_flops: float, padded_batch: float, ceiling: _StepConstants,
                head_skip: float, bound_read: bool = True) -> tuple[float, str, float]:
    """:func:`_step`'s (time, bound, ceiling's time) for a dense model on one pipeline stage, the case a plan asks
    most: :func:`_tick` without the mixture of experts' terms (no routed experts, no expert-parallel group, no
    stage-to-stage link) and :func:`_step`'s single-stage tail, in one call. The same operations in the same order
    as those two, so every value is the same to the last bit (``benchmarks/equivalence.py`` checks it; a whole count
    takes part in them as the float it is equal to, as :func:`_step`'s ``x / 1.0`` makes it). ``head_skip`` by
    position: the hot callers pass no keyword. ``bound_read`` False: the caller reads no bound (a saturation's or a
    first token's step), so the fixed/memory/compute one is not formed and ``""`` stands in its place ("host" is
    still said where the host sets the pace)."""
    tokens = (batch if batch >= padded_batch else padded_batch) + prefill_tokens
    weights = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu
    split = c.split
    matmul_flops = tokens * 2.0 * c.matmul_params / split
    kv_bytes = batch * setup.kv_bytes_per_sequence_per_gpu
    attn_flops = batch * decode_attn_flops
    if prefill_tokens and prefill_attn_flops:
        attn_flops += prefill_tokens * prefill_attn_flops
    attn_flops_per_gpu = attn_flops / split
    matmul_s = matmul_flops / c.matmul_rate
    skipped = prefill_tokens * head_skip
    if skipped:
        matmul_s -= skipped * 2.0 * c.head_params / split / c.head_rate
    # _tick's read: a step holding a prompt chunk reads its decodes' caches c.mixed_kv_factor times past the L2
    weights_read_s = weights / c.mem_rate
    kv_s = (kv_bytes * c.mixed_kv_factor if kv_bytes > c.mixed_kv_l2_bytes and prefill_tokens else kv_bytes) / c.kv_rate
    attn_compute_s = attn_flops_per_gpu / c.attention_rate  # _work's terms, inline
    p = c.knee  # soft_roofline's two finite branches, inline (the same operations); the rest through it
    if 0.0 < matmul_s <= weights_read_s < _INF:
        roof = weights_read_s * (1.0 + (matmul_s / weights_read_s) ** p) ** (1.0 / p)
    elif 0.0 < weights_read_s < matmul_s < _INF:
        roof = matmul_s * ((weights_read_s / matmul_s) ** p + 1.0) ** (1.0 / p)
    else:
        roof = soft_roofline(weights_read_s, matmul_s, p)
    apart = c.prompt_attention_apart and bool(prefill_tokens) and bool(prefill_attn_flops)
    if apart:  # _work's sum, inline, from the same terms
        decode_s = batch * decode_attn_flops / split / c.attention_rate
        attention_s = ((kv_s if kv_s >= decode_s else decode_s)
                       + prefill_tokens * prefill_attn_flops / split / c.prompt_attention_rate)
    else:
        attention_s = kv_s if kv_s >= attn_compute_s else attn_compute_s
    work = roof + attention_s + tokens * c.elementwise_s_per_token
    k = ceiling
    kv_top, attn_top = kv_bytes / k.mem_rate, attn_flops_per_gpu / k.attention_rate
    read_top, product_top = weights / k.mem_rate, matmul_flops / k.matmul_rate
    if skipped:
        product_top -= skipped * 2.0 * k.head_params / split / k.head_rate
    p = k.knee
    if 0.0 < product_top <= read_top < _INF:  # soft_roofline's, as above
        top = read_top * (1.0 + (product_top / read_top) ** p) ** (1.0 / p)
    elif 0.0 < read_top < product_top < _INF:
        top = product_top * ((read_top / product_top) ** p + 1.0) ** (1.0 / p)
    else:
        top = soft_roofline(read_top, product_top, p)
    if apart:  # _tick's ceiling, inline
        attn_top = batch * decode_attn_flops / split / k.attention_rate
        top += prefill_tokens * prefill_attn_flops / split / k.prompt_attention_rate
    top += kv_top if kv_top >= attn_top else attn_top
    comm = 0.0
    message = tokens * c.hidden_size * ACTIVATION_BYTES
    if message > 0:
        if c.link is not None:
            comm = c.allreduce_per_stage * (c.allreduce_latency_s + c.allreduce_share * message / c.allreduce_rate)
        if k.link is not None:
            top += k.allreduce_per_stage * (k.allreduce_share * message / k.allreduce_rate)
    fixed = c.fixed_s
    step = fixed + work + comm
    bound = ("" if not bound_read else "fixed" if fixed > step - fixed - comm
             else ("memory" if weights_read_s + kv_s >= matmul_s + attn_compute_s else "compute"))
    host = c.host_s_per_sequence * batch
    if not setup.host_overlap:
        return step + host, bound, top
    if host > step:
        return host, "host", top
    return step, bound, top
