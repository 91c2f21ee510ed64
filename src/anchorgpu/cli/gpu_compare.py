"""``anchorgpu gpus compare A B [--model M ...]``: two GPUs side by side, the model's speeds predicted on each, and
with ``--model`` what fits of it (the weights or training states per GPU, and the full plan from the planner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchorgpu.cli._app import emit_json
from anchorgpu.cli.hardware import price_per_gpu_hour, wide_console
from anchorgpu.errors import AnchorError, InvalidInput
from anchorgpu.planner.inputs import task_hint
from anchorgpu.validation import bounded_int

if TYPE_CHECKING:
    from anchorgpu.hardware import GpuSpec, Workload

__all__ = ["compare"]


TASKS = ("inference", "training", "lora", "qlora")
TASK_ALIASES = {"train": "training"}  # plan's own spelling (`plan --task train`) names the same comparison
TRAINING_LIKE = ("training", "lora", "qlora")  # a training step: model states held, --seq the sequence
FINE_TUNE_WEIGHTS = {"lora": "bf16", "qlora": "nf4-dq"}
"""The frozen base's format of each fine-tuning task, as ``anchorgpu plan --task lora|qlora`` holds it by default."""
DEFAULT_CONTEXT_TOKENS = 8192
"""Tokens a sequence of the full plan holds without --context (capped at the model's own limit)."""
# Bytes per parameter of the weights at each precision (no quantization scales: a lower bound for fp4/int8).
WEIGHT_BYTES_PER_PARAM: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
# Mixed-precision Adam: 2 B bf16 weights + 2 B grads + 12 B fp32 master, momentum, variance (ZeRO paper, SC'20, Fig. 1).
TRAINING_BYTES_PER_PARAM = 16


def _workload(model: str, task: str, precision: str | None) -> Workload:
    from anchorgpu.architectures import DiffusionPipelineSpec, load_model
    from anchorgpu.hardware import Workload

    if task not in TASKS:
        raise InvalidInput(f"--task must be one of {', '.join(TASKS)}, got {task!r}{task_hint(task)}")  # serve: inference
    if precision is not None and precision not in WEIGHT_BYTES_PER_PARAM:
        raise InvalidInput(f"--precision must be one of {', '.join(WEIGHT_BYTES_PER_PARAM)}, got {precision!r}")
    spec = load_model(model)
    total = spec.params_total
    if task in FINE_TUNE_WEIGHTS and not isinstance(spec, DiffusionPipelineSpec):
        return _fine_tune_workload(spec, task)
    if precision is None and not isinstance(spec, DiffusionPipelineSpec) and task != "training":
        shipped = _shipped_weights(spec)
        if shipped is not None:  # a quantized checkpoint: its own bytes, as the planner counts them
            name, weight_bytes = shipped
            return Workload(
                name=spec.name,
                task=task,
                resident_bytes=weight_bytes,
                resident_label=f"weights in {name} as the checkpoint ships them "
                               f"({weight_bytes / total:.2f} bytes a parameter on average, scales included)",
                decode_bytes_per_token=round(spec.params_active * weight_bytes / total),
            )
    precision = precision or "bf16"
    if isinstance(spec, DiffusionPipelineSpec):
        if task != "inference":
            raise InvalidInput(f"{spec.name} is a diffusion pipeline: compare it for image generation (--task inference)")
        per_param = WEIGHT_BYTES_PER_PARAM[precision]
        return Workload(
            name=spec.name,
            task="diffusion",
            resident_bytes=round(total * per_param),
            resident_label=f"weights of every component at {precision}",
        )
    active = spec.params_active
    if task == "training":
        return Workload(
            name=spec.name,
            task=task,
            resident_bytes=total * TRAINING_BYTES_PER_PARAM,
            resident_label=f"model states for mixed-precision Adam training ({TRAINING_BYTES_PER_PARAM} bytes/parameter)",
        )
    per_param = WEIGHT_BYTES_PER_PARAM[precision]
    return Workload(
        name=spec.name,
        task=task,
        resident_bytes=round(total * per_param),
        resident_label=f"weights at {precision} ({per_param:g} byte{'' if per_param == 1 else 's'}/parameter"
        + (", scales not counted)" if per_param < 2 else ")"),
        decode_bytes_per_token=round(active * per_param),
    )


