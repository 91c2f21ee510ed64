"""FLOPs per token: forward matrix products, attention, prefill and training. Pure; stdlib only.

Conventions follow the papers whose utilisation figures we compare with (Narayanan et al. 2021,
Korthikanti et al. 2022, PaLM appendix B, the Llama 3 paper's MFU): a multiply-add is 2 FLOPs, the
attention score and value products are counted over the **whole** sequence for training MFU
(``12*L*a*d*s`` per token) and causally (half of that) for prefill, and a backward pass costs twice its
forward pass.
"""

from __future__ import annotations

from typing import Literal

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.memory.op_sac import op_sac_layer

__all__ = [
    "Recompute",
    "TrainKind",
    "attention_dims",
    "attention_flops_per_token",
    "causal_training_flops_per_token",
    "decode_attention_flops_per_token",
    "forward_matmul_params",
    "lm_head_params",
    "prefill_flops",
    "training_flops_per_token",
    "train_kind",
    "unsampled_prompt_share",
]

MOE_FORWARD_AGAIN: tuple[Recompute, ...] = ("moe", "full")
"""The recompute levels that run each MoE block's forward again in the backward pass: its products, its dispatch and
combine all-to-alls and its experts' launches (Megatron-Core checkpoints the whole MoE block)."""
TrainKind = Literal["full", "lora", "qlora"]
"""What a training step trains: every weight (``full``), adapters on a frozen 16-bit base (``lora``), or adapters on a
frozen 4-bit base (``qlora``), whose products are LoRA's and whose weights are dequantized before each pass that uses
them (:mod:`~anchorgpu.planner.speed.dequant`)."""


def train_kind(task: str) -> TrainKind:
    """The step's kind for a training ``task`` (``train``, ``lora`` or ``qlora``).

    >>> train_kind("train"), train_kind("lora"), train_kind("qlora")
    ('full', 'lora', 'qlora')
    """
    return "full" if task == "train" else ("qlora" if task == "qlora" else "lora")


def forward_matmul_params(model: ModelSpec) -> int:
    """Parameters a token multiplies through in one forward pass (MoE: active experts only).

    ``params_active - embeddings - position_embeddings + (V*h if the head is tied)``: embedding lookups
    are gathers, not matrix products; the LM head is a product whether or not it is tied.
    """
    tied_head = lm_head_params(model) if model.params.head == 0 else 0
    return model.params_active - model.params.embeddings - model.params.position_embeddings + tied_head


def lm_head_params(model: ModelSpec) -> int:
    """Parameters of the LM head's ``V x h`` product (tied or not): the share of :func:`forward_matmul_params` a
    serving engine multiplies only at the positions it samples (:func:`unsampled_prompt_share`).

    >>> from anchorgpu.architectures import load_model
    >>> lm_head_params(load_model("llama-3.2-1b"))  # 128,256 x 2,048, tied to the embeddings
    262668288
    """
    return model.vocab_size * model.hidden_size


def unsampled_prompt_share(prompt_tokens: float) -> float:
    """Share of a prompt's tokens whose hidden state never reaches the LM head when it is served: ``1 - 1/I``.

    Serving engines compute logits only at the positions they sample, the last token of each request's prompt (then
    one per decoded token): vLLM's model runner takes ``sample_hidden_states = hidden_states[logits_indices]``, with
    ``logits_indices = query_start_loc[1:] - 1`` (one per scheduled request) before ``compute_logits``
    (vllm-project/vllm ``vllm/v1/worker/gpu_model_runner.py``); SGLang's ``LogitsProcessor`` keeps
    ``hidden_states[last_index]``, ``last_index = cumsum(extend_seq_lens) - 1``, unless input logprobs are asked
    (sgl-project/sglang ``python/sglang/srt/layers/logits_processor.py``); TensorRT-LLM's keeps the last token of
    each sequence unless ``return_context_logits`` (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/modules/
    logits_processor.py``; ``gather_context_logits`` off by default in its engine builds). vLLM also samples (and
    drops) the last token of a chunk that does not end its prompt; one row a chunk beside thousands of prompt tokens,
    left out. 0.0 without a prompt. Training is unlike this: its loss reads every position.

    >>> unsampled_prompt_share(1000), unsampled_prompt_share(1), unsampled_prompt_share(0)
    (0.999, 0.0, 0.0)
    """
    return 1.0 - 1.0 / prompt_tokens if prompt_tokens >= 1 else 0.0


def attention_dims(model: ModelSpec) -> tuple[int, int]:
    """(query-key dim, value dim) per head, MLA included (DeepSeek: nope + rope, v_head_dim)."""
    if model.mla is not None:
        return model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim, model.mla.v_head_dim
    return model.head_dim, model.head_dim


