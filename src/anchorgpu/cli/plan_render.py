"""``anchorgpu plan``'s terminal rendering: the verdict, the per-GPU memory table, capacity, speed with its band,
what would fit, warnings, assumptions and what is still to check; and a recipe's launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchorgpu.cli._app import console
from anchorgpu.cli.speed_band import BOUND_WORDS, band, band_note, without_ceiling
from anchorgpu.planner.held_weights import held_weights

if TYPE_CHECKING:
    from anchorgpu.planner import Plan


def _fmt(n: int | None) -> str:
    from anchorgpu.units import fmt_bytes

    return "-" if n is None else fmt_bytes(n)


def _gib(n: int) -> str:
    """Bytes as GiB with two decimals (one unit down the whole table, so rows compare at a glance)."""
    from anchorgpu.units import GIB

    return f"{n / GIB:,.2f}"


def _duration(seconds: float) -> str:
    """``1397981`` → ``'16.2 days'``: seconds in the largest unit that keeps the number readable
    (:func:`anchorgpu.units.duration_in_unit`, which the pages write times by too)."""
    from anchorgpu.units import fmt_duration

    return fmt_duration(seconds)


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


def _share(fraction: float) -> str:
    """A memory share the user may have typed, as a percentage without rounding it away: 0.9 -> '90%', 0.955 ->
    '95.5%', 0.001 -> '0.1%' (``:.0%`` showed 96% and 0%)."""
    return f"{fraction * 100:.4g}%"


def _cache_words(plan: Plan) -> str:
    """What a serving layout keeps per sequence: ``KV cache fp8``; a model with no attention layer (Mamba) keeps
    no KV cache, whatever ``--kv-cache`` says, only its recurrent state (a hybrid such as Jamba keeps both)."""
    if getattr(plan.model, "attention_layers", 1) == 0:
        return "recurrent state, no KV cache"
    return f"KV cache {plan.precision.kv_cache}"


def _kv_running(plan: Plan) -> int | None:
    """The sequences the memory table's KV cache holds over all replicas where some users wait in the engines'
    queues (those running: a waiting request holds no KV cache, :mod:`~anchorgpu.planner.serving_queue`); None where
    every user's sequence is held."""
    per_replica = plan.breakdown.get("kv_cache_sequences_per_replica")
    return None if per_replica is None else int(per_replica) * plan.layout.dp


def _queued_cache_words(plan: Plan) -> str:
    """Where more users are asked for than the engines run at once, which sequences the memory table's KV cache is:
    those running, the verdict's need, and how many wait; '' otherwise."""
    running = _kv_running(plan)
    if running is None:
        return ""
    users = plan.workload.concurrency or 1
    return (f"; the KV cache row below is the {running:,} running sequences' ({_fmt(plan.per_gpu.kv_cache_bytes)}): "
            f"the other {users - running:,} wait in the queue holding none")


