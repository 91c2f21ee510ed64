"""``anchorgpu plan MODEL [workload] [--gpu NAME --gpus N] [parallelism] [--json]``: will it fit, per GPU.

A thin face over :func:`anchorgpu.planner.plan`: parse options, resolve the model and the GPU, plan,
render a table (or the DESIGN.md section 5 JSON with ``--json``). Bad input exits 2 with one line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.errors import InvalidWorkload

if TYPE_CHECKING:
    from anchorgpu.planner import Plan

def parse_tokens(text: str | None, *, field: str) -> int | None:
    """``8192``, ``8k`` (= 8,192) or ``1m`` (= 1,048,576) tokens (bounds: :data:`anchorgpu.validation.LIMITS`)."""
    from anchorgpu.validation import BINARY_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field=field, suffixes={k: v for k, v in BINARY_SUFFIXES.items() if k != "g"}, example="8192 or 8k",
                        noun="a token count")


def parse_count(text: str | None, *, field: str) -> int | None:
    """A large whole count: ``1000000``, ``1e12``, ``2.5e9``, or with a decimal suffix ``300B`` or ``14.8T`` (as
    training-token totals are written); never nan, inf or a fraction.

    >>> parse_count("14.8T", field="tokens"), parse_count("300b", field="tokens"), parse_count("1e12", field="tokens")
    (14800000000000, 300000000000, 1000000000000)
    """
    from anchorgpu.validation import DECIMAL_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field=field, suffixes=DECIMAL_SUFFIXES, example="1e12 or 15T")


def parse_batch(text: str | None) -> int | None:
    """A global batch in tokens: ``4M`` (= 4,194,304), ``512k`` or an integer; nothing is rounded.

    >>> parse_batch("4M"), parse_batch("16m"), parse_batch("1000000")
    (4194304, 16777216, 1000000)
    """
    from anchorgpu.validation import BINARY_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field="global_batch", suffixes=BINARY_SUFFIXES, example="4M, 16M or 1048576", noun="tokens")


def parse_gpus(text: str | None) -> int | None:
    """Whole GPUs only: ``0.5`` or ``0`` are refused with the reason (no MIG, vGPU or time-slicing)."""
    from anchorgpu.units import require_whole_gpus

    if text is None:
        return None
    from anchorgpu.validation import LIMITS

    try:
        value = float(text) if text.isascii() else float("nan")  # ASCII digits only, as everywhere
    except ValueError:
        value = float("nan")
    if value != value:
        raise InvalidWorkload(f"--gpus {text!r}: expected a whole number of GPUs")
    if value <= 0 and value.is_integer():  # -2 is named as typed, not as gpus=-2.0
        raise InvalidWorkload(f"--gpus {text.strip()}: at least one GPU is needed")
    if value > LIMITS["gpus"].high and value.is_integer():
        raise InvalidWorkload(f"--gpus {text.strip()}: at most {LIMITS['gpus'].high:,.0f} GPUs")
    return require_whole_gpus(value)


def parse_resolution(text: str | None, *, flag: str = "--resolution") -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.match(r"^\s*([0-9]{1,5})\s*[xX×]\s*([0-9]{1,5})\s*$", text)
    if not match:
        raise InvalidWorkload(f"{flag} {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1024x1024")
    return int(match.group(1)), int(match.group(2))


def _fmt(n: int | None) -> str:
    from anchorgpu.units import fmt_bytes

    return "-" if n is None else fmt_bytes(n)


def _gib(n: int) -> str:
    """Bytes as GiB with two decimals (one unit down the whole table, so rows compare at a glance)."""
    from anchorgpu.units import GIB

    return f"{n / GIB:,.2f}"


def _duration(seconds: float) -> str:
    """``1397981`` → ``'16.2 days'``: seconds in the largest unit that keeps the number readable."""
    for unit, size in (("days", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.1f} s"


def _bullets(out: Any, title: str, lines: list[str], *, marker: str = "-") -> None:
    """A titled list whose wrapped lines stay indented under their text (not under the marker)."""
    import textwrap

    if not lines:
        return
    out.print(f"[bold]{title}[/bold]")
    width = max(40, int(out.width))
    for line in lines:
        text = textwrap.fill(line, width=width, initial_indent=f"  {marker} ", subsequent_indent="    ",
                             break_on_hyphens=False)
        out.print(text, markup=False, soft_wrap=True)


def _verdict(plan: Plan) -> str:
    """One line that answers the question first: fits or not, needed vs available per GPU, and the margin."""
    need = plan.per_gpu.total_bytes
    if plan.fits is None or plan.gpu is None or plan.budget_bytes is None:
        return (f"Verdict: [yellow]NOT CHECKED[/yellow] - needs {_fmt(need)} per GPU; "
                "name a GPU with --gpu (see `anchorgpu gpus`) to get a verdict")
    memory = plan.gpu.memory_bytes
    available = f"{_fmt(plan.budget_bytes)} per GPU"
    if plan.budget_bytes != memory:
        available += (f" (TensorRT-LLM: the peak plus {plan.workload.gpu_memory_utilization:.0%} of the memory it "
                      "leaves free)" if plan.workload.engine == "trtllm" else
                      f" (serving engine budget: {plan.workload.gpu_memory_utilization:.0%} of {_fmt(memory)})")
    headroom = plan.headroom_bytes or 0
    if plan.fits:
        return (f"Verdict: [green]FITS[/green] - needs {_fmt(need)} of {available}; "
                f"headroom {_fmt(headroom)}")
    return (f"Verdict: [red]DOES NOT FIT[/red] - needs {_fmt(need)} of {available}; short by {_fmt(-headroom)}"
            + ("; see 'What would fit' below" if plan.suggestions else ""))


def render_plan(plan: Plan) -> None:
    """Verdict first, then the per-GPU breakdown (GiB, against the GPU's memory), capacity, speed, what
    would fit, warnings, assumptions and what is still to check."""
    from rich.table import Table

    from anchorgpu.planner.speed.evidence import ENGINE_NAMES

    out = console()
    if not out.is_terminal:
        out.width = 120
    lay = plan.layout
    w = plan.workload
    where = (f"on {lay.gpus} × {plan.gpu.display_name} ({_fmt(plan.gpu.memory_bytes)} each)" if plan.gpu is not None
             else f"on {lay.gpus} GPU{'s' if lay.gpus > 1 else ''} (no GPU model given)")
    out.print(f"[bold]{plan.model.name}[/bold] · {w.task} {where}")
    out.print(f"Layout TP {lay.tp} · PP {lay.pp}" + (f" (v {lay.virtual_stages})" if lay.virtual_stages > 1 else "")
              + (f" · CP {lay.cp}" if lay.cp > 1 else "") + f" · DP {lay.dp}" + (f" · EP {lay.ep}" if lay.ep > 1 else "")
              + (f" · ZeRO-{lay.zero}" if lay.zero and not lay.fsdp else "") + (" · FSDP" if lay.fsdp else "")
              + (f" · offload {lay.offload}" if lay.offload != "none" else "")
              + (f" · micro-batch {w.micro_batch} · recompute {w.recompute}" if w.task in ("train", "lora", "qlora")
                 else "")
              + f" · weights {plan.precision.weights}"
              + (f" · KV cache {plan.precision.kv_cache} · engine {ENGINE_NAMES[w.engine]}" if w.task == "inference"
                 else ""))
    out.print(_verdict(plan))
    if w.task == "inference" and plan.max_concurrency is not None:
        reserve = plan.breakdown.get("kv_cache_capacity_bytes")
        def seqs(n: int | None) -> str:  # None: one sequence, the default without --concurrency
            return f"{1 if n is None else n:,} sequence" + ("" if n in (1, None) else "s")

        out.print(f"Capacity: max concurrency {seqs(plan.max_concurrency)} of {w.context_tokens:,} tokens; "
                  f"longest context at {seqs(w.concurrency)}: {plan.max_context_tokens:,} tokens")
        if reserve:
            out.print(f"          the engine reserves {_fmt(reserve)} per GPU for KV cache at start-up")
        state = plan.breakdown.get("state_per_sequence_bytes")
        if state is not None:  # hybrid and state-space models: a fixed state per sequence beside the KV
            kv_one = plan.breakdown.get("kv_per_sequence_bytes", 0)
            out.print(f"          per sequence: recurrent state {_fmt(state)} (any length) + KV {_fmt(kv_one)}")
    vae = plan.breakdown.get("vae_decode_peak_bytes")
    if w.task == "diffusion" and vae is not None:
        denoise = plan.breakdown.get("denoiser_activation_bytes", 0)
        peak = "VAE decode" if plan.breakdown.get("peak_phase_is_decode") else "denoising"
        out.print(f"Phases: denoising activations {_fmt(denoise)} · VAE decode peak {_fmt(vae)}"
                  f"{' (tiled)' if w.vae_tiling else ''}; the table shows the larger phase ({peak})")
    table = Table(title="Memory per GPU", show_lines=False, title_justify="left")
    table.add_column("term")
    table.add_column("GiB", justify="right")
    table.add_column("share", justify="right")
    total = max(1, plan.per_gpu.total_bytes)
    kv_label = "KV cache + state" if "state_per_sequence_bytes" in plan.breakdown else "KV cache"
    rows = [("weights", plan.per_gpu.weights_bytes), (kv_label, plan.per_gpu.kv_cache_bytes),
            ("activations", plan.per_gpu.activations_bytes), ("gradients", plan.per_gpu.gradients_bytes),
            ("optimizer", plan.per_gpu.optimizer_bytes), ("overhead", plan.per_gpu.overhead_bytes)]
    for name, value in rows:
        if value:
            table.add_row(name, _gib(value), f"{value / total:.0%}")
    table.add_row("[bold]total[/bold]", f"[bold]{_gib(plan.per_gpu.total_bytes)}[/bold]", "100%", end_section=True)
    if plan.gpu is not None:
        if plan.budget_bytes is not None and plan.budget_bytes != plan.gpu.memory_bytes:
            table.add_row("engine budget (TensorRT-LLM)" if w.engine == "trtllm" else
                          f"engine budget ({w.gpu_memory_utilization:.0%})", _gib(plan.budget_bytes), "")
        table.add_row("GPU memory", _gib(plan.gpu.memory_bytes), "")
        if plan.headroom_bytes is not None:
            label = "headroom" if plan.headroom_bytes >= 0 else "[red]short by[/red]"
            table.add_row(label, _gib(abs(plan.headroom_bytes)), "")
    out.print(table)
    if plan.checkpoint_bytes is not None:
        out.print(f"Checkpoint size: {_fmt(plan.checkpoint_bytes)}")
    _render_performance(out, plan.extra.get("performance"))
    if plan.suggestions:
        sug = Table(title="What would fit", title_justify="left")
        speeds = any(s.train_tokens_per_s for s in plan.suggestions)
        for col, justify in (("change", "left"), ("what", "left"), ("GPUs", "right"), ("per GPU", "right"),
                             ("headroom", "right"), *((("train tok/s", "right"),) if speeds else ())):
            sug.add_column(col, justify=justify)
        for s in plan.suggestions:
            sug.add_row(s.change, s.description, str(s.gpus), _fmt(s.total_bytes), _fmt(s.headroom_bytes),
                        *((f"{s.train_tokens_per_s:,.0f}" if s.train_tokens_per_s else "",) if speeds else ()))
        out.print(sug)
    _bullets(out, "Warnings", [f"{item.message} ({item.code})" for item in plan.warnings], marker="!")
    _bullets(out, "Still to check", [*plan.checks, *_speed_caveats(plan.extra.get("performance"))])
    _bullets(out, "Assumed", list(plan.assumptions))


def _speed_caveats(section: Any) -> list[str]:
    """The speed estimate's caveats a user must weigh before paying (a mixture of experts': how sure its speeds
    are; what a time to first token leaves out), from the performance section's assumptions."""
    from anchorgpu.planner.speed.estimate import SPEED_CAVEAT_LABELS

    if not isinstance(section, dict):
        return []
    return [line for line in section.get("assumptions", [])
            if isinstance(line, str) and line.startswith(tuple(label + ":" for label in SPEED_CAVEAT_LABELS))]


