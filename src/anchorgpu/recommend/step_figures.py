"""The figures of a training step that ``plan`` reports and the sweep does not keep: model TFLOP/s per GPU
(``train_tflops_per_gpu``), MFU (``train_mfu``), each with its roofline ceiling, and the step's parts in seconds
(``step_time_breakdown_s``), for one shown row of a training recommendation (issue 11 item 6's per-result contract).

The vectorised sweep times each layout's throughput only; a shown row is planned again here, one by one, as
:mod:`~anchorgpu.recommend.ceilings` plans a serving row: ``plan`` with the row's layout, weights, micro-batch and
recompute (and the offering's network where the row crosses one), its ``performance`` read where ``plan`` states the
row's servers (one server, or servers of the 8 GPUs it takes a server to hold); a row on several servers of another
size (1-GPU VMs) is timed as the sweep timed it, by :func:`~anchorgpu.planner.speed.training.training_step` on the
shape's own servers and network, with the layout ``plan`` resolved. Called only for the rows a JSON answer renders
(:func:`~anchorgpu.recommend.render.recommendation_to_json`), never over the sweep. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import RECOMPUTES, Layout, PrecisionPlan
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.serving_setup import SERVER_GPUS

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec
    from anchorgpu.recommend.records import RecommendedOption

__all__ = ["STEP_FIGURES", "step_figures_of", "training_step_figures"]

STEP_FIGURES = ("train_tflops_per_gpu", "train_mfu")
"""The banded figures read here (each with its ``_ceiling``); beside them the unbanded ``step_time_breakdown_s``."""


def step_figures_of(model: ModelSpec, spec: SweepSpec, shapes: Sequence[HardwareShape],
                    ) -> Callable[[RecommendedOption], Mapping[str, Any]]:
    """What a training recommendation keeps to give a shown option's step figures when its JSON is rendered
    (:attr:`~anchorgpu.recommend.records.Recommendation.step_figures`): :func:`training_step_figures` of the option's
    row on its shape, once per option."""
    by_id = {shape.id: shape for shape in shapes}
    done: dict[int, Mapping[str, Any]] = {}

    def figures(o: RecommendedOption) -> Mapping[str, Any]:
        found = done.get(id(o))
        if found is None:
            found = done[id(o)] = training_step_figures(model, spec, by_id[o.config["shape"]], o.config, o.servers,
                                                        o.network_gbit_per_s_per_gpu)
        return found

    return figures


def training_step_figures(model: ModelSpec, spec: SweepSpec, shape: HardwareShape, row: Mapping[str, Any],
                          servers: int, network_gbit_per_s_per_gpu: float | None) -> dict[str, Any]:
    """``train_tflops_per_gpu``, ``train_mfu`` (each with ``_ceiling``) and ``step_time_breakdown_s`` of one
    training row on ``servers`` of ``shape``, as ``plan`` gives them for the row's layout (the module docstring);
    ``network_gbit_per_s_per_gpu``: the offering's network where the row crosses one (the option's). Empty where
    ``plan`` refuses the row (none the sweep keeps)."""
    w = evolve(spec.workload, global_batch_tokens=spec.global_batch_tokens, micro_batch=int(row["concurrency"]),
               recompute=RECOMPUTES[int(row["recompute"])])
    if network_gbit_per_s_per_gpu is not None:  # timed over the offering's network, as the sweep timed the row
        w = evolve(w, network_gbit_per_s_per_gpu=network_gbit_per_s_per_gpu)
    layout = Layout(gpus=int(row["gpus"]), tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]),
                    ep=int(row.get("ep", 1)), cp=int(row.get("cp", 1)), zero=int(row["zero"]),
                    virtual_stages=int(row.get("virtual_stages") or 1), pipeline_layout=row.get("pipeline_layout"),
                    offload=row.get("offload") or "none")
    try:
        p = plan(model, w, precision=PrecisionPlan(weights=row["weights"]), layout=layout, gpu=shape.gpu,
                 overheads=spec.overheads, suggest=False, choose_layout=False, efficiencies=spec.efficiencies)
        if servers == 1 or shape.gpus_per_server == SERVER_GPUS:  # plan states these servers: its own figures
            from anchorgpu.planner.speed.estimate import plan_performance

            perf = plan_performance(p, mfu=spec.efficiencies.mfu, mbu=spec.efficiencies.mbu)
            out = {key: perf[key] for name in STEP_FIGURES for key in (name, f"{name}_ceiling")}
            out["step_time_breakdown_s"] = dict(perf["step_time_breakdown_s"])
            return out
        return _on_shape(model, spec, shape, p)
    except InvalidWorkload:
        return {}


def _on_shape(model: ModelSpec, spec: SweepSpec, shape: HardwareShape, p: Any) -> dict[str, Any]:
    """The step of plan ``p``'s resolved layout timed on the shape's own servers and network, as the sweep timed the
    row (``sweep_training._Steps.speed``'s arguments), its figures formed as ``plan``'s estimate forms them
    (``speed.estimate._training``: MFU's ceiling the ceiling rate's model FLOPs over the peak)."""
    from anchorgpu.planner.inputs import default_seq_tokens
    from anchorgpu.planner.speed.flops import train_kind
    from anchorgpu.planner.speed.links import compute_precision_for_training
    from anchorgpu.planner.speed.overrides import calibrated
    from anchorgpu.planner.speed.pipeline import default_batch_tokens, pipeline_schedule, timed_batch_tokens
    from anchorgpu.planner.speed.training import training_step

    w, lay = p.workload, p.layout
    seq, mb = default_seq_tokens(w, model.max_context_tokens), w.micro_batch or 1
    st = training_step(
        model, shape.gpu, lay, seq, mb,
        global_batch_tokens=timed_batch_tokens(w.global_batch_tokens, dp=lay.dp, micro_batch=mb, seq_tokens=seq,
                                               default_tokens=default_batch_tokens(w.task, seq)),
        recompute=w.recompute or "none", kind=train_kind(w.task),
        precision=compute_precision_for_training(w.train_precision), gpus_per_server=shape.gpus_per_server,
        network_bytes_per_s=shape.network_bytes_per_s, grad_bytes_per_value=w.grad_bytes_per_value,
        cal=calibrated(spec.efficiencies), train_stack=w.train_stack,
        offload_activation_layers=w.offload_activation_layers, optimizer_state=w.optimizer_state,
        schedule=pipeline_schedule(w.task, w.train_stack), base_format=p.precision.weights or "")
    mfu_top = st.ceiling_tokens_per_s * st.model_flops_per_token / (lay.gpus * st.peak_flops_per_s)
    return {"train_tflops_per_gpu": st.tflops_per_gpu, "train_tflops_per_gpu_ceiling": mfu_top * st.peak_flops_per_s / 1e12,
            "train_mfu": st.mfu, "train_mfu_ceiling": mfu_top, "step_time_breakdown_s": dict(st.breakdown_s)}