def attention_flops_per_token(model: ModelSpec, context_tokens: int, *, causal: bool,
                              window_extra_tokens: float = 0.0) -> float:
    """Forward FLOPs of the score (QK^T) and value (AV) products for one token, averaged over a sequence.

    Per layer and head, a token attending to ``n`` earlier tokens costs ``2*n*(d_qk + d_v)``. Over a
    sequence of ``s`` tokens the average ``n`` is ``s`` when every pair is counted (the MFU convention
    of Narayanan et al. 2021 and PaLM: ``4*L*h*s`` per token for d_qk = d_v = h/a) and ``s/2`` causally.
    Sliding-window layers cap ``n`` at their window; a kernel's time charges each such layer shorter than the
    sequence ``window_extra_tokens`` more (:func:`~anchorgpu.planner.speed.attention_rate.timed_prefill_attention_flops_per_token`;
    0: the FLOP count).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> attention_flops_per_token(toy_model(), 1000, causal=False)  # 4 * L * h * s = 4*2*64*1000
    512000.0
    """
    key = (id(model), context_tokens, causal, window_extra_tokens)
    hit = _ATTENTION_CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    total = _attention_flops(model, context_tokens, causal=causal, window_extra_tokens=window_extra_tokens)
    if len(_ATTENTION_CACHE) > 4096:
        _ATTENTION_CACHE.clear()
    _ATTENTION_CACHE[key] = (model, total)
    return total


_ATTENTION_CACHE: dict[tuple[int, int, bool, float], tuple[ModelSpec, float]] = {}
"""Memo of :func:`attention_flops_per_token` by model identity (models are frozen; the layout search asks the
same question a thousand times)."""


def _attention_flops(model: ModelSpec, context_tokens: int, *, causal: bool, window_extra_tokens: float) -> float:
    d_qk, d_v = attention_dims(model)
    per_pair = 2.0 * model.num_attention_heads * (d_qk + d_v)
    total = 0.0
    for window in model.attention_windows:  # attention layers only: recurrent layers have no score matrix
        span = float(context_tokens if window is None else min(window, context_tokens))
        if causal:
            if window is None or window >= context_tokens:
                span = context_tokens / 2.0
            else:  # average over positions 1..s of min(i, window)
                w = float(window)
                span = (w * (w + 1) / 2 + (context_tokens - w) * w) / context_tokens
        if window is not None and window < context_tokens:
            span += window_extra_tokens
        total += per_pair * span
    return total


def decode_attention_flops_per_token(model: ModelSpec, cached_tokens: int) -> float:
    """Attention FLOPs of one decoded token over ``cached_tokens`` cached ones (the ``2 * cached`` causal average of
    :func:`attention_flops_per_token`), as serving engines decode multi-head latent attention: with the key and value
    up-projections absorbed into the query and output products, every head attends over the cached latent itself,
    a multi-query attention of ``kv_lora_rank + qk_rope_head_dim`` query-key and ``kv_lora_rank`` value dimensions
    (DeepSeek-V3: 576 and 512 against the 192 and 128 of the heads it stands for, 3.4 times the FLOPs a pair).
    TensorRT-LLM decodes MLA this way ("Weights absorb and MQA", docs/source/blogs/tech_blog/
    blog3_Optimizing_DeepSeek_R1_Throughput_on_NVIDIA_Blackwell_GPUs.md: absorbed for generation, not for prompts
    of 256 tokens or more), as do vLLM's and SGLang's MLA decode kernels; a prompt is still attended head by head
    (:func:`attention_flops_per_token`). Other attention is unchanged.

    >>> from anchorgpu.architectures import load_model
    >>> r1 = load_model("deepseek-r1")
    >>> decode_attention_flops_per_token(r1, 2048) / attention_flops_per_token(r1, 4096, causal=True)
    3.4
    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> decode_attention_flops_per_token(toy_model(), 500) == attention_flops_per_token(toy_model(), 1000, causal=True)
    True
    """
    hit = _ATTENTION_CACHE.get((id(model), 2 * cached_tokens, True, 0.0))  # attention_flops_per_token's memo, in place
    heads_form = (hit[1] if hit is not None and hit[0] is model
                  else attention_flops_per_token(model, 2 * cached_tokens, causal=True))
    mla = model.mla
    if mla is None:
        return heads_form
    d_qk, d_v = attention_dims(model)
    return heads_form * (2 * mla.kv_lora_rank + mla.qk_rope_head_dim) / (d_qk + d_v)