def _verdict(plan: Plan) -> str:
    """One line that answers the question first: fits or not, needed vs available per GPU, and the margin."""
    need = plan.per_gpu.total_bytes
    if plan.fits is None or plan.gpu is None or plan.budget_bytes is None:
        return (f"Verdict: [yellow]NOT CHECKED[/yellow] - needs {_fmt(need)} per GPU; "
                "name a GPU with --gpu (see `anchorgpu gpus`) to get a verdict")
    memory = plan.gpu.memory_bytes
    available = f"{_fmt(plan.budget_bytes)} per GPU"
    if plan.budget_bytes != memory:
        fraction = plan.workload.gpu_memory_utilization or 0.0  # an inference plan's workload holds it resolved
        available += (f" (TensorRT-LLM: the peak plus {_share(fraction)} of the memory it leaves free)"
                      if plan.workload.engine == "trtllm" else
                      f" (SGLang: the activations and non-torch memory plus mem_fraction_static {fraction:g} of "
                      "the memory free at start)"
                      if plan.workload.engine == "sglang" else
                      f" (serving engine budget: {_share(fraction)} of {_fmt(memory)})")
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

    from anchorgpu.hardware.display import fmt_budget_memory
    from anchorgpu.planner.speed.evidence import ENGINE_NAMES

    out = console()
    if not out.is_terminal:
        out.width = 120
    lay = plan.layout
    w = plan.workload
    where = (f"on {lay.gpus:,} × {plan.gpu.display_name} ({fmt_budget_memory(plan.gpu)} each)" if plan.gpu is not None
             else f"on {lay.gpus} GPU{'s' if lay.gpus > 1 else ''} (no GPU model given)")
    out.print(f"[bold]{plan.model.name}[/bold] · {w.task} {where}")
    out.print(f"Layout TP {lay.tp} · PP {lay.pp}" + (f" (v {lay.virtual_stages})" if lay.virtual_stages > 1 else "")
              + (f" · CP {lay.cp}" if lay.cp > 1 else "") + f" · DP {lay.dp}" + (f" · EP {lay.ep}" if lay.ep > 1 else "")
              + (f" · ZeRO-{lay.zero}" if lay.zero and not lay.fsdp else "") + (" · FSDP" if lay.fsdp else "")
              + (f" · offload {lay.offload}" if lay.offload != "none" else "")
              + (f" · micro-batch {w.micro_batch} · recompute {w.recompute}" if w.task in ("train", "lora", "qlora")
                 else "")
              + f" · weights {held_weights(str(plan.precision.weights), task=w.task, train_precision=w.train_precision)}"
              + (f" · {_cache_words(plan)} · engine {ENGINE_NAMES[w.engine]}" if w.task == "inference" else ""))
    out.print(_verdict(plan))
    if w.task == "inference" and plan.max_concurrency is not None:
        reserve = plan.breakdown.get("kv_cache_capacity_bytes")
        def seqs(n: int | None) -> str:  # None: one sequence, the default without --concurrency
            return f"{1 if n is None else n:,} sequence" + ("" if n in (1, None) else "s")

        running = _kv_running(plan)
        at = seqs(w.concurrency) if running is None else f"the {running:,} running"  # as its KV cache is sized
        out.print(f"Capacity: max concurrency {seqs(plan.max_concurrency)} of {w.context_tokens:,} tokens; "
                  f"longest context at {at}: {plan.max_context_tokens:,} tokens")
        cap = (w.max_num_seqs or 0) * lay.dp
        if 0 < cap < plan.max_concurrency:  # the memory holds more than the engine's sequence cap lets run
            name = {"trtllm": "max_batch_size", "sglang": "max_running_requests"}.get(w.engine, "max_num_seqs")
            out.print(f"          the engine runs {cap:,} at once ({name} {w.max_num_seqs:,} x {lay.dp} "
                      f"replica{'' if lay.dp == 1 else 's'}); more wait in its queue")
        if reserve:
            out.print(f"          the engine reserves {_fmt(reserve)} per GPU for KV cache at start-up"
                      + _queued_cache_words(plan))
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
    table.add_column("GiB", justify="right", overflow="fold")  # a number folds, never cut (stop60_qa26, left 3)
    table.add_column("share", justify="right", overflow="fold")
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
                          f"engine budget (SGLang, {w.gpu_memory_utilization:g})" if w.engine == "sglang" else
                          f"engine budget ({_share(w.gpu_memory_utilization or 0.0)})", _gib(plan.budget_bytes), "")
        runtime = plan.gpu.runtime_name if plan.gpu.memory_is_runtime else None
        table.add_row("GPU memory" + (f" ({runtime} total)" if runtime else ""), _gib(plan.gpu.memory_bytes), "")
        if plan.headroom_bytes is not None:
            label = "headroom" if plan.headroom_bytes >= 0 else "[red]short by[/red]"
            table.add_row(label, _gib(abs(plan.headroom_bytes)), "")
    out.print(table)
    if plan.checkpoint_bytes is not None:
        out.print(f"Checkpoint size: {_fmt(plan.checkpoint_bytes)}")
    replicas = plan.layout.dp if plan.layout is not None else 1
    _render_performance(out, plan.extra.get("performance"), concurrency=w.concurrency, context_tokens=w.context_tokens,
                        uneven=bool(w.concurrency and replicas > 1 and w.concurrency % replicas))
    if plan.suggestions:
        sug = Table(title="What would fit", title_justify="left")
        speeds = any(s.train_tokens_per_s for s in plan.suggestions)
        # with --mfu/--mbu the suggestions are timed with them too, as the plan is: no calibrated band then (the
        # speed heading says so)
        banded = (plan.extra.get("performance") or {}).get("efficiencies") != "user"
        speed_column = "train tok/s (band)" if banded else "train tok/s"
        for col, justify in (("change", "left"), ("what", "left"), ("GPUs", "right"), ("per GPU", "right"),
                             ("headroom", "right"), *(((speed_column, "right"),) if speeds else ())):
            sug.add_column(col, justify=justify, overflow="fold" if justify == "right" else "ellipsis")
        for s in plan.suggestions:
            sug.add_row(s.change, s.description, str(s.gpus), _fmt(s.total_bytes), _fmt(s.headroom_bytes),
                        *((_suggested_speed(s, banded=banded),) if speeds else ()))
        out.print(sug)
    _bullets(out, "Warnings", [f"{item.message} ({item.code})" for item in plan.warnings], marker="!")
    _bullets(out, "Still to check", [*plan.checks, *_speed_caveats(plan.extra.get("performance"))])
    _bullets(out, "Assumed", list(plan.assumptions))


