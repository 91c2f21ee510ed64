"""The layout of :func:`~anchorgpu.planner.plan.plan` resolved to whole counts (``gpus == tp · cp · pp · dp``):
the layout's counts and flags checked (:mod:`.layout_checks`), TP against the model's heads, the default layout chosen, EP, ZeRO,
virtual stages and a stated pipeline layout. Pure.

Each refusal is one :class:`~anchorgpu.errors.InvalidWorkload` line naming the value; each default used is
appended to the caller's ``assumptions``.
"""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import field_getter
from anchorgpu.planner._memo import memo_with_lines
from anchorgpu.planner.inputs import OFFLOADS, Layout, Workload, default_seq_tokens
from anchorgpu.planner.layout_checks import (
    _LAYOUT_COUNTS,
    check_layout_counts,
    sharded_pipeline_refusal,
    trtllm_attention_dp_tp_refusal,
    vllm_ep_below_tp_refusal,
)
from anchorgpu.planner.pipeline_layout import PipelineLayout, parse_pipeline_layout
from anchorgpu.planner.qlora_tp import device_map_refusal, qlora_interleaving_refusal
from anchorgpu.planner.result import ResolvedLayout
from anchorgpu.planner.sequence_parallel import (
    resolve_sequence_parallel,
    sequence_split_refusal,
    splits_whatever_stated,
)
from anchorgpu.planner.speed.context_parallel import cp_split_refusal
from anchorgpu.planner.speed.pipeline import chunks_refusal, counts_embedding_and_loss
from anchorgpu.planner.training_flag_checks import (
    training_checks,
)
from anchorgpu.validation import LIMITS

__all__ = ["GPUS_PER_SERVER", "check_tp", "default_tp", "resolve_layout", "tp_is_valid"]

GPUS_PER_SERVER = 8