def _fine_tune_workload(spec: Any, task: str) -> Workload:
    """LoRA or QLoRA: the frozen base weights in the format ``plan`` holds them (bf16; QLoRA's nf4-dq with its
    scales, as :func:`~anchorgpu.planner.terms.split_weights_bytes` counts them), the adapters' small states not
    counted (``plan`` gives them)."""
    from anchorgpu.hardware import Workload
    from anchorgpu.planner.formats import get_format
    from anchorgpu.planner.terms import split_weights_bytes

    name = FINE_TUNE_WEIGHTS[task]
    weight_bytes = split_weights_bytes(spec, get_format(name), 1, 1, 1)[0]
    return Workload(
        name=spec.name,
        task=task,
        resident_bytes=weight_bytes,
        resident_label=f"frozen base weights for {'QLoRA' if task == 'qlora' else 'LoRA'} in {name} "
                       f"({weight_bytes / spec.params_total:.2f} bytes a parameter; the adapters and their optimizer "
                       "states not counted)",
    )


PLANNER_FORMAT = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "fp4": "mxfp4"}


def _shipped_weights(spec: Any) -> tuple[str, int] | None:
    """(format name, the whole model's weight bytes) of a checkpoint that ships quantized, as ``anchorgpu plan``
    stores it by default (``quantization_config``); None for a 16-bit checkpoint (then bf16, 2 bytes a parameter)."""
    from anchorgpu.planner.formats import shipped_format
    from anchorgpu.planner.terms import split_weights_bytes

    fmt = shipped_format(spec)
    if not fmt.quantized:
        return None
    return fmt.name, split_weights_bytes(spec, fmt, 1, 1, 1)[0]