def _suggested_speed(s: Any, *, banded: bool = True) -> str:
    """A suggestion's predicted training tokens/s with its band, as the speed section writes one: ``'12,865
    (11,437-14,319)'``; the figure alone where the user's efficiencies timed it (``banded`` False); empty where it
    has no prediction."""
    if not s.train_tokens_per_s:
        return ""
    low, high = s.train_tokens_per_s_low, s.train_tokens_per_s_high
    shown = banded and low is not None and high is not None
    return f"{s.train_tokens_per_s:,.0f}" + (f" ({low:,.0f}-{high:,.0f})" if shown else "")


def _speed_caveats(section: Any) -> list[str]:
    """The speed estimate's caveats a user must weigh before paying (a mixture of experts': how sure its speeds
    are; what a time to first token leaves out), from the performance section's assumptions."""
    from anchorgpu.planner.speed.estimate import SPEED_CAVEAT_LABELS

    if not isinstance(section, dict):
        return []
    return [line for line in section.get("assumptions", [])
            if isinstance(line, str) and line.startswith(tuple(label + ":" for label in SPEED_CAVEAT_LABELS))]


NO_TPOT_LINE = ("time per output token: does not apply (1 output token a request: no time between tokens; the token "
                "comes at the time to first token)")
"""The TPOT line of a serving plan timed with one output token a request. TPOT is the time between a request's
tokens, its first excluded (vLLM's serving benchmark: "Time per Output Token (excl. 1st token)"), so a one-token
answer has none; the JSON keeps ``tpot_s`` (its contract), there the steady state's seconds per request, 1 / the
per-user tokens/s."""


