"""QLoRA's frozen base under tensor parallelism: no public training stack runs it, so no plan, chooser or sweep does.

QLoRA's base is bitsandbytes' 4-bit ``Linear4bit`` (NF4 with a block-wise absmax per 64 weights, quantized and
packed as one flat tensor), trained through PEFT: the launches that spread it over GPUs shard it with FSDP, not
tensor parallelism (huggingface/accelerate PR #1458 and huggingface/peft PR #476, "4-bit QLoRA via bitsandbytes";
hiyouga/LLaMA-Factory ``examples/extras/fsdp_qlora/train.sh`` runs FSDP + QLoRA through ``accelerate``). torchtune's
QLoRA (NF4 via torchao) runs under FSDP in its distributed recipe; torchtitan's QLoRA (NF4 via torchao, with
DTensor) is an open pull request (pytorch/torchtitan #2487, "[3/N] Support qlora by nf4tensor", open at 2026-03-05);
Megatron-Core has no 4-bit frozen layers. The one 4-bit tensor-parallel wrapper found,
BlackSamorez/tensor_parallel, serves 4-bit models but its issue #79 ("Not work with 4bit quant", open) shows PEFT
LoRA training failing under it; PaddleFormers added tensor parallelism to its own NF4 QLoRA
(PaddlePaddle/PaddleFormers PR #2424, 2025-07-29), a PaddlePaddle stack, neither bitsandbytes nor one this
planner times. Pure; stdlib only.
"""

from __future__ import annotations

__all__ = ["qlora_tp_refusal", "task_runs_tp"]


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
    return (f"--tp {tp} with --task qlora: no public stack runs bitsandbytes' 4-bit base under tensor parallelism "
            "(PEFT, accelerate and torchtune shard QLoRA with FSDP); leave --tp out or give --tp 1, or use --task lora")