def _planned(model: str, gpus: tuple[GpuSpec, ...], *, task: str, precision: str | None,
             context_tokens: int | None) -> dict[str, Any] | None:
    """Full per-GPU plans from ``anchorgpu.planner`` (when it is there): one GPU, and the fewest GPUs that fit:
    what ``anchorgpu plan`` answers without ``--gpus`` (serving: the fewest that hold the sequences, TP inside a
    server, then PP; training: the fewest that hold the job, with the layout chosen on them). A diffusion pipeline
    is planned whole on one GPU.
    """
    try:
        from anchorgpu.planner import Layout, PrecisionPlan, plan
        from anchorgpu.planner import Workload as PlanWorkload
    except ImportError:
        return None
    from anchorgpu.architectures import DiffusionPipelineSpec, ModelSpec, load_model
    from anchorgpu.planner.formats import shipped_format

    spec = load_model(model)
    diffusion = isinstance(spec, DiffusionPipelineSpec)
    if diffusion and context_tokens is not None:
        raise InvalidInput(f"--context applies to a language model; {spec.name} is a diffusion pipeline (planned at "
                           "its own resolution)")
    if context_tokens is None:  # the default never asks for more than the model holds (Whisper's decoder: 448)
        context_tokens = min(DEFAULT_CONTEXT_TOKENS, spec.max_context_tokens) if isinstance(spec, ModelSpec) \
            else DEFAULT_CONTEXT_TOKENS
    elif isinstance(spec, ModelSpec) and context_tokens > spec.max_context_tokens:  # as plan refuses it: not "no layout fits"
        flag = "--seq" if task in TRAINING_LIKE else "--context"
        raise InvalidInput(f"--context {context_tokens:,} exceeds {spec.name}'s limit of {spec.max_context_tokens:,} "
                           f"tokens (plan a longer one with 'anchorgpu plan {spec.name} {flag} {context_tokens} "
                           "--allow-long-context')")
    if diffusion:
        task = "diffusion"
        workload = PlanWorkload(task="diffusion")
        precision_plan = PrecisionPlan(weights=PLANNER_FORMAT[precision or "bf16"])
    elif task in TRAINING_LIKE:  # the frozen base of LoRA and QLoRA as plan holds it by default
        workload = PlanWorkload(task="train" if task == "training" else task, seq_tokens=context_tokens)  # type: ignore[arg-type]
        precision_plan = PrecisionPlan()
    else:
        workload = PlanWorkload(task="inference", context_tokens=context_tokens, engine_source="default")
        # no --precision: the checkpoint's shipped format, as `anchorgpu plan` answers without --weights
        precision_plan = PrecisionPlan(weights=PLANNER_FORMAT[precision]) if precision else PrecisionPlan()
    from anchorgpu.planner.speed.serving_layouts import SERVING_GPU_COUNTS
    from anchorgpu.planner.training_gpu_counts import TRAINING_GPU_COUNTS

    # the counts the planner tries on its own (a diffusion pipeline: whole on one GPU)
    counts = (1,) if diffusion else TRAINING_GPU_COUNTS if task in TRAINING_LIKE else SERVING_GPU_COUNTS
    result: dict[str, Any] = {}
    for gpu in gpus:
        one: dict[str, Any] | None = None
        needed: int | None = None
        refused: str | None = None  # plan's one-line refusal on this GPU (the engine cannot load the format there)
        try:  # the planner's own answer without a GPU count, as `anchorgpu plan` gives it
            chosen = plan(spec, workload, precision=precision_plan, gpu=gpu, suggest=False)
            needed = chosen.layout.gpus if chosen.fits else None
        except AnchorError as exc:
            refused = str(exc)
        try:  # one GPU, for the table
            planned = plan(spec, workload, precision=precision_plan, layout=Layout(gpus=1), gpu=gpu, suggest=False)
            one = {
                "fits": planned.fits,
                "total_bytes": planned.per_gpu.total_bytes,
                "budget_bytes": planned.budget_bytes,
                "headroom_bytes": planned.headroom_bytes,
                "max_concurrency": planned.max_concurrency,
                "warnings": [w.code for w in planned.warnings],
            }
        except AnchorError:
            pass
        result[gpu.name] = {"one_gpu": one, "gpus_needed": needed, "refused": refused if one is None else None}
    return {
        "model": spec.name,
        "context_tokens": context_tokens,
        "task": task,
        "weights_format": precision_plan.weights or FINE_TUNE_WEIGHTS.get(task) or (
            f"{shipped_format(spec).name}, as the checkpoint ships it" if isinstance(spec, ModelSpec)
            and task != "training" else "bf16"),
        "layout": {
            **dict.fromkeys(TRAINING_LIKE, "chosen for the user on the fewest GPUs that hold the job (as plan without "
                                           "--gpus)"),
            "diffusion": "one whole pipeline per GPU",
        }.get(task, "chosen for the user: the fewest GPUs that hold the sequences (as plan without --gpus)"),
        "tried_gpu_counts": list(counts),
        "per_gpu": result,
    }