def _band(section: dict[str, Any], key: str, fmt: str, scale: float = 1.0) -> str | None:
    """``'1,234 tok/s (1,100-1,400; ceiling 2,000)'``: the prediction, its band and the ceiling."""
    value = section.get(key)
    if not isinstance(value, int | float):
        return None
    text = fmt.format(value * scale)
    low, high = section.get(f"{key}_low"), section.get(f"{key}_high")
    if section.get("efficiencies") == "user":  # the user's efficiencies: no band, the ceiling only
        ceiling = section.get(f"{key}_ceiling")
        return text + (f" (ceiling {fmt.format(ceiling * scale)})" if isinstance(ceiling, int | float) else "")
    if isinstance(low, int | float) and isinstance(high, int | float):
        text += f" ({fmt.format(low * scale)}-{fmt.format(high * scale)}"
        ceiling = section.get(f"{key}_ceiling")
        text += f"; ceiling {fmt.format(ceiling * scale)})" if isinstance(ceiling, int | float) else ")"
    return text


def _render_performance(out: Any, section: Any) -> None:
    """Predicted speed with its band (what measured runs of the same kind fell within) and the ceiling."""
    if not isinstance(section, dict):
        return
    serving = (("ttft_s", "time to first token", "{:,.3f} s", 1.0),
               ("tpot_s", "time per output token", "{:,.1f} ms", 1e3),
               ("decode_tokens_per_s_per_user", "per user", "{:,.1f} tok/s", 1.0),
               ("output_tokens_per_s", "output", "{:,.0f} tok/s", 1.0),
               ("max_output_tokens_per_s", "at saturation", "{:,.0f} tok/s", 1.0))
    training = (("train_tokens_per_s", "training", "{:,.0f} tok/s", 1.0),
                ("train_tflops_per_gpu", "per GPU", "{:,.0f} TFLOP/s", 1.0),
                ("train_mfu", "MFU", "{:.1%}", 1.0))
    lines = [f"{label} {text}" for key, label, fmt, scale in (*serving, *training)
             if (text := _band(section, key, fmt, scale)) is not None]
    if not lines:
        for line in section.get("assumptions", [])[:1]:
            out.print(f"Speed: not predicted - {line}")
        return
    if section.get("efficiencies") == "user":
        out.print("[bold]Speed (with your efficiencies, no calibrated band; roofline ceiling)[/bold]")
        for line in section.get("assumptions", [])[:1]:
            out.print(f"  {line}", markup=False)
    else:
        out.print("[bold]Speed (calibrated prediction, band, roofline ceiling)[/bold]")
    for line in lines:
        out.print(f"  {line}", markup=False)
    sat = section.get("saturation_concurrency")
    if isinstance(sat, int) and "max_output_tokens_per_s" in section:
        p_tok, o_tok = section.get("prompt_tokens"), section.get("output_tokens")
        size = f" of {p_tok:,} prompt + {o_tok:,} output tokens" if isinstance(p_tok, int) and isinstance(o_tok, int) else ""
        held = ("each with its prompt + output reserved up front (TensorRT-LLM's GUARANTEED_NO_EVICT)"
                if section.get("kv_reservation") == "full" else "their KV cache at its average length (a paged engine fills "
                "it as tokens arrive; the capacity line above holds each sequence at its full length)")
        out.print(f"  saturation = {sat:,} sequences at once{size}, {held}", markup=False)
    evidence = section.get("evidence")
    if isinstance(evidence, dict) and isinstance(evidence.get("summary"), str):
        out.print(f"  measured runs: {evidence['summary']}", markup=False)
    train_s = section.get("train_time_s")
    if isinstance(train_s, int | float):
        hours = section.get("gpu_hours")
        out.print(f"  training time {_duration(float(train_s))}"
                  + (f" · {hours:,.0f} GPU-hours" if isinstance(hours, int | float) else "")
                  + f" (band {_duration(float(section['train_time_s_low']))}-{_duration(float(section['train_time_s_high']))})",
                  markup=False)
    parts = section.get("step_time_breakdown_s")
    if isinstance(parts, dict) and section.get("step_time_s"):
        total = float(section["step_time_s"])
        shown = [f"{name} {value:,.3g} s ({value / total:.0%})" for name, value in parts.items() if value > 0]
        out.print(f"  step {total:,.3g} s = " + " + ".join(shown), markup=False)