def prefill_flops(model: ModelSpec, prompt_tokens: int, batch: int = 1) -> float:
    """Forward FLOPs to serve ``batch`` prompts of ``prompt_tokens``: ``2*P_matmul*tokens`` + causal attention, less
    the LM head's ``2*V*h`` at every prompt token but the last of each prompt (:func:`unsampled_prompt_share`).

    Source: formulas.md item 9 (``2*P_active*tokens`` plus an attention term, halved by causal kernels).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> m = toy_model()
    >>> prefill_flops(m, 10) == 2 * (forward_matmul_params(m) * 10 - lm_head_params(m) * 9) + 10 * 2 * 4 * 64 * 5
    True
    """
    tokens = prompt_tokens * batch
    return (2.0 * forward_matmul_params(model) * tokens
            - 2.0 * lm_head_params(model) * tokens * unsampled_prompt_share(prompt_tokens)
            + tokens * attention_flops_per_token(model, prompt_tokens, causal=True))


def training_flops_per_token(
    model: ModelSpec, seq_tokens: int, *, recompute: Recompute = "none", kind: TrainKind = "full", op_sac: bool = False,
) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) per trained token.

    Model FLOPs = ``6*P_matmul`` + ``3 *`` forward attention over the whole sequence: the ``6*P*D`` rule
    (Kaplan et al. 2020; Brown et al. 2020 Table D.1) with the attention term of Narayanan et al. 2021 /
    PaLM appendix B, which is how published MFU figures are counted. LoRA trains no base weight, so its
    backward pass computes activation gradients only: ``4*P`` instead of ``6*P``; the attention core, which has no
    weight, runs its whole backward either way (``3 *`` its forward). Hardware FLOPs add one
    more forward pass with full recompute and the attention forward under selective recompute
    (Korthikanti et al. 2022, section 5). ``op_sac`` with selective recompute: PyTorch's op-level policy runs every
    other matrix product of a block again and keeps the attention output (:func:`~anchorgpu.planner.memory.op_sac.op_sac_layer`).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> m = toy_model(); p = forward_matmul_params(m)
    >>> model_f, hw_f = training_flops_per_token(m, 100, recompute="full")
    >>> model_f == 6 * p + 3 * attention_flops_per_token(m, 100, causal=False)
    True
    >>> hw_f - model_f == 2 * p + attention_flops_per_token(m, 100, causal=False)
    True
    >>> lora_f, _ = training_flops_per_token(m, 100, kind="lora")
    >>> lora_f == 4 * p + 3 * attention_flops_per_token(m, 100, causal=False)
    True
    """
    matmul = float(forward_matmul_params(model))
    attn = attention_flops_per_token(model, seq_tokens, causal=False)
    model_flops = _model_flops(matmul, attn, kind)
    if op_sac and recompute == "selective":
        extra = 2.0 * op_sac_layer(model).recomputed_params * model.num_layers
    else:
        extra = {"none": 0.0, "selective": attn, "moe": 2.0 * moe_block_params(model),
                 "full": 2.0 * matmul + attn}[recompute]
    return model_flops, model_flops + extra


def causal_training_flops_per_token(model: ModelSpec, seq_tokens: int, *, kind: TrainKind = "full") -> float:
    """Model FLOPs per trained token with attention counted causally, as the kernels run it: the work a training
    ceiling divides the peak by. :func:`training_flops_per_token`'s model FLOPs count the score and value products
    over the whole sequence (the MFU convention), the masked half a causal kernel skips included; a rate at the peak
    over that count is no bound on the work a step is timed for (at 131,072 tokens the 8B's count is 1.7 times its
    causal work). No recompute: the least work a step runs.

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> m = toy_model()
    >>> causal_training_flops_per_token(m, 100) == 6 * forward_matmul_params(m) + 3 * attention_flops_per_token(
    ...     m, 100, causal=True)
    True
    """
    return _model_flops(float(forward_matmul_params(model)), attention_flops_per_token(model, seq_tokens, causal=True),
                        kind)


def _model_flops(matmul_params: float, attention_flops: float, kind: TrainKind) -> float:
    """A trained token's model FLOPs from its forward products' parameters and its forward attention FLOPs: the
    products three times (forward, input and weight gradients; LoRA twice, no base-weight gradient) and the attention
    core three times whether the weights train or not (it has no weights: its backward computes dQ, dK and dV)."""
    passes = 3.0 if kind == "full" else 2.0
    return passes * 2.0 * matmul_params + 3.0 * attention_flops


def moe_block_params(model: ModelSpec) -> float:
    """Parameters a token multiplies through in the MoE blocks of one forward pass: its routed experts' share, the
    shared experts and the routers (what ``--recompute moe`` runs again; 0.0 for a dense model).

    >>> from anchorgpu.architectures import load_model
    >>> round(moe_block_params(load_model("qwen3-30b-a3b")) / 1e9, 2), moe_block_params(load_model("llama-3.1-8b"))
    (1.82, 0.0)
    """
    moe = model.moe
    if moe is None:
        return 0.0
    p = model.params
    return p.experts * moe.experts_per_token / moe.num_experts + p.shared_experts + p.router
