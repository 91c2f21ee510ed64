"""Training flags a stack, a task or the layout search rules out whatever the layout: refused in one line before a
layout is chosen (a search would drop every candidate and, with the GPU count open, the plain layout planned in its
place refused for another reason, naming a flag that was not the cause) and again on the layout resolved
(:func:`~anchorgpu.planner.layout_checks.check_layout_for_model`, ``resolve_layout``). Pure."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.inputs import Layout, Workload
from anchorgpu.planner.qlora_tp import qlora_interleaving_refusal, qlora_tp_refusal
from anchorgpu.planner.sequence_parallel import stated_off_refusal
from anchorgpu.planner.speed.pipeline import chunks_refusal, counts_embedding_and_loss

__all__ = ["training_checks", "undivided_interleaving_refusal", "unstaged_interleaving_refusal"]


def unstaged_interleaving_refusal(layout: Layout, train_stack: str) -> str | None:
    """Why ``--virtual-stages`` (no ``--pp``) cannot run with the ZeRO stage or FSDP given, or None: interleaving needs
    pipeline stages, and the layout search tries that sharding with none on this stack
    (:func:`~anchorgpu.planner.speed.layouts.sharded_with_stages`; Megatron-FSDP runs no pipeline stages,
    :func:`~anchorgpu.planner.layout_checks.sharded_pipeline_refusal`). Left to the search, no candidate exists, and with the GPU count open the
    plain layout planned in its place refused "--virtual-stages 3 needs pipeline parallelism".

    >>> print(unstaged_interleaving_refusal(Layout(virtual_stages=3, zero=3), "megatron"))  # doctest: +ELLIPSIS
    --virtual-stages 3 with --zero 3: interleaving needs pipeline stages, and Megatron-FSDP (the Megatron stack's ...
    >>> unstaged_interleaving_refusal(Layout(virtual_stages=3, zero=1), "megatron"), unstaged_interleaving_refusal(
    ...     Layout(virtual_stages=3, zero=3), "pytorch"), unstaged_interleaving_refusal(Layout(virtual_stages=3, zero=3,
    ...     pp=2), "megatron")
    (None, None, None)
    """
    v = layout.virtual_stages
    if v is None or layout.pp is not None:  # the usual case: no interleaving asked, or its stages given
        return None
    from anchorgpu.planner.speed.layouts import sharded_with_stages

    zero = 3 if layout.fsdp else layout.zero
    if not isinstance(v, int) or v < 2 or zero is None or zero not in (0, 1, 2, 3) \
            or sharded_with_stages(zero, train_stack):
        return None
    flag = "--fsdp" if layout.fsdp else f"--zero {zero}"
    if train_stack == "megatron" and zero == 3:
        return (said("--virtual-stages {v} with {flag}: interleaving needs pipeline stages, and Megatron-FSDP "
                     "(the Megatron stack's {flag}) runs none; give --zero 1 (Megatron-Core's distributed "
                     "optimizer runs with stages), --train-stack pytorch (FSDP2 under pipeline stages), or drop "
                     "--virtual-stages", v=v, flag=flag))
    if train_stack == "megatron":
        return (said("--virtual-stages {v} with --zero 2: interleaving needs pipeline stages, and Megatron's "
                     "ZeRO-2 is Megatron-FSDP (optim_grads), which runs none; give --zero 1, or drop "
                     "--virtual-stages", v=v))
    return (said("--virtual-stages {v} with --zero 2: interleaving needs pipeline stages, and the layout search "
                 "tries ZeRO-2 with none on the PyTorch stack (no public launcher runs it); give --zero 1 or 3, "
                 "--pp with the stages, or drop --virtual-stages", v=v))


def undivided_interleaving_refusal(model: ModelSpec, layout: Layout) -> str | None:
    """Why ``--virtual-stages`` with ``--pp`` open (and no ``--pipeline-layout``) has no pipeline depth to run on, or
    None: none of the depths the layout search tries (:func:`~anchorgpu.planner.train_sizes.train_pp_sizes`) splits the
    model's layers into PP x v even chunks (counting the embedding and the loss as layers or not), the rule
    :func:`~anchorgpu.planner.layout_resolution.resolve_layout` applies to the layout given. DeepSeek-V3's 61 layers (63 counted so) and v 3 need a depth
    dividing 21, and the search tries powers of two.

    >>> from anchorgpu.architectures import load_model
    >>> print(undivided_interleaving_refusal(load_model("deepseek-v3"), Layout(virtual_stages=3)))  # doctest: +ELLIPSIS
    --virtual-stages 3: no pipeline depth the layout search tries (2, 4, 8, 16, 32) splits the 61 layers of ...
    >>> undivided_interleaving_refusal(load_model("llama-3.1-70b"), Layout(virtual_stages=5)) is None
    True
    """
    v, layers = layout.virtual_stages, model.num_layers
    if not isinstance(v, int) or v < 2 or layout.pp is not None or layout.pipeline_layout is not None:
        return None
    from anchorgpu.planner.train_sizes import train_pp_sizes

    gpus = layout.gpus if isinstance(layout.gpus, int) and layout.gpus > 0 else None
    depths = [pp for pp in train_pp_sizes(layers, gpus) if pp > 1]
    if not depths or any((layers % (pp * v) == 0 or counts_embedding_and_loss(layers, pp, v))
                         and chunks_refusal(pp, v, layers, model.name) is None for pp in depths):
        return None  # no depth at all (one GPU): the search's own refusal says so
    return (said("--virtual-stages {v}: no pipeline depth the layout search tries ({str}) splits the {layers} "
                 "layers of {model_name} into PP x {v} even chunks, nor {value} with the embedding and the loss "
                 "counted as layers; give another --virtual-stages, or --pp with --pipeline-layout", v=v,
                 str=', '.join(map(str, depths)), layers=layers, model_name=model.name, value=layers + 2))


def training_checks(layout: Layout, workload: Workload) -> None:
    """Refuse the training flags the stack or the task rules out whatever the layout: ``--no-sequence-parallel`` on
    the PyTorch stack (:func:`~anchorgpu.planner.sequence_parallel.stated_off_refusal`) and a TP above 1 with QLoRA
    (:func:`~anchorgpu.planner.qlora_tp.qlora_tp_refusal`) or interleaved virtual stages with it
    (:func:`~anchorgpu.planner.qlora_tp.qlora_interleaving_refusal`). Before a layout is chosen (the search would otherwise
    drop every candidate and refuse for another reason) and again on the layout resolved."""
    if workload.task not in ("train", "lora", "qlora"):
        return
    refusal = (stated_off_refusal(layout.sequence_parallel, workload.train_stack)
               or qlora_tp_refusal(workload.task, layout.tp)
               or qlora_interleaving_refusal(workload.task, layout.virtual_stages))
    if refusal is not None:
        raise InvalidWorkload(refusal)