def _plan_statements(planned: dict[str, Any]) -> list[str]:
    from anchorgpu.units import GIB

    out = []
    for name, entry in planned["per_gpu"].items():
        one = entry["one_gpu"]
        needed = entry["gpus_needed"]
        if one is not None and one["fits"]:
            extra = f", up to {one['max_concurrency']:,} sequences at once" if one.get("max_concurrency") else ""
            text = f"on one {name} it fits with {one['headroom_bytes'] / GIB:,.1f} GiB to spare{extra}"
        elif one is not None:
            short = -one["headroom_bytes"] / GIB if one["headroom_bytes"] is not None else 0.0
            text = f"on one {name} it does not fit ({short:,.1f} GiB short)"
            if needed:
                text += f"; it needs {needed} GPUs"
            elif len(planned["tried_gpu_counts"]) > 1:
                text += f"; not even {planned['tried_gpu_counts'][-1]} GPUs are enough"
        else:
            text = (f"on {name} it needs {needed} GPUs" if needed else f"on {name} it is refused: {entry['refused']}"
                    if entry.get("refused") else f"on {name} no tried layout fits")
        out.append(text)
    if planned["task"] == "diffusion":
        what = f"diffusion at the pipeline's default resolution, weights {planned['weights_format']}"
    else:
        length = "context" if planned["task"] == "inference" else "sequence"  # a training sequence is plan's --seq
        what = f"{planned['task']}, {length} {planned['context_tokens']:,} tokens, weights {planned['weights_format']}"
    first = next(iter(planned["per_gpu"]))
    task = "train" if planned["task"] == "training" else planned["task"]
    asked = "" if task == "diffusion" else (f" --task {task} --seq {planned['context_tokens']}" if task != "inference"
                                            else f" --context {planned['context_tokens']}")
    hint = f"'anchorgpu plan {planned['model']}{asked} --gpu {first}'"
    return [f"Full plan ({what}): " + "; ".join(out) + f". Details: {hint}."]


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def _metric_value(metric: str, value: Any, unit: str, status: str, uncertain: bool) -> str:
    from anchorgpu.hardware.display import fmt_number
    from anchorgpu.units import GIB

    if value is None:
        return status
    mark = "?" if uncertain else ""
    if unit == "bytes":
        return f"{fmt_number(value / GIB)} GiB"
    if unit == "bytes/s" and metric == "memory_bandwidth_bytes_per_s":
        return f"{fmt_number(value / 1e12)}{mark} TB/s"
    if unit == "bytes/s":
        return f"{fmt_number(value / 1e9)}{mark} GB/s"
    if unit == "FLOP/s":
        return f"{fmt_number(value / 1e12)}{mark} TFLOP/s"
    if unit == "W":
        return f"{value} W"
    return f"${value}"


def _predicted(a: GpuSpec, b: GpuSpec) -> tuple[Any, ...]:
    """The calibrated model on the reference workloads (``anchorgpu.planner.speed.reference``), when it is there."""
    try:
        from anchorgpu.planner.speed.reference import predicted_speeds
    except ImportError:
        return ()
    return predicted_speeds(a, b)


def _figure_text(value: float | None, low: float | None, high: float | None, note: str,
                 ceiling: float | None = None) -> str:
    """``'12,345 (11,000-13,500; ceiling 20,000)'``: the prediction, its likely range and the roofline ceiling.

    >>> _figure_text(12345.0, 11000.0, 13500.0, "", 20000.0), _figure_text(None, None, None, "does not fit")
    ('12,345 (11,000-13,500; ceiling 20,000)', 'does not fit')
    """
    if value is None:
        return note or "-"
    top = f"ceiling {ceiling:,.0f}" if ceiling is not None else ""
    if low is None or high is None:
        return f"{value:,.0f}" + (f" ({top})" if top else "")
    return f"{value:,.0f} ({low:,.0f}-{high:,.0f}" + (f"; {top})" if top else ")")


def _predicted_table(comparison: Any) -> Any:
    from rich.table import Table

    a, b = comparison.a, comparison.b
    table = Table(title="Predicted on reference workloads (calibrated model; likely range and roofline ceiling in brackets; "
                        "workloads below)")
    table.add_column("reference workload")
    table.add_column(a.name, justify="right")
    table.add_column(b.name, justify="right")
    table.add_column(f"{a.name} / {b.name}", justify="right")
    table.add_column("datasheet ratio", justify="right")
    for row in comparison.predicted:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x ({row.ratio_low:.2f}-{row.ratio_high:.2f})"
        sheet = _ratio_text(row.datasheet_ratio)
        if row.datasheet_ratio is not None:
            sheet += " " + {"memory_bandwidth_bytes_per_s": "bandwidth", "bf16_flops_per_s": "BF16"}.get(row.datasheet_metric, "")
        table.add_row(f"{row.label} ({row.unit})",
                      *(_figure_text(f.value, f.low, f.high, f.note, f.ceiling) for f in (row.a, row.b)),
                      ratio, sheet.strip())
    return table