def tp_is_valid(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> bool:
    if not isinstance(model, ModelSpec):
        return tp == 1
    if model.num_attention_heads % tp:
        return False
    if model.mla is not None:
        return True
    kv = model.num_kv_heads
    return kv % tp == 0 or tp % kv == 0


def check_tp(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> None:
    if isinstance(model, DiffusionPipelineSpec):
        if tp > 1:
            raise InvalidWorkload(said("tp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use "
                                       "--gpus)"))
        return
    if model.num_attention_heads % tp:
        raise InvalidWorkload(said("--tp {tp} does not divide the {num_attention_heads} attention heads of "
                                   "{model_name}", tp=tp, num_attention_heads=model.num_attention_heads,
                                   model_name=model.name))
    if not tp_is_valid(model, tp):
        raise InvalidWorkload(
            said("--tp {tp} with {num_kv_heads} KV heads: TP must divide the KV heads or be a multiple of them",
                 tp=tp, num_kv_heads=model.num_kv_heads))


def default_tp(model: ModelSpec | DiffusionPipelineSpec, gpus: int) -> int:
    for tp in range(min(gpus, GPUS_PER_SERVER), 0, -1):
        if gpus % tp == 0 and tp_is_valid(model, tp):
            return tp
    return 1


def _split_text(tp: int, pp: int, cp: int, dp: int | None = None) -> str:
    """The split as the flags give it: ``--tp 4 x --pp 1 x --dp 3 = 12`` (``--cp`` where it is more than 1).

    >>> _split_text(4, 1, 1, 3), _split_text(2, 2, 2)
    ('--tp 4 x --pp 1 x --dp 3 = 12', '--tp 2 x --pp 2 x --cp 2 = 8')
    """
    parts = [("tp", tp), ("pp", pp), *((("cp", cp),) if cp > 1 else ()), *((("dp", dp),) if dp is not None else ())]
    total = tp * pp * cp * (dp or 1)
    return " x ".join(f"--{name} {value}" for name, value in parts) + f" = {total}"


_LAYOUT_FIELDS = ("gpus", *_LAYOUT_COUNTS, "zero", "tp_overlap", "ep_overlap", "fsdp", "offload", "pipeline_layout",
                  "sequence_parallel")

_typed_layout_fields = field_getter(*_LAYOUT_FIELDS, typed=True)  # the values, then their types

_LAYOUTS: dict[tuple[object, ...], tuple[object, ResolvedLayout, tuple[str, ...]]] = {}


def resolve_layout(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, layout: Layout,
                   assumptions: list[str]) -> ResolvedLayout:
    """The layout planned, whole counts resolved (:func:`_resolve_layout`), its assumption appended. It depends on the
    (frozen) model, the task, the training sequence, the recompute asked (``moe`` is refused for a dense model), the
    training stack (which refuses ZeRO-2 and FSDP with pipeline stages on Megatron and states ZeRO-2's on PyTorch) and
    the layout's fields only: memoised on them, by value and type (``1``, ``1.0`` and ``True`` are different inputs), so
    each new :class:`Layout` of a question already asked resolves in one lookup (a refusal is raised each time, never
    kept)."""
    key = (id(model), workload.task, workload.seq_tokens, workload.recompute, workload.train_stack,
           _typed_layout_fields(layout))
    resolved: ResolvedLayout = memo_with_lines(_LAYOUTS, key, model, assumptions, _resolve_layout, model, workload,
                                               layout, checked=False)
    return resolved


def _flags_given(layout: Layout) -> str:
    """The layout flags a user gave that leave TP, PP and DP open, as typed ("--zero 1 --cp 2"); "" for none.

    >>> _flags_given(Layout(zero=1, cp=2)), _flags_given(Layout(fsdp=True, ep=8)), _flags_given(Layout(gpus=8))
    ('--zero 1 --cp 2', '--fsdp --ep 8', '')
    """
    return " ".join(flag for flag, given in (
        (f"--zero {layout.zero}", layout.zero is not None), ("--fsdp", layout.fsdp), (f"--cp {layout.cp}", layout.cp),
        (f"--ep {layout.ep}", layout.ep), (f"--virtual-stages {layout.virtual_stages}", layout.virtual_stages)) if given)


def _resolve_layout(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, layout: Layout,
                    assumptions: list[str]) -> ResolvedLayout:
    gpus = check_layout_counts(layout)
    if layout.zero not in (None, 0, 1, 2, 3):
        raise InvalidWorkload(said("--zero {zero!r}: ZeRO stages are 0, 1, 2 and 3", zero=layout.zero))
    if layout.offload not in OFFLOADS:
        raise InvalidWorkload(said("unknown offload {offload!r}; valid: {OFFLOADS}", offload=layout.offload,
                                   OFFLOADS=', '.join(OFFLOADS)))
    training = workload.task in ("train", "lora", "qlora")
    if not training and (layout.zero is not None or layout.fsdp):  # --zero 0 too: inference shards nothing
        raise InvalidWorkload(said("--zero and --fsdp shard training state; they do not apply to inference or "
                                   "diffusion"))
    cp, v = layout.cp or 1, layout.virtual_stages or 1
    if not training and (cp > 1 or v > 1):
        raise InvalidWorkload(said("--cp and --virtual-stages split training work; they do not apply to inference "
                                   "or diffusion"))
    if layout.ep_overlap and (workload.task != "train" or not isinstance(model, ModelSpec) or model.moe is None):
        raise InvalidWorkload(said("--ep-overlap overlaps a mixture of experts' all-to-alls in training (--task "
                                   "train of a MoE model)"))
    if workload.task == "inference" and layout.offload != "none":
        raise InvalidWorkload(said("--offload applies to training and diffusion; serving engines size offload "
                                   "separately"))
    if workload.task == "diffusion" and layout.offload == "optimizer":
        raise InvalidWorkload(said("--offload optimizer applies to training; for diffusion use --offload params"))
    ep_given = layout.ep or 1  # with no GPU count, the fewest GPUs whose stage an EP given splits over (as --tp N)
    if layout.tp is None and layout.pp is None and layout.dp is None:
        gpus = gpus or math.lcm(cp, ep_given)
        if gpus % cp:
            raise InvalidWorkload(said("--gpus {gpus} is not a multiple of --cp {cp}: give a multiple of it",
                                       gpus=gpus, cp=cp))
        tp = default_tp(model, gpus) if workload.task == "inference" else 1
        pp, dp = 1, gpus // (tp * cp)
        how = (said("inference shards by TP across the GPUs of one server, as far as the model's heads divide them, "
                    "and runs the rest as replicas") if dp > 1 else
               said("inference shards by TP across the GPUs of one server")) if workload.task == "inference" else \
            said("training and diffusion replicate by data parallelism")
        flags = _flags_given(layout)  # the layout flags given without TP, PP or DP: the line names them
        assumptions.append(said("Layout not given{beyond}: {how} (TP {tp}, PP 1{cp}, DP {dp}).",
                                beyond=said(" beyond {flags}", flags=flags) if flags else "", how=how, tp=tp,
                                cp=f", CP {cp}" if cp > 1 else "", dp=dp))
    else:
        tp, pp = layout.tp or 1, layout.pp or 1
        split = tp * pp * cp
        if layout.dp is None:
            if gpus is None:
                gpus = split * (ep_given // math.gcd(ep_given, tp * cp))  # DP that makes the stage a multiple of EP
            if gpus % split:
                raise InvalidWorkload(said("--gpus {gpus} is not a multiple of {tp}: give --gpus as a multiple of "
                                           "{split}", gpus=gpus, tp=_split_text(tp, pp, cp), split=split))
            dp = gpus // split
        else:
            dp = layout.dp
            if gpus is None:
                gpus = split * dp
            elif gpus != split * dp:
                raise InvalidWorkload(said("--gpus {gpus} but {tp} GPUs: give --gpus {value}, or leave it out "
                                           "(the split sets it), or change the split", gpus=gpus,
                                           tp=_split_text(tp, pp, cp, dp), value=split * dp))
        if gpus > LIMITS["gpus"].high:  # each count within its bound, the GPUs they make together past --gpus's
            raise InvalidWorkload(said("{split} GPUs: at most {most:,} GPUs, the bound of --gpus; give a smaller split",
                                       split=_split_text(tp, pp, cp, dp), most=LIMITS["gpus"].high))
    check_tp(model, tp)
    if isinstance(model, ModelSpec) and pp > model.num_layers:
        raise InvalidWorkload(said("--pp {pp} exceeds the {num_layers} layers of {model_name}", pp=pp,
                                   num_layers=model.num_layers, model_name=model.name))
    if isinstance(model, DiffusionPipelineSpec) and pp > 1:
        raise InvalidWorkload(said("pp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use "
                                   "--gpus)"))
    if workload.recompute == "moe" and not (isinstance(model, ModelSpec) and model.moe is not None):
        raise InvalidWorkload(said("--recompute moe recomputes a mixture of experts' MoE blocks; {model_name} has "
                                   "none (use selective or full)", model_name=model.name))
    ep = layout.ep or 1
    if ep > 1:
        if not isinstance(model, ModelSpec) or model.moe is None:
            raise InvalidWorkload(said("--ep {ep}: expert parallelism needs a mixture-of-experts model", ep=ep))
        # EP folds over the TP, CP and DP ranks of a stage (Megatron-Core's MoE parallel folding: CP 8 and EP 8
        # on 8 GPUs, not 64)
        if model.moe.num_experts % ep:
            raise InvalidWorkload(said("--ep {ep} does not divide the {num_experts} experts of {model_name}", ep=ep,
                                       num_experts=model.moe.num_experts, model_name=model.name))
        if (tp * cp * dp) % ep:
            stage = tp * cp * dp
            raise InvalidWorkload(said("--ep {ep} must divide the tp·{value}dp = {stage:,} GPU{value2} of a stage",
                                       ep=ep, value='cp·' if cp > 1 else '', stage=stage,
                                       value2='s' if stage > 1 else ''))
        if not training and ep < tp and workload.engine == "vllm":
            raise InvalidWorkload(vllm_ep_below_tp_refusal(ep, tp, workload.engine_source))
        if not training and ep > tp > 1 and workload.engine == "trtllm":
            raise InvalidWorkload(trtllm_attention_dp_tp_refusal(ep, tp, workload.engine_source))
        if not training and ep < tp and tp % ep:  # the engines split each expert tp / ep ways (serving_expert_tp)
            raise InvalidWorkload(said("--ep {ep} with TP {tp}: a serving EP smaller than TP splits each expert "
                                       "TP / EP ways (EP x expert TP = TP), so it must divide TP {tp}; give an EP "
                                       "that does", ep=ep, tp=tp))
    zero = 3 if layout.fsdp else (layout.zero or 0)
    if training:
        refusal = sharded_pipeline_refusal(workload.train_stack, pp, zero, fsdp=layout.fsdp)
        if refusal is not None:
            raise InvalidWorkload(refusal)
        if zero == 2 and pp > 1:  # the PyTorch stack (Megatron's refused above): Llama 3's FSDP, no public launcher
            from anchorgpu.planner.speed.zero2 import LLAMA3_FSDP_LINE

            assumptions.append(LLAMA3_FSDP_LINE)
    if training and layout.offload == "params" and zero < 3:
        raise InvalidWorkload(said("--offload params needs parameter sharding: add --zero 3 or --fsdp "
                                   "(ZeRO-Infinity, FSDP CPU offload)"))
    stated = None
    if layout.pipeline_layout is not None:
        stated = _pipeline_layout(model, layout, pp, training)
        v = stated.virtual_stages
        interleaved = qlora_interleaving_refusal(workload.task, v, None if layout.virtual_stages else "--pipeline-layout")
        if training and interleaved is not None:
            raise InvalidWorkload(interleaved)
    if isinstance(model, ModelSpec) and v > 1:
        if pp == 1:
            raise InvalidWorkload(said("--virtual-stages {v} needs pipeline parallelism (--pp 2 or more)", v=v))
        if stated is None and model.num_layers % (pp * v) and not counts_embedding_and_loss(model.num_layers, pp, v):
            raise InvalidWorkload(said("--virtual-stages {v}: --pp {pp} x {v} does not divide the {num_layers} "
                                       "layers of {model_name}, nor {value} with the embedding and the loss "
                                       "counted as layers (Megatron-Core's "
                                       "--account-for-embedding-in-pipeline-split "
                                       "--account-for-loss-in-pipeline-split)", v=v, pp=pp,
                                       num_layers=model.num_layers, model_name=model.name, value=model.num_layers + 2))
        chunks = None if stated is not None else chunks_refusal(pp, v, model.num_layers, model.name)
        if chunks is not None:  # the speed model refuses it too: refused before the memory
            raise InvalidWorkload(chunks)
    if training and layout.tp_overlap and tp < 2:  # as --sequence-parallel with TP 1: a switch with nothing to act on
        raise InvalidWorkload(said("--tp-overlap with TP {tp}: it overlaps tensor-parallel traffic with the "
                                   "products, and TP 1 has none; give --tp 2 or more, or drop --tp-overlap", tp=tp))
    if training and isinstance(model, ModelSpec):
        seq = default_seq_tokens(workload, model.max_context_tokens)
        refusal = cp_split_refusal(cp, seq)
        if refusal is not None:
            raise InvalidWorkload(refusal)
    if training:
        training_checks(layout, workload)
        from anchorgpu.planner.speed.layout_reason import SERVER_GPUS  # the server a plan assumes

        alone = device_map_refusal(workload.task, workload.train_stack, pp, dp, SERVER_GPUS)  # QLoRA's device_map
        if alone is not None:
            raise InvalidWorkload(alone)
    sequence_parallel = resolve_sequence_parallel(layout.sequence_parallel, training=training, tp=tp,
                                                  moe=isinstance(model, ModelSpec) and model.moe is not None)
    if training and isinstance(model, ModelSpec) and (sequence_parallel or splits_whatever_stated(workload.train_stack)):
        refusal = sequence_split_refusal(tp, cp, default_seq_tokens(workload, model.max_context_tokens),
                                         workload.train_stack)
        if refusal is not None:
            raise InvalidWorkload(refusal)
    return ResolvedLayout(gpus=gpus, tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, fsdp=layout.fsdp,
                          offload=layout.offload, cp=cp, virtual_stages=v,
                          sequence_parallel=sequence_parallel,
                          tp_overlap=layout.tp_overlap, ep_overlap=layout.ep_overlap, pipeline_layout=stated)


def _pipeline_layout(model: ModelSpec | DiffusionPipelineSpec, layout: Layout, pp: int,
                     training: bool) -> PipelineLayout:
    """The user's ``--pipeline-layout`` parsed for the resolved ``pp`` (it needs ``--pp`` and a training task of a
    language model); the virtual stages follow from its chunks, or must match them when given."""
    text = layout.pipeline_layout
    if not isinstance(text, str):
        raise InvalidWorkload(said("--pipeline-layout {text!r}: must be a layout string such as 'Et|(tt|)*30L'",
                                   text=text))
    if not training or not isinstance(model, ModelSpec):
        raise InvalidWorkload(said("--pipeline-layout splits a language model's layers for training; it does not "
                                   "apply to inference or diffusion"))
    if layout.pp is None:
        raise InvalidWorkload(said("--pipeline-layout {text!r} needs --pp: the chunks are dealt over the pipeline "
                                   "ranks", text=text))
    return parse_pipeline_layout(text, pp=pp, virtual_stages=layout.virtual_stages, num_layers=model.num_layers,
                                 model_name=model.name)