def _render_performance(out: Any, section: Any, *, concurrency: int | None = None,
                        context_tokens: int | None = None, uneven: bool = False) -> None:
    """Predicted speed with its band (what measured runs of the same kind fell within) and the ceiling; a serving
    estimate first names the requests it times, which need not be the sequences the memory is sized for. ``uneven``:
    replicas hold unequal shares of the users, so the per-user figures are the busiest replica's (its users are the
    slowest) while the output sums every replica's, more than per user x users."""
    if not isinstance(section, dict):
        return
    busiest = " (busiest replica)" if uneven else ""
    serving = (("ttft_s", "time to first token", "{:,.3f} s", 1.0),
               ("tpot_s", f"time per output token{busiest}", "{:,.1f} ms", 1e3),
               ("decode_tokens_per_s_per_user", f"per user{busiest}", "{:,.1f} tok/s", 1.0),
               ("output_tokens_per_s", "output", "{:,.0f} tok/s", 1.0),
               ("max_output_tokens_per_s", "at saturation", "{:,.0f} tok/s", 1.0))
    training = (("train_tokens_per_s", "training", "{:,.0f} tok/s", 1.0),
                ("train_tflops_per_gpu", "per GPU", "{:,.0f} TFLOP/s", 1.0),
                ("train_mfu", "MFU", "{:.1%}", 1.0))
    lines = [f"{label} {text}" for key, label, fmt, scale in (*serving, *training)
             if (text := band(without_ceiling(section, key), key, fmt, scale)) is not None]
    if section.get("output_tokens") == 1 and "tpot_s" in section:  # a one-token answer has no inter-token time
        lines = [NO_TPOT_LINE if line.startswith("time per output token") else line for line in lines]
    if section.get("compute_precision") in ("fp8", "fp4") and "train_mfu" in section:  # MFU's peak is the products'
        peak = f" of the {str(section['compute_precision']).upper()} dense peak"
        lines = [line + peak if line.startswith("MFU ") else line for line in lines]
    if not lines:
        for line in section.get("assumptions", [])[:1]:
            out.print(f"Speed: not predicted - {line}")
        return
    if section.get("efficiencies") == "user":
        out.print(f"[bold]Speed (with your efficiencies, no calibrated band; {BOUND_WORDS})[/bold]")
        for line in section.get("assumptions", [])[:1]:
            out.print(f"  {line}", markup=False)
    else:
        out.print(f"[bold]Speed (calibrated prediction, band, {BOUND_WORDS})[/bold]")
    timed = _timed_requests(section, concurrency, context_tokens)
    if timed:
        out.print(f"  {timed}", markup=False)
    for line in lines:
        out.print(f"  {line}", markup=False)
    sat = section.get("saturation_concurrency")
    if isinstance(sat, int) and "max_output_tokens_per_s" in section:
        p_tok, o_tok = section.get("prompt_tokens"), section.get("output_tokens")
        size = (f" of {_request_size(section, p_tok, o_tok)}" if isinstance(p_tok, int) and isinstance(o_tok, int)
                else "")
        reservation = section.get("kv_reservation")
        held = ("each with its prompt + output reserved up front (TensorRT-LLM's GUARANTEED_NO_EVICT)"
                if reservation == "full" else "their KV cache at its average length plus SGLang's new_token_ratio "
                "share of the output each may still write, leaving room for the next request's prompt + output"
                if reservation == "ratio" else "their KV cache at its average length (a paged engine fills "
                "it as tokens arrive"
                + (f"; {full:,} hold their full length, the most --concurrency N plans)"
                   if isinstance(full := section.get("saturation_full_length_concurrency"), int) and full < sat
                   else ")"))
        out.print(f"  saturation = {sat:,} sequences at once{size}, {held}", markup=False)
    evidence = section.get("evidence")
    if isinstance(evidence, dict) and isinstance(evidence.get("summary"), str):
        out.print(f"  measured runs: {evidence['summary']}", markup=False)
    train_s = section.get("train_time_s")
    if isinstance(train_s, int | float):
        from anchorgpu.units import fmt_figure

        hours = section.get("gpu_hours")

        def gpu_hours(value: float) -> str:  # two significant digits below 10 (0.12, not 0), as the page writes them
            return fmt_figure(value, 0)

        out.print(f"  training time {_duration(float(train_s))}{band_note(section, 'train_time_s', _duration)}"
                  + (f" · {gpu_hours(hours)} GPU-hours{band_note(section, 'gpu_hours', gpu_hours)}"
                     if isinstance(hours, int | float) else ""),
                  markup=False)
    parts = section.get("step_time_breakdown_s")
    if isinstance(parts, dict) and section.get("step_time_s"):
        total = float(section["step_time_s"])
        shown = [f"{name} {_seconds(value)} s ({value / total:.0%})" for name, value in parts.items() if value > 0]
        step_band = band_note(section, "step_time_s", lambda v: f"{_seconds(v)} s")
        out.print(f"  step {_seconds(total)} s{step_band} = " + " + ".join(shown), markup=False)
    from anchorgpu.planner.global_batch import BATCH_TIMED_LABEL
    from anchorgpu.planner.run_steps import RUN_STEPS_LABEL
    from anchorgpu.planner.speed.packages import LAUNCHED_LABEL
    from anchorgpu.planner.speed.training_lines import NETWORK_LABEL

    # the batch a training step is timed with, as given or the default's; the whole steps a run of --tokens is timed
    # as; the network between servers it is timed at; the devices a package of several is timed on
    for line in section.get("assumptions", []):
        if isinstance(line, str) and line.startswith((BATCH_TIMED_LABEL + ":", RUN_STEPS_LABEL + ":", NETWORK_LABEL + ":",
                                                      LAUNCHED_LABEL + ":")):
            out.print(f"  {line}", markup=False)