def compare(a_name: str, b_name: str, *, as_json: bool, model: str | None, task: str, precision: str | None,
            context_tokens: int | None) -> None:
    """``context_tokens`` None: :data:`DEFAULT_CONTEXT_TOKENS`, or the model's own limit where shorter."""
    from dataclasses import replace

    from anchorgpu.hardware import compare_gpus, compared_pair, comparison_to_json

    bounded_int(context_tokens, field="context")  # plan's bounds, before the model's limit is checked
    if model is None:  # what only the model's plan reads is refused without one, not ignored
        for flag, value in (("--context", context_tokens), ("--precision", precision)):
            if value is not None:
                raise InvalidInput(f"{flag} applies to 'gpus compare A B --model M' only (it sizes that model's plan)")
    task = TASK_ALIASES.get(task, task)
    if precision is not None and task in TRAINING_LIKE:  # not dropped in silence: training sets its own formats
        raise InvalidInput(f"--precision sets a served model's weights (--task inference); task {task} holds them as "
                           "plan does (training bf16, LoRA a bf16 frozen base, QLoRA an nf4-dq one)")
    a, b = compared_pair(a_name, b_name)  # one GPU named twice is refused: 1.00x with no band on every row
    workload = _workload(model, task, precision) if model is not None else None
    price_a, note_a = price_per_gpu_hour(a.name)
    price_b, note_b = price_per_gpu_hour(b.name)
    comparison = compare_gpus(a, b, price_a_usd_per_gpu_hour=price_a, price_b_usd_per_gpu_hour=price_b, workload=workload,
                              predicted=_predicted(a, b))
    planned = None
    if model is not None:
        planned = _planned(model, (a, b), task=task, precision=precision, context_tokens=context_tokens)
        if planned is not None:
            comparison = replace(comparison, statements=(*comparison.statements, *_plan_statements(planned)))
    if as_json:
        data = comparison_to_json(comparison, price_notes=(note_a, note_b))
        data["plan"] = planned
        emit_json(data)
        return
    from rich.table import Table

    from anchorgpu.hardware.display import fmt_training_stacks

    table = Table(title=f"{a.display_name} vs {b.display_name}")
    table.add_column("metric")
    table.add_column(a.name, justify="right")
    table.add_column(b.name, justify="right")
    table.add_column(f"{a.name} / {b.name}", justify="right")
    for row in comparison.metrics:
        table.add_row(
            row.label,
            _metric_value(row.metric, row.a, row.unit, row.a_status, row.a_uncertain),
            _metric_value(row.metric, row.b, row.unit, row.b_status, row.b_uncertain),
            _ratio_text(row.ratio) + ("?" if row.uncertain and row.ratio is not None else ""),
        )
    # as `gpus show` and the JSON's "training" word it: the framework that trains in FP8 and FP4 there (no ratio)
    table.add_row("FP8 / FP4 training", fmt_training_stacks(a), fmt_training_stacks(b), "-")
    out = wide_console()
    out.print(table)
    if comparison.predicted:
        out.print(_predicted_table(comparison))
    if price_a is None or price_b is None:
        out.print(f"Price: {a.name}: {note_a}; {b.name}: {note_b}.")
    else:
        out.print("Price: cheapest AnchorGPU catalog offering of each GPU, monthly price / GPUs / 730 h.")
    out.print("What it means:")
    for statement in comparison.statements:
        out.print(f"- {statement}")
