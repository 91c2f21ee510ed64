"""The refusals of a layout before and beside its resolution (:mod:`.layout_resolution`): counts that are not whole
numbers of at least 1, ZeRO stages with FSDP, the flags the model itself rules out, and the splits an engine or a
training stack does not run (ZeRO-2/3 with pipeline stages on Megatron, an EP below TP on vLLM, attention DP over a
TP of 2 or more on TensorRT-LLM). Each refusal is one :class:`~anchorgpu.errors.InvalidWorkload` line naming the
value. Pure."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import field_getter
from anchorgpu.planner.inputs import Layout, Workload
from anchorgpu.planner.training_flag_checks import (
    training_checks,
    undivided_interleaving_refusal,
    unstaged_interleaving_refusal,
)
from anchorgpu.planner.workload_checks import check_counts, counts_checker
from anchorgpu.units import require_whole_gpus

__all__ = ["check_layout_counts", "check_layout_for_model", "sharded_pipeline_refusal",
           "trtllm_attention_dp_tp_refusal", "vllm_ep_below_tp_refusal"]

_LAYOUT_COUNTS = ("tp", "pp", "dp", "ep", "cp", "virtual_stages")

_layout_counts = field_getter(*_LAYOUT_COUNTS)
_layout_counts_ok = counts_checker(*_LAYOUT_COUNTS)


def check_layout_for_model(model: ModelSpec, layout: Layout, workload: Workload) -> None:
    """Refuse, before a layout is chosen around them, the layout flags the model itself rules out: ``--ep`` on a
    dense model or not dividing its experts, and ``--tp-overlap`` (it needs TP 2 or more) with
    ``--no-sequence-parallel`` on a mixture of experts (which needs sequence parallelism under TP,
    :func:`~anchorgpu.planner.sequence_parallel.resolve_sequence_parallel`). Left to the search, no candidate holds
    them and its refusal names something else: ``--virtual-stages None``, or an EP over the one GPU planned when
    nothing was chosen. :func:`~anchorgpu.planner.layout_resolution.resolve_layout` checks the same on the layout it resolves."""
    training_checks(layout, workload)
    if layout.virtual_stages is not None and layout.pp is None and workload.task in ("train", "lora", "qlora"):
        interleaving = (undivided_interleaving_refusal(model, layout)
                        or unstaged_interleaving_refusal(layout, workload.train_stack))
        if interleaving is not None:
            raise InvalidWorkload(interleaving)
    ep = layout.ep or 1
    if ep > 1 and model.moe is None:
        raise InvalidWorkload(said("--ep {ep}: expert parallelism needs a mixture-of-experts model", ep=ep))
    if ep > 1 and model.moe is not None and model.moe.num_experts % ep:
        raise InvalidWorkload(said("--ep {ep} does not divide the {num_experts} experts of {model_name}", ep=ep,
                                   num_experts=model.moe.num_experts, model_name=model.name))
    if workload.task in ("train", "lora", "qlora") and model.moe is not None and layout.tp_overlap \
            and layout.sequence_parallel is False:
        raise InvalidWorkload(said("--tp-overlap with --no-sequence-parallel on a mixture of experts: the overlap "
                                   "needs TP 2 or more, and a mixture of experts under TP needs sequence "
                                   "parallelism (Megatron-LM refuses it without); drop one of them"))


def check_layout_counts(layout: Layout) -> int | None:
    """Refuse a layout count that is not a whole number of at least 1 (TP, PP, DP, EP, CP, virtual stages, GPUs), and
    a ZeRO stage other than 3 with FSDP, before anything is planned or chosen from it; the GPU count, made whole, is
    returned."""
    if not _layout_counts_ok(layout):  # the usual case passes without a tuple of the values
        check_counts(_LAYOUT_COUNTS, _layout_counts(layout))
    if layout.fsdp and layout.zero in (0, 1, 2):  # FSDP is planned as ZeRO-3, whatever stage was asked
        raise InvalidWorkload(said("--zero {zero} with --fsdp: FSDP FULL_SHARD shards parameters, gradients and "
                                   "optimizer state as ZeRO-3 does; drop --zero or give --zero 3", zero=layout.zero))
    gpus = layout.gpus
    if gpus is not None and (type(gpus) is not int or gpus < 1):  # the usual case needs no further check
        if not isinstance(gpus, bool) and gpus == 0:
            raise InvalidWorkload(said("--gpus 0: at least one GPU is needed"))
        gpus = require_whole_gpus(gpus)
    return gpus


def sharded_pipeline_refusal(train_stack: str, pp: int, zero: int, *, fsdp: bool = False) -> str | None:
    """The one-line refusal of ZeRO-2 or ZeRO-3 (FSDP) with pipeline stages on the Megatron stack, else None.

    Megatron-Core shards gradients or parameters only in Megatron-FSDP (``use_megatron_fsdp`` with
    ``data_parallel_sharding_strategy`` ``optim_grads``, ZeRO-2, or ``optim_grads_params``, ZeRO-3:
    ``megatron/core/distributed/distributed_data_parallel_config.py`` in NVIDIA/Megatron-LM at 0011998), which runs
    no pipeline stages (NVIDIA/Megatron-LM issue #1455, open; its roadmap #4003 lists "PP support" as future work;
    NVIDIA-NeMo/Automodel ``nemo_automodel/components/distributed/config_factory.py`` at a4f5e42 refuses it:
    "megatron_fsdp does not support pipeline parallelism"). What runs with pipeline stages is Megatron-Core's
    distributed optimizer, ZeRO-1 in memory: it shards the fp32 master weights and moments and keeps a full-size
    gradient buffer on every rank, reduce-scattered once a step ("[no] distribute model gradients"; 6 + 12/d bytes a
    parameter with 16-bit weights and fp32 gradients: ``docs/source/api-guide/dist_optimizer.md`` at 50b073c). The layout
    chooser never tries either (:func:`~anchorgpu.planner.speed.layouts.sharded_with_stages`). The PyTorch stack runs
    FSDP2 under ``torch.distributed.pipelining`` (torchtitan, row T28 of perf_measured.md) and plans ZeRO-2 with
    stages as Llama 3's FSDP, saying so (:data:`~anchorgpu.planner.speed.zero2.LLAMA3_FSDP_LINE`).

    >>> sharded_pipeline_refusal("megatron", 2, 3)
    '--zero 3 with --pp 2: Megatron-FSDP runs no pipeline stages; give --train-stack pytorch (FSDP2 under torch.distributed.pipelining, as torchtitan runs it), --zero 1 with the stages, or --pp 1'
    >>> sharded_pipeline_refusal("megatron", 8, 2)
    "--zero 2 with --pp 8: Megatron's ZeRO-2 is Megatron-FSDP (optim_grads), which runs no pipeline stages; Megatron-Core's distributed optimizer runs with them as ZeRO-1 (optimizer state sharded, gradients kept whole): give --zero 1 with the stages, or --pp 1"
    >>> sharded_pipeline_refusal("pytorch", 2, 3), sharded_pipeline_refusal("megatron", 1, 2), sharded_pipeline_refusal("megatron", 4, 1)
    (None, None, None)
    """
    if pp <= 1 or train_stack == "pytorch" or zero not in (2, 3):
        return None
    if zero == 2 and not fsdp:
        return (said("--zero 2 with --pp {pp}: Megatron's ZeRO-2 is Megatron-FSDP (optim_grads), which runs no "
                     "pipeline stages; Megatron-Core's distributed optimizer runs with them as ZeRO-1 (optimizer "
                     "state sharded, gradients kept whole): give --zero 1 with the stages, or --pp 1", pp=pp))
    return (said("{value} with --pp {pp}: Megatron-FSDP runs no pipeline stages; give --train-stack pytorch "
                 "(FSDP2 under torch.distributed.pipelining, as torchtitan runs it), --zero 1 with the stages, or "
                 "--pp 1", value='--fsdp' if fsdp else '--zero 3', pp=pp))


def vllm_ep_below_tp_refusal(ep: int, tp: int, engine_source: str) -> str:
    """The one line refusing a serving ``--ep`` smaller than ``--tp`` on vLLM, which cannot launch it: its
    ``--enable-expert-parallel`` makes EP = TP x DP, every GPU of the TP group an EP rank (vllm-project/vllm@00c1c6a
    vllm/model_executor/layers/fused_moe/config.py ``FusedMoEParallelConfig.make``). TensorRT-LLM and SGLang run it
    (EP x expert TP = TP: :func:`~anchorgpu.planner.memory.serving_expert_tp`).

    >>> vllm_ep_below_tp_refusal(2, 8, "default")[:60]
    '--ep 2 with TP 8 on vLLM (the default engine): its --enable-'
    """
    which = {"default": "vLLM (the default engine)", "recipe": "vLLM (the recipe's engine)"}.get(engine_source, "vLLM")
    return (said("--ep {ep} with TP {tp} on {which}: its --enable-expert-parallel splits the experts over EP = TP "
                 "x DP, so an EP smaller than TP does not launch; give --engine trtllm or sglang (EP {ep} x "
                 "expert TP {value}), --ep {tp} or --tp {ep} (EP equal to TP), an EP wider than TP (attention "
                 "data parallelism), or leave --ep out", ep=ep, tp=tp, which=which, value=tp // ep))


def trtllm_attention_dp_tp_refusal(ep: int, tp: int, engine_source: str) -> str:
    """The one line refusing, on TensorRT-LLM, a serving EP wider than a TP of 2 or more: EP wider than TP is
    attention data parallelism, which TensorRT-LLM runs as ``enable_attention_dp`` with each GPU's attention alone
    (its ``Mapping`` gives the attention a TP size of 1 under attention DP), so replicas of TP 2 or more with the
    experts over all their GPUs do not launch there. The chooser and recommend's sweep never try them
    (:func:`~anchorgpu.planner.speed.serving_layouts.attention_dp_tp_sizes`) and ``--recipe trtllm`` refuses them
    (:mod:`anchorgpu.recipes.serving`); vLLM and SGLang run attention replicas of TP 2 or 4.

    >>> trtllm_attention_dp_tp_refusal(8, 2, "given")[:72]
    '--ep 8 with TP 2 on TensorRT-LLM: an EP wider than TP is attention data '
    """
    which = said("TensorRT-LLM (the recipe's engine)") if engine_source == "recipe" else "TensorRT-LLM"
    return said("--ep {ep} with TP {tp} on {which}: an EP wider than TP is attention data parallelism, whose "
                "enable_attention_dp runs each GPU's attention alone (TP 1), so attention replicas of TP {tp} do not "
                "launch; give --tp 1 (TP 1 replicas, EP {ep}), --ep {tp} (EP inside TP), or --engine vllm or sglang",
                ep=ep, tp=tp, which=which)