@app.command("plan")
def plan_command(
    model: str = typer.Argument(..., help="Registry name, path to config.json (or its folder), or a Hub id."),
    task: str = typer.Option("inference", "--task", help="inference | train | lora | qlora | diffusion"),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU name or alias (see `anchorgpu gpus`)."),
    gpus: str | None = typer.Option(None, "--gpus", help="Whole GPUs in total (default, with --gpu: the fewest that hold the job; TP x PP x DP when all three are given)."),
    tp: int | None = typer.Option(None, "--tp", help="Tensor-parallel ranks."),
    pp: int | None = typer.Option(None, "--pp", help="Pipeline stages."),
    dp: int | None = typer.Option(None, "--dp", help="Data-parallel ranks (replicas)."),
    ep: int | None = typer.Option(None, "--ep", help="Expert-parallel ranks (MoE)."),
    zero: int | None = typer.Option(None, "--zero", help="ZeRO stage 0-3 (training; chosen with the layout when not given)."),
    cp: int | None = typer.Option(None, "--cp", help="Context-parallel ranks (training, ring attention)."),
    virtual_stages: int | None = typer.Option(None, "--virtual-stages", help="Interleaved pipeline chunks per GPU (training; chosen when not given)."),
    pipeline_layout: str | None = typer.Option(None, "--pipeline-layout", help="Which layers each pipeline chunk holds, in Megatron-Core's --pipeline-model-parallel-layout syntax, e.g. 'Et|(tt|)*30L' (training, with --pp; the virtual stages follow from its chunks)."),
    tp_overlap: bool = typer.Option(False, "--tp-overlap", help="Overlap tensor-parallel traffic with the products (training)."),
    sequence_parallel: bool | None = typer.Option(None, "--sequence-parallel/--no-sequence-parallel", help="Megatron's sequence parallelism: norms, dropout and residual adds split over the TP ranks (training; default on with TP > 1)."),
    ep_overlap: bool = typer.Option(False, "--ep-overlap", help="Overlap a MoE's all-to-alls with another micro-batch's computation (training under EP; Megatron-Core --overlap-moe-expert-parallel-comm)."),
    global_batch: str | None = typer.Option(None, "--global-batch", help="Tokens per optimizer step: 4M, 16M or an integer (training; default 4M)."),
    fsdp: bool = typer.Option(False, "--fsdp", help="FSDP FULL_SHARD (training; memory of ZeRO-3)."),
    offload: str = typer.Option("none", "--offload", help="none | optimizer | params"),
    offload_activations: int = typer.Option(0, "--offload-activations", help="Layers whose activations wait in host memory between the forward and backward pass (full training on Megatron-Core with one pipeline stage and no recompute: --cpu-offloading-num-layers)."),
    weights: str | None = typer.Option(None, "--weights", help="Default: the format the checkpoint ships in (quantization_config). bf16 fp16 fp8 fp8-block128x128 int8 int4-gptq int4-awq nf4 nf4-dq mxfp4 nvfp4 gguf-q4_k_m gguf-q8_0 …"),
    kv_cache: str = typer.Option("bf16", "--kv-cache", help="bf16 | fp16 | fp8"),
    context: str | None = typer.Option(None, "--context", help="Tokens per sequence (inference), e.g. 8192 or 8k."),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Sequences at once (inference)."),
    micro_batch: int | None = typer.Option(None, "--micro-batch", help="Sequences per GPU step (training; chosen with the layout when not given)."),
    seq: str | None = typer.Option(None, "--seq", help="Training sequence length in tokens."),
    recompute: str | None = typer.Option(None, "--recompute", help="none | selective (the attention core; with --train-stack pytorch, torchtitan's op-level policy: every other product run again) | moe (a mixture of experts' MoE blocks) | full"),
    optimizer: str = typer.Option("adamw", "--optimizer", help="adamw | adamw-8bit | sgd | lion | adafactor"),
    train_precision: str = typer.Option("mixed", "--train-precision", help="mixed (fp32 master+moments) | bf16-true | fp8 | fp4 (FP8/FP4 products, Transformer Engine style)"),
    optimizer_state: str = typer.Option("fp32", "--optimizer-state", help="AdamW's state under mixed/fp8/fp4 training (--task train): fp32 (fp32 master + moments, 12 B a parameter) | bf16-moments (fp32 master, bf16 moments, 8 B: Megatron-Core's precision-aware optimizer) | bf16 (bf16 master + moments, 6 B: Apex distributed_fused_adam dtype bf16, NeMo SFT)."),
    train_stack: str | None = typer.Option(None, "--train-stack", help="Training software the plan is for (speed and memory): megatron (Megatron-Core/NeMo, fused kernels) | pytorch (torchtitan, FSDP scripts, OLMo-core, llm-foundry); default pytorch with --task qlora or --recipe torchrun-fsdp, deepspeed or accelerate, else megatron."),
    cross_entropy: str | None = typer.Option(None, "--cross-entropy", help="Full training's loss, for its memory: unfused (Megatron-Core's default) | native (--cross-entropy-fusion-impl native) | te (Transformer Engine's fused kernel, Megatron-Bridge's 2025-26 recipes) | eager (PyTorch's fp32 cross_entropy); default unfused on megatron, eager on pytorch."),
    lora_rank: int = typer.Option(16, "--lora-rank", help="LoRA rank r."),
    lora_targets: str = typer.Option("q,k,v,o,gate,up,down", "--lora-targets", help="Comma list of q,k,v,o,gate,up,down (qkv = q,k,v; gate_up = gate,up). On a fused module the adapter covers the named slices."),
    resolution: str | None = typer.Option(None, "--resolution", help="Diffusion output WIDTHxHEIGHT."),
    images: int = typer.Option(1, "--images", help="Diffusion images per batch."),
    vae_tiling: bool = typer.Option(False, "--vae-tiling", help="Decode the VAE in tiles."),
    images_per_request: int | None = typer.Option(None, "--images-per-request", help="Images in each request to a vision-language model (default 1 there; refused for text-only models)."),
    image_resolution: str | None = typer.Option(None, "--image-resolution", help="Image WIDTHxHEIGHT in pixels (default: the model's native resolution)."),
    gpu_memory_utilization: float = typer.Option(0.9, "--gpu-memory-utilization", help="Serving engine's share of GPU memory (vLLM); with --engine trtllm the share of the memory free after the weights and profiling that the KV cache takes (free_gpu_memory_fraction)."),
    engine: str | None = typer.Option(None, "--engine", help="Serving engine the memory and admission are sized for: vllm | trtllm (trtllm-serve's KV sizing, 8,192 tokens and 2,048 sequences, requests admitted only when prompt + output fit); default trtllm with --recipe trtllm, else vllm."),
    max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens", help="Engine prefill budget."),
    max_num_seqs: int | None = typer.Option(None, "--max-num-seqs", help="Engine sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but the A100, else 256): a serving replica runs at most this many at once."),
    allow_long_context: bool = typer.Option(False, "--allow-long-context", help="Allow a context beyond the model's limit."),
    prompt: str | None = typer.Option(None, "--prompt", help="Prompt tokens per request; without --context each sequence is prompt + output."),
    output_tokens: int | None = typer.Option(None, "--output-tokens", help="Output tokens per request."),
    tokens: str | None = typer.Option(None, "--tokens", help="Training tokens for the training time, e.g. 1e12, 300B or 15T (decimal; performance)."),
    mfu: float | None = typer.Option(None, "--mfu", help="Model FLOPs utilization for speed estimates (0-1)."),
    mbu: float | None = typer.Option(None, "--mbu", help="Memory-bandwidth utilization for decode estimates (0-1)."),
    context_mib: int | None = typer.Option(None, "--cuda-context-mib", help="Override the CUDA/ROCm context size (MiB)."),
    fragmentation: float | None = typer.Option(None, "--fragmentation", help="Override the allocator margin (0-0.5)."),
    offline: bool = typer.Option(False, "--offline", help="Never fetch a Hub id."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON contract."),
    recipe: str | None = typer.Option(None, "--recipe", help="Also print the launch: vllm | sglang | trtllm | torchrun-fsdp | deepspeed | accelerate | skypilot | k8s."),
) -> None:
    """Per-GPU memory breakdown, fit verdict, capacity, warnings and what to check for one workload."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan, plan_to_json
    from anchorgpu.planner.inputs import check_engine_caps, resolve_engine, resolve_train_stack
    from anchorgpu.validation import bounded_int

    for value, field in ((concurrency, "concurrency"), (output_tokens, "output_tokens"), (micro_batch, "micro_batch"),
                         (lora_rank, "lora_rank"), (max_num_batched_tokens, "max_num_batched_tokens"), (max_num_seqs, "max_num_seqs"),
                         (images, "images")):
        bounded_int(value, field=field)  # the API's bounds (anchorgpu.validation.LIMITS), before any work
    engine = resolve_engine(engine, recipe)
    check_engine_caps(max_num_seqs, max_num_batched_tokens, engine)
    spec = load_model(model, offline=offline)
    gpu_spec = get_gpu(gpu) if gpu is not None else None
    targets = tuple(t.strip() for t in lora_targets.split(",") if t.strip())
    workload = Workload(
        task=task,  # type: ignore[arg-type]  # validated by the planner with a one-line reason
        context_tokens=parse_tokens(context, field="context"), concurrency=concurrency,
        allow_long_context=allow_long_context, gpu_memory_utilization=gpu_memory_utilization,
        engine=engine,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, micro_batch=micro_batch,
        seq_tokens=parse_tokens(seq, field="seq"), recompute=recompute,  # type: ignore[arg-type]
        offload_activation_layers=offload_activations,
        optimizer=optimizer,  # type: ignore[arg-type]
        optimizer_state=optimizer_state,  # type: ignore[arg-type]  # validated by the planner with a one-line reason
        train_precision=train_precision if train_precision in ("mixed", "bf16-true", "fp8", "fp4") else _bad(  # type: ignore[arg-type]
            f"--train-precision {train_precision!r}: choose mixed, bf16-true, fp8 or fp4"),
        train_stack=resolve_train_stack(train_stack if train_stack in (None, "megatron", "pytorch") else _bad(
            f"--train-stack {train_stack!r}: choose megatron or pytorch"), recipe, task),
        cross_entropy=cross_entropy,  # type: ignore[arg-type]  # validated by the planner with a one-line reason
        global_batch_tokens=parse_batch(global_batch), prompt_tokens=parse_tokens(prompt, field="prompt"),
        output_tokens=output_tokens,
        lora_rank=lora_rank, lora_targets=targets, resolution=parse_resolution(resolution), images=images,
        vae_tiling=vae_tiling, images_per_request=images_per_request,
        image_resolution=parse_resolution(image_resolution, flag="--image-resolution"),
    )
    layout = Layout(gpus=parse_gpus(gpus), tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, fsdp=fsdp, cp=cp,
                    virtual_stages=virtual_stages, tp_overlap=tp_overlap, ep_overlap=ep_overlap, offload=offload,  # type: ignore[arg-type]
                    pipeline_layout=pipeline_layout, sequence_parallel=sequence_parallel)
    result = plan(spec, workload, precision=PrecisionPlan(weights=weights, kv_cache=kv_cache.lower()),
                  layout=layout, gpu=gpu_spec, overheads=_overheads(context_mib, fragmentation))
    perf_options: dict[str, Any] = {"train_tokens": parse_count(tokens, field="tokens"), "mfu": mfu, "mbu": mbu}
    from anchorgpu.planner.speed.estimate import attach_performance

    result = attach_performance(result, **{k: v for k, v in perf_options.items() if v is not None})
    launch = None
    if recipe is not None:  # refused in one line (exit 2) before anything is printed
        from anchorgpu.recipes import build_recipe

        launch = build_recipe(result, recipe)
    if as_json:
        out = plan_to_json(result)
        if launch is not None:
            from anchorgpu.recipes import recipe_to_json

            out["recipe"] = recipe_to_json(launch)
        emit_json(out)
    else:
        render_plan(result)
        if launch is not None:
            render_recipe(launch)


def render_recipe(recipe: Any) -> None:
    """The launch: the command, each file in full, then what it assumed and what the plan could not set."""
    out = console()
    if not out.is_terminal:
        out.width = 120
    out.print(f"[bold]Launch ({recipe.kind}, {recipe.tool_version})[/bold]")
    out.print(recipe.command, markup=False, highlight=False, soft_wrap=True)
    for name, text in recipe.files:
        out.print(f"[bold]{name}[/bold]")
        out.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
    _bullets(out, "Launch assumed", list(recipe.assumptions))
    _bullets(out, "The plan could not set", list(recipe.cannot_set))


def _overheads(context_mib: int | None, fragmentation: float | None) -> Any:
    """Runtime overheads with the user's overrides (stated in the plan's assumptions either way)."""
    import dataclasses

    from anchorgpu.planner import Overheads
    from anchorgpu.units import MIB

    ov = Overheads()
    if context_mib is not None:
        if context_mib < 0:
            raise InvalidWorkload(f"--cuda-context-mib {context_mib}: must be zero or more")
        ov = dataclasses.replace(ov, cuda_context_bytes=context_mib * MIB, rocm_context_bytes=context_mib * MIB)
    if fragmentation is not None:
        if not 0 <= fragmentation <= 0.5:
            raise InvalidWorkload(f"--fragmentation {fragmentation}: expected a fraction between 0 and 0.5")
        ov = dataclasses.replace(ov, fragmentation_fraction=fragmentation)
    return ov


def _bad(message: str) -> str:
    raise InvalidWorkload(message)
