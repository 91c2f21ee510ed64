"""Serving recipes: ``vllm serve``, SGLang's ``launch_server`` and ``trtllm-serve`` from an inference plan.

Every value comes from the plan: TP/PP/DP (and EP for MoE), the context as the maximum model length, the
engine's sequence cap and batched-token budget the memory was sized with, the memory-utilization cap, the
KV-cache dtype and the weight format. Flags are the engines' own (see ``recipes/data/*_flags.json``).
"""

from __future__ import annotations

import json
import math
import shlex

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.planner.engine_startup import longest_one_sequence
from anchorgpu.planner.inference import DEFAULT_REQUEST_NOTE
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.plan import Plan
from anchorgpu.planner.sglang import SGLANG_MAX_PREFILL_TOKENS
from anchorgpu.planner.validate import _ENGINE_NAMES, vllm_nvfp4_refusal
from anchorgpu.recipes._common import Recipe, Target, flag_data, model_ref, not_expressible, shell_join
from anchorgpu.units import fmt_bytes

__all__ = ["serving_recipe"]

# What each engine can do with weights the checkpoint does not ship in (quantize while loading); values are
# checked against recipes/data/*_flags.json "values" (vLLM 0.33 no longer lists bitsandbytes).
_ONLINE = {
    "vllm": {"fp8": "fp8"},
    "sglang": {"fp8": "fp8"},
    "trtllm": {},
}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _weights(plan: Plan, model: ModelSpec, kind: str, assumptions: list[str]) -> str | None:
    """The ``--quantization`` value (None: none needed), refusing what the engine cannot load from this checkpoint."""
    fmt = plan.precision.weights or "bf16"
    shipped = model.quantization.name if model.quantization is not None else None
    if fmt == shipped:
        assumptions.append(f"Weights: {fmt} as the checkpoint ships them; the engine reads its quantization_config "
                           "(no flag needed).")
        return None
    if fmt in _DTYPE:
        if shipped is not None:
            raise not_expressible(kind, said("the plan loads {model_name} as {fmt}, but the checkpoint ships "
                                             "{shipped}; engines do not dequantize at load time (plan without "
                                             "--weights)", model_name=plan.model.name, fmt=fmt, shipped=shipped))
        return None
    online = _ONLINE[kind].get(fmt)
    if online is None:
        can = "/".join(("bf16", *_ONLINE[kind]))
        raise not_expressible(kind, said("{kind} cannot quantize a 16-bit checkpoint to {fmt} while loading: plan "
                                         "a checkpoint published in {fmt} (its config.json), or --weights {can}",
                                         kind=kind, fmt=fmt, can=can))
    assumptions.append(f"Weights: {fmt} quantized by the engine while loading the 16-bit checkpoint "
                       f"(--quantization {online}).")
    return online