def _timed_requests(section: dict[str, Any], concurrency: int | None, context_tokens: int | None) -> str:
    """The requests a serving estimate times, and the sequence length the memory is sized for where it differs (a
    plan given only ``--context`` is sized at that length but timed at the default request).

    >>> _timed_requests({"ttft_s": 0.1, "prompt_tokens": 1024, "output_tokens": 256}, 32, 8192)
    'timed for 32 requests at once of 1,024 prompt + 256 output tokens (the memory above holds sequences of 8,192 tokens)'
    >>> _timed_requests({"ttft_s": 0.1, "prompt_tokens": 1000, "output_tokens": 200}, 1, 1200)
    'timed for 1 request at once of 1,000 prompt + 200 output tokens'
    >>> _timed_requests({"ttft_s": 0.1, "prompt_tokens": 1000, "output_tokens": 200, "saturation_concurrency": 64}, 256, 1200)
    "timed for 256 requests of 1,000 prompt + 200 output tokens, 64 of them running at once (the engine's saturation; the others wait in its queue)"
    >>> _timed_requests({"train_tokens_per_s": 1.0}, 1, 2048)
    ''
    """
    p_tok, o_tok = section.get("prompt_tokens"), section.get("output_tokens")
    if "ttft_s" not in section or not isinstance(p_tok, int) or not isinstance(o_tok, int) or not concurrency:
        return ""
    running = section.get("saturation_concurrency")
    text = (f"timed for {concurrency:,} request{'' if concurrency == 1 else 's'} at once of "
            + _request_size(section, p_tok, o_tok))
    if isinstance(running, int) and 1 <= running < concurrency:  # the engine runs its saturation, the rest queue
        text = (f"timed for {concurrency:,} requests of {_request_size(section, p_tok, o_tok)}, {running:,} of them "
                f"running at once (the engine's saturation; the others wait in its queue)")
    if context_tokens and context_tokens != p_tok + o_tok:
        text += f" (the memory above holds sequences of {context_tokens:,} tokens)"
    return text


def _request_size(section: dict[str, Any], prompt: int, output: int) -> str:
    """A timed request's tokens; an encoder-decoder's encoder input before its decoder's prompt and output; a vision
    model's prompt of text and image tokens (its vision tower's work is not part of it).

    >>> _request_size({"encoder_input_tokens": 1500}, 4, 256), _request_size({}, 1024, 256)
    ('1,500 encoder input + 4 decoder prompt + 256 output tokens', '1,024 prompt + 256 output tokens')
    >>> _request_size({"encoder_prefill_equivalent_tokens": 1048}, 3762, 256)
    '3,762 prompt (text and image tokens) + 256 output tokens'
    """
    enc = section.get("encoder_input_tokens")
    head = (f"{enc:,} encoder input + {prompt:,} decoder prompt" if isinstance(enc, int)
            else f"{prompt:,} prompt (text and image tokens)" if "encoder_prefill_equivalent_tokens" in section
            else f"{prompt:,} prompt")
    return f"{head} + {output:,} output tokens"


def _seconds(value: float) -> str:
    """A step or one of its parts in seconds, three significant figures, never in exponent form.

    >>> _seconds(1503.7), _seconds(43.62), _seconds(0.004261), _seconds(0.00002)
    ('1,504', '43.6', '0.00426', '<0.001')
    """
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 0.001 else "<0.001"


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
