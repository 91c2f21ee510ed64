"""QLoRA's frozen base under tensor parallelism or interleaved pipeline stages: no public training stack runs either,
so no plan, chooser or sweep does.

QLoRA's base is bitsandbytes' 4-bit ``Linear4bit`` (NF4 with a block-wise absmax per 64 weights, quantized and
packed as one flat tensor), trained through PEFT: the launches that spread it over GPUs shard it with FSDP, not
tensor parallelism (huggingface/accelerate PR #1458 and huggingface/peft PR #476, "4-bit QLoRA via bitsandbytes";
hiyouga/LLaMA-Factory ``examples/extras/fsdp_qlora/train.sh`` runs FSDP + QLoRA through ``accelerate``). torchtune's
QLoRA (NF4 via torchao) runs under FSDP in its distributed recipe; torchtitan's QLoRA (NF4 via torchao, with
DTensor) is an open pull request (pytorch/torchtitan #2487, "[3/N] Support qlora by nf4tensor", open at 2026-03-05);
Megatron-Core itself has no 4-bit frozen layers; NeMo 1.x's QLoRA over Megatron-Core swaps its linears for an NF4
wrapper (ModelOpt, not bitsandbytes) whose docstring says "Tensor Parallel is not supported" (NVIDIA/NeMo
``nemo/collections/nlp/modules/common/megatron/adapters/qlora.py``, ``NF4LinearWrapper``), so the Megatron stack's
QLoRA is planned, at TP 1. The one 4-bit tensor-parallel wrapper found,
BlackSamorez/tensor_parallel, serves 4-bit models but its issue #79 ("Not work with 4bit quant", open) shows PEFT
LoRA training failing under it; PaddleFormers added tensor parallelism to its own NF4 QLoRA
(PaddlePaddle/PaddleFormers PR #2424, 2025-07-29), a PaddlePaddle stack, neither bitsandbytes nor one this
planner times.

Interleaved virtual stages: the layouts QLoRA's public launches run over several GPUs are data parallel (DDP,
FSDP-QLoRA: bitsandbytes ``docs/source/fsdp_qlora.md``, answer.ai's 2024-03-06 release; DeepSpeed ZeRO-1/2/3:
huggingface/peft ``docs/source/accelerate/deepspeed.md``, "Use PEFT QLoRA and DeepSpeed with ZeRO3") or the base
split layer-wise with ``device_map="auto"`` (transformers/accelerate big-model loading, which the 4-bit integration
relies on: huggingface/blog PR #1138, "any model that supports accelerate loading ... should be quantizable in
4bit"), whose stages run one after another with no micro-batch overlap. None runs interleaved chunks: torchtitan's
QLoRA is the open PR above, and NeMo's PEFT refuses a virtual pipeline outright (NVIDIA/NeMo, PEFT ``add_adapter``:
"Virtual pipeline model parallel is not supported when using PEFT").

Pipeline stages on the PyTorch stack: accelerate refuses to train a 4-bit (or 8-bit) model whose ``hf_device_map``
spans several devices "in any distributed mode", and names the way that remains: "Naive Pipeline Parallelism", one
process that runs the GPUs' layers in turn (huggingface/accelerate@9f71f0b8 ``src/accelerate/accelerator.py``,
``prepare_model``). So a QLoRA plan with stages on that stack is one process on one machine: DP 1, every GPU a stage
(:func:`device_map_refusal`), timed one stage after another (:func:`~anchorgpu.planner.speed.pipeline.pipeline_schedule`).
PyTorch's FSDP refuses a module on several devices outright ("FSDP only supports single device modules",
``torch/distributed/fsdp/_init_utils.py``). Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.errors import said

__all__ = ["device_map_refusal", "qlora_interleaving_refusal", "qlora_tp_refusal", "stages_alone",
           "task_interleaves", "task_runs_tp"]


def task_runs_tp(task: str) -> bool:
    """Whether a training search may try tensor parallelism for ``task``: not QLoRA (module docstring).

    >>> task_runs_tp("train"), task_runs_tp("lora"), task_runs_tp("qlora")
    (True, True, False)
    """
    return task != "qlora"


def qlora_tp_refusal(task: str, tp: int | None) -> str | None:
    """The one-line refusal of a stated TP above 1 for QLoRA, else None.

    >>> print(qlora_tp_refusal("qlora", 2))  # doctest: +ELLIPSIS
    --tp 2 with --task qlora: no public stack runs bitsandbytes' 4-bit base under tensor parallelism ...
    >>> qlora_tp_refusal("qlora", 1), qlora_tp_refusal("lora", 8), qlora_tp_refusal("qlora", None)
    (None, None, None)
    """
    if task != "qlora" or tp is None or tp <= 1:
        return None
    return (said("--tp {tp} with --task qlora: no public stack runs bitsandbytes' 4-bit base under tensor "
                 "parallelism (PEFT, accelerate and torchtune shard QLoRA with FSDP); leave --tp out or give --tp "
                 "1, or use --task lora", tp=tp))


def task_interleaves(task: str) -> bool:
    """Whether a training search may try interleaved virtual stages for ``task``: not QLoRA (module docstring).

    >>> task_interleaves("train"), task_interleaves("lora"), task_interleaves("qlora")
    (True, True, False)
    """
    return task != "qlora"


def qlora_interleaving_refusal(task: str, virtual_stages: int | None, stated_by: str | None = None) -> str | None:
    """The one-line refusal of stated interleaved virtual stages (above 1) for QLoRA, else None; ``stated_by``: the
    flag that stated them where not ``--virtual-stages`` (``--pipeline-layout``, its chunks a stage).

    >>> print(qlora_interleaving_refusal("qlora", 2))  # doctest: +ELLIPSIS
    --virtual-stages 2 with --task qlora: no public stack interleaves pipeline stages over a 4-bit base ...
    >>> print(qlora_interleaving_refusal("qlora", 2, "--pipeline-layout"))  # doctest: +ELLIPSIS
    --pipeline-layout (2 chunks a stage) with --task qlora: no public stack interleaves pipeline stages over ...
    >>> qlora_interleaving_refusal("qlora", 1), qlora_interleaving_refusal("lora", 4), qlora_interleaving_refusal(
    ...     "qlora", None)
    (None, None, None)
    """
    if task != "qlora" or not isinstance(virtual_stages, int) or virtual_stages <= 1:
        return None
    stated = f"--virtual-stages {virtual_stages}" if stated_by is None else f"{stated_by} ({virtual_stages} chunks a stage)"
    fix = "leave --virtual-stages out or give 1" if stated_by is None else f"give {stated_by} one chunk a stage"
    return (said("{stated} with --task qlora: no public stack interleaves pipeline stages over a 4-bit base (PEFT "
                 "runs QLoRA data-parallel or split layer-wise with device_map, NeMo's PEFT refuses a virtual "
                 "pipeline); {fix}, or use --task lora", stated=stated, fix=fix))


def stages_alone(task: str, train_stack: str) -> bool:
    """Whether pipeline stages run only as one process on one machine for ``task`` on ``train_stack`` (QLoRA on the
    PyTorch stack: accelerate's ``device_map``, module docstring): a search tries PP above 1 only with DP 1 and no
    more stages than a server's GPUs.

    >>> stages_alone("qlora", "pytorch"), stages_alone("qlora", "megatron"), stages_alone("lora", "pytorch")
    (True, False, False)
    """
    return task == "qlora" and train_stack == "pytorch"


def device_map_refusal(task: str, train_stack: str, pp: int, dp: int, server_gpus: int) -> str | None:
    """The one-line refusal of QLoRA pipeline stages on the PyTorch stack that accelerate would not train: with data
    parallelism (any distributed mode), or more stages than one server's GPUs (``device_map`` places the layers on one
    process's GPUs); else None.

    >>> print(device_map_refusal("qlora", "pytorch", 4, 2, 8))  # doctest: +ELLIPSIS
    --pp 4 with DP 2 for --task qlora on the PyTorch stack: accelerate refuses to train a 4-bit model split over ...
    >>> print(device_map_refusal("qlora", "pytorch", 16, 1, 8))  # doctest: +ELLIPSIS
    --pp 16 for --task qlora on the PyTorch stack: device_map places the layers on one process's GPUs, ...
    >>> device_map_refusal("qlora", "pytorch", 4, 1, 8), device_map_refusal("qlora", "megatron", 4, 2, 8)
    (None, None)
    """
    if not stages_alone(task, train_stack) or pp <= 1:
        return None
    fix = "or --train-stack megatron (NeMo's QLoRA runs 1F1B pipeline stages with data parallelism)"
    if dp > 1:
        return (said("--pp {pp} with DP {dp} for --task qlora on the PyTorch stack: accelerate refuses to train a "
                     "4-bit model split over several GPUs in any distributed mode (it runs such a model as naive "
                     "pipeline parallelism, one process); give --dp 1 (--gpus {pp}), --pp 1 (FSDP-QLoRA or DDP), "
                     "{fix}", pp=pp, dp=dp, fix=fix))
    if pp > server_gpus:
        return (said("--pp {pp} for --task qlora on the PyTorch stack: device_map places the layers on one "
                     "process's GPUs, and a server holds {server_gpus}; give --pp {server_gpus} or fewer, --pp 1 "
                     "(FSDP-QLoRA over the servers), {fix}", pp=pp, server_gpus=server_gpus, fix=fix))
    return None