def _kv(plan: Plan, kind: str) -> str | None:
    """The engine's KV-cache dtype for the plan's, or None where its default (``auto``) is the plan's. FP8 is refused
    on a GPU without FP8 hardware, NVFP4 where the engine does not run it. A 16-bit cache for a checkpoint that ships
    a quantized one must be named, since the engines' ``auto`` runs the checkpoint's (vLLM
    ``resolve_kv_cache_dtype_string``, TensorRT-LLM ``_apply_modelopt_quant_config``); TensorRT-LLM cannot be told
    (only fp8/nvfp4 override the checkpoint's).

    NVFP4 (FP4 E2M1 values, an FP8 scale per 16), always named: vLLM 0.33.0 ``--kv-cache-dtype nvfp4``
    (``CacheDType``), read by its FlashInfer backend only (``FlashInferBackend.supported_kv_cache_dtypes``; the CUDA
    backend selection picks it by itself, FLASH_ATTN not listing the dtype, so no ``--attention-backend`` is
    needed): FA2 kernels on compute capability 8.x, 9.x and 12.x, trtllm-gen on 10.x, not for MLA
    (``validate_nvfp4_kv_cache_with_mla``), not head size 64 on FA2 (:func:`~anchorgpu.planner.validate.
    vllm_nvfp4_refusal`); SGLang ``--kv-cache-dtype nvfp4`` (``kv_cache_hook.handle_kv4_compatibility``: Blackwell
    SM100 or SM120 on CUDA, MLA included; its ``auto`` takes a checkpoint's FP8 KV cache only,
    ``configure_kv_cache_dtype``); TensorRT-LLM ``kv_cache_config.dtype: nvfp4`` (``_update_from_hf_quant_config``),
    on Blackwell."""
    kv = plan.precision.kv_cache
    if kv == "fp8":
        if plan.gpu is not None and not plan.gpu.fp8_hardware:
            raise not_expressible(kind, said("an FP8 KV cache on {display_name}, which has no FP8 hardware (plan "
                                             "with --kv-cache bf16)", display_name=plan.gpu.display_name))
        return {"vllm": "fp8", "sglang": "fp8_e4m3", "trtllm": "fp8"}[kind]
    if kv == "nvfp4":
        gpu = plan.gpu
        if kind == "vllm":
            mla = isinstance(plan.model, ModelSpec) and plan.model.mla is not None
            why = vllm_nvfp4_refusal(gpu, plan.model) if gpu is not None else (
                f"{plan.model.name} uses MLA, for which vLLM 0.33.0 refuses an NVFP4 KV cache "
                "(validate_nvfp4_kv_cache_with_mla)" if mla else None)
            if why is not None:
                raise not_expressible(kind, f"an NVFP4 KV cache: {why} (plan with --kv-cache fp8"
                                            + (", or use --recipe sglang or trtllm on Blackwell)" if mla else ")"))
        elif gpu is not None and "NVFP4" not in gpu.fp4_formats:
            engine = {"sglang": "SGLang runs --kv-cache-dtype nvfp4 on Blackwell SM100 or SM120 only "
                                "(kv_cache_hook.handle_kv4_compatibility)",
                      "trtllm": "TensorRT-LLM runs an NVFP4 KV cache on Blackwell GPUs only"}[kind]
            raise not_expressible(kind, said("an NVFP4 KV cache on {display_name}: {engine} (plan with --kv-cache "
                                             "{value}, or use --recipe vllm)", display_name=gpu.display_name,
                                             engine=engine, value='fp8' if gpu.fp8_hardware else 'bf16'))
        return "nvfp4"
    q = plan.model.quantization if isinstance(plan.model, ModelSpec) else None
    if q is None or q.kv_cache is None:
        return None
    if kind == "trtllm":
        raise not_expressible(kind, said("a {kv} KV cache for a checkpoint that ships an {upper} one: "
                                         "TensorRT-LLM runs the checkpoint's kv_cache_quant_algo unless "
                                         "kv_cache_config.dtype names fp8 or nvfp4 (use --recipe vllm or sglang)",
                                         kv=kv, upper=q.kv_cache.upper()))
    if kind == "sglang" and kv != "bf16":
        raise not_expressible(kind, said("a {kv} KV cache: SGLang's --kv-cache-dtype has bf16 but no fp16 (plan "
                                         "with --kv-cache bf16)", kv=kv))
    return {"bf16": "bfloat16", "fp16": "float16"}[kv]


def _planned_engine(w: Workload) -> str:
    """The engine a launch line says the plan was sized for: the ``--engine`` the user gave (the API and the pages
    name it as their field), else the launch's own engine, in words every face shares, since the launch kind chose it
    there (``plan --recipe``, the request's ``recipe``, an allocation's ``--kind`` / ``kind``) and no engine option was
    given to name.

    >>> from types import SimpleNamespace as W
    >>> _planned_engine(W(engine="sglang", engine_source="given")), _planned_engine(W(engine="trtllm", engine_source="recipe"))
    ('--engine sglang', "TensorRT-LLM, this launch's engine")
    """
    if w.engine_source == "given":
        return f"--engine {w.engine}"
    return f"{_ENGINE_NAMES.get(w.engine, w.engine)}, this launch's engine"


def _sglang_fraction(plan: Plan, assumptions: list[str]) -> str:
    """SGLang's ``--mem-fraction-static``: the share of the GPU for weights and KV cache only (activations and the
    CUDA graphs live outside it), so the plan's whole-engine budget less its activation peak and non-torch memory.
    Passing the vLLM-style cap (0.9) there gave the activations the room on top of it, beyond the plan."""
    w = plan.workload
    if w.engine == "sglang":  # the plan is SGLang's own: its mem_fraction_static, its pool and reserve
        derived = any(a.startswith("Serving engine sized like SGLang: mem_fraction_static") and "(given)" not in a
                      for a in plan.assumptions)
        assumptions.append(f"--mem-fraction-static {w.gpu_memory_utilization:g} as planned ({_planned_engine(w)}"
                           + (", SGLang's own default for this GPU and layout, written out" if derived else "")
                           + "): the weights and the KV pool take that share of the memory free at start.")
        return f"{w.gpu_memory_utilization:g}"
    budget = plan.breakdown.get("engine_budget_bytes")
    if plan.gpu is None or not budget:
        assumptions.append(f"SGLang's --mem-fraction-static covers weights and KV cache only; without a GPU the plan's "
                           f"{w.gpu_memory_utilization:g} is passed as it is (lower it by the activations' share).")
        return f"{w.gpu_memory_utilization:g}"
    static = budget - plan.per_gpu.activations_bytes - plan.per_gpu.overhead_bytes
    fraction = max(0.01, math.floor(static / plan.gpu.memory_bytes * 100) / 100)
    assumptions.append(f"SGLang's --mem-fraction-static {fraction:g} covers weights and KV cache only: the plan's "
                       f"{w.gpu_memory_utilization:g} engine budget less its activation peak "
                       f"({fmt_bytes(plan.per_gpu.activations_bytes)}) and non-torch memory "
                       f"({fmt_bytes(plan.per_gpu.overhead_bytes)}), which SGLang keeps outside it.")
    return f"{fraction:g}"


def _replicas(plan: Plan, target: Target, assumptions: list[str], kind: str) -> tuple[int, bool]:
    """(data-parallel ranks in one engine, whether each replica is a separate server)."""
    lay = plan.layout
    per_replica = lay.tp * lay.pp
    if lay.attention_dp_groups > 1:  # copies of one EP group's engine, each on its own GPUs (one a server)
        groups, ranks = lay.attention_dp_groups, lay.attention_dp_ranks
        each = lay.gpus // groups
        assumptions.append(f"{groups} independent attention-DP engines of {each} GPUs ({ranks} replicas of TP "
                           f"{lay.tp}, the experts over EP {lay.ep} each): run this command on each of the {groups} "
                           + ("servers" if each == target.gpus_per_node else f"sets of {each} GPUs")
                           + " and put a load balancer in front, splitting the users evenly (the command is one "
                           "engine).")
        return ranks, True
    if lay.attention_dp:  # the replicas share the experts: one engine over all of them
        return lay.dp, False
    if kind == "vllm" and lay.ep > 1 and lay.dp > 1:  # EP inside each replica's TP group: vLLM's EP is TP x DP
        # (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make, commit 00c1c6a), so one
        # engine a replica
        assumptions.append(f"{lay.dp} replicas of TP {lay.tp} with the experts over EP {lay.ep} each: vLLM's "
                           "--data-parallel-size with --enable-expert-parallel would split the experts over every "
                           "replica's GPUs, so run one engine per replica ("
                           f"{'HIP' if plan.gpu is not None and plan.gpu.vendor == 'AMD' else 'CUDA'}_VISIBLE_DEVICES its own "
                           f"{per_replica} GPU(s), its own port) behind a load balancer (the command is one replica).")
        return 1, True
    if lay.dp > 1 and per_replica * lay.dp > target.gpus_per_node:
        assumptions.append(f"{lay.dp} replicas of {per_replica} GPU(s) do not share one server: run one engine per "
                           "replica behind a load balancer (the command is one replica).")
        return 1, True
    return lay.dp, False


def serving_recipe(plan: Plan, kind: str, target: Target) -> Recipe:
    if plan.workload.task != "inference" or not isinstance(plan.model, ModelSpec):
        raise not_expressible(kind, said("a serving engine for a {task} plan (use torchrun-fsdp, deepspeed or "
                                         "accelerate)", task=plan.workload.task))
    spec = plan.model
    assumptions: list[str] = []
    cannot: list[str] = []
    lay, w = plan.layout, plan.workload
    model = model_ref(plan, assumptions)
    quant = _weights(plan, spec, kind, assumptions)
    kv_flag = _kv(plan, kind)
    dp, _separate = _replicas(plan, target, assumptions, kind)
    adp = lay.attention_dp
    if adp and lay.gpus // lay.attention_dp_groups > target.gpus_per_node:
        raise not_expressible(kind, said("attention data parallelism with EP {ep} spans {gpus} GPUs over servers "
                                         "of {gpus_per_node}: this recipe writes one server's launch; plan it on "
                                         "one server (or several, --ep {gpus_per_node} an engine each) or give "
                                         "--tp and --dp", ep=lay.ep, gpus=lay.gpus,
                                         gpus_per_node=target.gpus_per_node))
    if adp and kind == "trtllm" and lay.tp > 1:
        raise not_expressible(kind, said("attention data parallelism with TP {tp} a replica: TensorRT-LLM's "
                                         "enable_attention_dp runs each GPU's attention alone (TP 1); plan --tp 1",
                                         tp=lay.tp))
    replica_nodes = math.ceil(lay.tp * lay.pp / target.gpus_per_node)
    if replica_nodes > 1:
        if kind == "trtllm":
            raise not_expressible(kind, said("one replica spans {value} GPUs over servers of {gpus_per_node}: "
                                             "trtllm-serve then runs under an MPI launcher (mpirun / srun with "
                                             "trtllm-llmapi-launch) that this recipe does not write; plan TP x PP "
                                             "within one server, or use --recipe vllm or sglang",
                                             value=lay.tp * lay.pp, gpus_per_node=target.gpus_per_node))
        if kind == "vllm":
            assumptions.append(f"One replica spans {lay.tp * lay.pp} GPUs over {replica_nodes} servers of "
                               f"{target.gpus_per_node}: start a Ray cluster over them first (ray start --head on one, "
                               "ray start --address on the others) and run this command on the head.")
        else:
            assumptions.append(f"One replica spans {lay.tp * lay.pp} GPUs over {replica_nodes} servers of "
                               f"{target.gpus_per_node}: run this command on each of them, NODE_RANK 0 to "
                               f"{replica_nodes - 1}, MASTER_ADDR the address of the one with NODE_RANK 0.")
            cannot.append("NODE_RANK and MASTER_ADDR on each server of the replica.")
    planned_ctx = ctx = w.context_tokens or spec.max_context_tokens
    longest = longest_one_sequence(plan, planned_ctx)
    if longest > planned_ctx and any(a.startswith(DEFAULT_REQUEST_NOTE) for a in plan.assumptions):
        ctx = longest  # no length was asked for: accept long requests, as the engine's own default would
        assumptions.append(f"Context limit {ctx:,} tokens: no length was given, so the plan sized its "
                           f"{w.concurrency or 1:,} sequences at {planned_ctx:,} tokens each; the engine still accepts a "
                           f"request up to {ctx:,} (the model's window, or one sequence in the KV cache the engine "
                           "reserves if that is shorter), fewer of them at once when they are long.")
    encoder_tokens = int(plan.breakdown.get("encoder_input_tokens") or 0)
    if kind == "vllm" and spec.encoder is not None and not spec.encoder.fixed_tokens and encoder_tokens > ctx:
        # vLLM holds a text encoder-decoder's encoder prompt to --max-model-len as well as its decoder's (only
        # Whisper's padded audio prompt is let through): vllm-project/vllm vllm/engine/llm_engine.py
        # _validate_model_input, "The encoder prompt (length N) is longer than the maximum model length"
        assumptions.append(f"Context limit {encoder_tokens:,} tokens: the decoder holds {ctx:,}, but vLLM refuses an "
                           f"encoder prompt longer than --max-model-len, and {spec.name}'s encoder reads "
                           f"{encoder_tokens:,} tokens a request.")
        ctx = encoder_tokens
    env: list[str] = []
    if ctx > spec.max_context_tokens:  # planned with --allow-long-context: engines refuse it unless told
        env = {"vllm": ["VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"], "sglang": ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"],
               "trtllm": []}[kind]
        told = f" ({env[0]}, without which it refuses to start)" if env else ""
        assumptions.append(f"Context {ctx:,} is beyond {spec.name}'s {spec.max_context_tokens:,} tokens (planned with "
                           f"--allow-long-context): the engine is told to accept it{told}.")
        cannot.append("Output quality beyond the trained context: RoPE scaling (the checkpoint's rope_scaling, or the "
                      "engine's override) is not part of the plan.")
    tokens, seqs = w.max_num_batched_tokens or 8192, w.max_num_seqs or 1024
    dtype = _DTYPE.get(plan.precision.weights or "bf16")
    files: tuple[tuple[str, str], ...] = ()
    if kind == "vllm":
        parts = [*env, "vllm", "serve", model, "--tensor-parallel-size", str(lay.tp)]
        if lay.pp > 1:
            parts += ["--pipeline-parallel-size", str(lay.pp)]
        if dp > 1:
            parts += ["--data-parallel-size", str(dp)]
        if lay.ep > 1:
            parts += ["--enable-expert-parallel"]
            assumptions.append(f"Expert parallelism: vLLM spreads the experts over TP x DP = {lay.tp * dp} ranks "
                               f"(the plan's EP {lay.ep}).")
        parts += ["--max-model-len", str(ctx), "--max-num-seqs", str(seqs), "--max-num-batched-tokens", str(tokens)]
        if spec.encoder is None:
            parts += ["--enable-chunked-prefill"]
        else:  # vLLM turns chunked prefill off for encoder-decoder models: asking for it would say what does not run
            assumptions.append(f"Chunked prefill: not set; {spec.name} is an encoder-decoder model, for which vLLM "
                               "turns it off (each prompt is prefilled whole, within --max-num-batched-tokens).")
        parts += ["--gpu-memory-utilization", f"{w.gpu_memory_utilization:g}", "--block-size", str(w.block_size_tokens)]
        if dtype and dtype != "bfloat16":
            parts += ["--dtype", dtype]
        if kv_flag:
            parts += ["--kv-cache-dtype", kv_flag]
        if quant:
            parts += ["--quantization", quant]
        if spec.image is not None:  # vLLM takes many images per prompt by default and profiles its encoder for them
            images = plan.breakdown.get("image_tokens_per_request", 0) // max(1, plan.breakdown.get("image_tokens_per_image", 1))
            parts += ["--limit-mm-per-prompt", shlex.quote(json.dumps({"image": images}))]
            assumptions.append(f"Images: at most {images} per request, as planned" + (
                f" ({plan.breakdown['image_tokens_per_image']:,} tokens each)" if images else " (text only)")
                + "; a request with more is refused by the engine.")
        parts += ["--host", "0.0.0.0", "--port", "8000"]
    elif kind == "sglang":
        # under attention DP SGLang's --tp-size is every GPU of the engine and each DP group's attention takes
        # tp-size / dp-size of them (sglang docs, "DP, DPA and sgl-router")
        parts = [*env, "python", "-m", "sglang.launch_server", "--model-path", model, "--tp-size",
                 str(lay.tp * dp if adp else lay.tp)]
        if lay.pp > 1:
            parts += ["--pp-size", str(lay.pp)]
        if replica_nodes > 1:
            parts += ["--nnodes", str(replica_nodes), "--node-rank", "$NODE_RANK", "--dist-init-addr",
                      "$MASTER_ADDR:20000"]
        if dp > 1:
            parts += ["--dp-size", str(dp)]
        if adp:
            parts += ["--enable-dp-attention"]
            assumptions.append(f"Attention data parallelism: --tp-size {lay.tp * dp} is every GPU of the engine, "
                               f"--dp-size {dp} attention groups of TP {lay.tp} each (--enable-dp-attention), the "
                               f"experts over --ep-size {lay.ep}.")
        if lay.ep > 1:
            parts += ["--ep-size", str(lay.ep)]
        parts += ["--context-length", str(ctx), "--max-running-requests", str(seqs), "--chunked-prefill-size",
                  str(tokens), "--mem-fraction-static", _sglang_fraction(plan, assumptions)]
        if tokens > SGLANG_MAX_PREFILL_TOKENS:  # every prompt chunk counts against both limits (PrefillAdder)
            parts += ["--max-prefill-tokens", str(tokens)]
        if dtype and dtype != "bfloat16":
            parts += ["--dtype", dtype]
        if kv_flag:
            parts += ["--kv-cache-dtype", kv_flag]
        if quant:
            parts += ["--quantization", quant]
        parts += ["--host", "0.0.0.0", "--port", "30000"]
    else:
        if dp > 1 and not adp:
            assumptions.append(f"trtllm-serve has no data-parallel flag: run {dp} servers of TP {lay.tp} behind a "
                               "load balancer (the command is one of them).")
        elif adp:
            assumptions.append(f"Attention data parallelism: --tp_size {dp} is every GPU of the engine and "
                               "enable_attention_dp (in the config) makes each GPU's attention its own replica, the "
                               f"experts over --ep_size {lay.ep}.")
        parts = ["trtllm-serve", model, "--backend", "pytorch", "--tp_size", str(dp if adp else lay.tp)]
        if lay.pp > 1:
            parts += ["--pp_size", str(lay.pp)]
        if lay.ep > 1:
            parts += ["--ep_size", str(lay.ep)]
        parts += ["--max_seq_len", str(ctx), "--max_batch_size", str(seqs), "--max_num_tokens", str(tokens),
                  "--free_gpu_memory_fraction", f"{w.gpu_memory_utilization:g}", "--enable_chunked_prefill"]
        kv_dtype = kv_flag or "auto"
        config = ("kv_cache_config:\n"
                  f"  dtype: {kv_dtype}\n"
                  f"  free_gpu_memory_fraction: {w.gpu_memory_utilization:g}\n")
        if dtype and dtype != "bfloat16":
            config = f"dtype: {dtype}\n" + config
        if adp:
            config = "enable_attention_dp: true\n" + config
        files = (("trtllm_config.yaml", config),)
        parts += ["--config", "trtllm_config.yaml", "--host", "0.0.0.0", "--port", "8000"]
        if w.engine == "trtllm":
            assumptions.append(f"--free_gpu_memory_fraction as planned ({_planned_engine(w)}): the KV cache takes that share "
                               "of the memory free after the weights and the profiling pass.")
        else:
            assumptions.append("trtllm-serve's --free_gpu_memory_fraction is the share of the memory left after the "
                               "weights that goes to the KV cache, not a whole-GPU cap: the plan sized vLLM's budget "
                               "(plan with --engine trtllm to size this engine's).")
    asked = not any(a.startswith("Concurrency not given") for a in plan.assumptions)
    if asked and plan.max_concurrency is not None and w.concurrency is not None and w.concurrency < seqs:
        assumptions.append(f"Sequence cap {seqs:,}: the engine's default, which the memory was sized with; the KV cache "
                           f"holds {plan.max_concurrency:,} sequences of {planned_ctx:,} tokens and the speed figures are for "
                           f"{w.concurrency:,} at once (set the cap to {w.concurrency:,} to keep latency there).")
    data = flag_data(f"{kind}_flags")
    cannot.append("Sampling defaults, chat template, API keys and TLS: not part of the plan.")
    return Recipe(kind=kind, command=shell_join(parts), files=files, assumptions=tuple(assumptions),
                  cannot_set=tuple(cannot), tool_version=f"{data['tool']} {data['version']}")
