"""``anchorgpu recommend MODEL [workload] [--term 1month] [--max-usd X] [--top N] [--json]``.

Sweeps every catalog offering x whole servers x layouts x precisions x batch, keeps what fits, and ranks
by the total for the term (training with ``--tokens``: by the price of the run). A thin face over
:func:`anchorgpu.recommend.recommend`.
"""

from __future__ import annotations

from typing import Any

import typer

import anchorgpu.cli._help as OPTION_HELP
from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.cli.plan_parse import lower_choice
from anchorgpu.errors import InvalidWorkload

PROGRESS_THRESHOLD = 100_000
"""Configurations above which the sweep shows a progress bar (on stderr, never with --json)."""


class _Progress:
    """A Rich progress bar on stderr, created only once a sweep is long enough to need one."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_THRESHOLD:
            return
        if self.bar is None:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("sweeping configurations", total=total)
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@app.command("recommend")
def recommend_command(
    model: str = typer.Argument(..., help="Registry name, path to config.json (or its folder), or a Hub id (language model or diffusion pipeline)."),
    task: str = typer.Option("inference", "--task", callback=lower_choice, help="inference | train | lora | qlora. An option the task has no use for (--micro-batch for inference, --context for train) is refused, not ignored."),
    term: str = typer.Option("1month", "--term", help="Rental term: N hours, weeks or months (1h, 2w, 1month)."),
    max_usd: str | None = typer.Option(None, "--max-usd", help="Drop options that cost more than this: a training run's price with --tokens, else the term's total."),
    top: int = typer.Option(10, "--top", help="How many offerings to list."),
    gpu: str | None = typer.Option(None, "--gpu", help="Only offerings of this GPU (name or alias)."),
    max_servers: int = typer.Option(4, "--max-servers", help="Try 1..N whole servers of each offering."),
    weights: str | None = typer.Option(None, "--weights", help="Comma list of weight formats to compare (default: the plan's, i.e. the checkpoint's shipped format; training bf16). Lower ones are marked: outputs change."),
    kv_cache: str | None = typer.Option(None, "--kv-cache", help="Inference only: comma list of KV-cache dtypes: bf16, fp16, fp8, nvfp4 (default: the plan's, the FP8 or NVFP4 one the checkpoint ships on GPUs with the hardware for it, else fp8 or bf16). nvfp4 only where the engine runs it (vLLM: NVIDIA GPUs from Ampere on, not for MLA; trtllm: Blackwell)."),
    lower_precision: bool = typer.Option(False, "--lower-precision", help="Inference only: also consider fp8/int4-awq weights and an fp8 KV cache below the checkpoint's precision (outputs change: rerun evaluations)."),
    context: str | None = typer.Option(None, "--context", help=OPTION_HELP.CONTEXT),
    concurrency: str | None = typer.Option(None, "--concurrency", help="Sequences at once (inference only), e.g. 64 or 1k (= 1,000: a count, read as --tokens is); default: the most each offering serves."),
    min_tokens_per_s: float | None = typer.Option(None, "--min-tokens-per-s-per-user", "--min-tokens-per-s", help="Serving only: keep configurations whose predicted decode tokens/s a user, at their concurrency, is at least this (20 = a token every 50 ms); each offering keeps the fastest layout that meets it. --min-tokens-per-s is the same option's older name."),
    max_ttft_s: float | None = typer.Option(None, "--max-ttft-s", help="Serving only: keep configurations whose predicted time to the first token, at their concurrency, is at most this many seconds."),
    prompt: str | None = typer.Option(None, "--prompt", help="Prompt tokens (inference only; default: context - output)."),
    output_tokens: str | None = typer.Option(None, "--output-tokens", help="Output tokens per request, e.g. 256, 1e3 or 1k (inference only; default 256)."),
    images_per_request: int | None = typer.Option(None, "--images-per-request", help=OPTION_HELP.IMAGES_PER_REQUEST),
    image_resolution: str | None = typer.Option(None, "--image-resolution", help=OPTION_HELP.IMAGE_RESOLUTION),
    micro_batch: int | None = typer.Option(None, "--micro-batch", help="Sequences per GPU step (training only; chosen per layout when not given: 1, 2 or 4, the fastest that fits)."),
    seq: str | None = typer.Option(None, "--seq", help="Training sequence length in tokens (training only; serving's is --context)."),
    recompute: str | None = typer.Option(None, "--recompute", callback=lower_choice, help="none | selective (the attention core; with --train-stack pytorch, torchtitan's op-level policy) | moe (MoE blocks) | full (training)."),
    optimizer: str | None = typer.Option(None, "--optimizer", callback=lower_choice, help=OPTION_HELP.OPTIMIZER),
    lora_rank: int | None = typer.Option(None, "--lora-rank", help=OPTION_HELP.LORA_RANK),
    train_tokens: str | None = typer.Option(None, "--tokens", help="Training only: tokens to train on, e.g. 1e12, 300B or 15T (decimal): ranks by the price of the run."),
    global_batch: str | None = typer.Option(None, "--global-batch", help="Training: tokens per optimizer step, 4M, 16M or an integer (default 4M = 4,194,304; for LoRA/QLoRA 32 sequences); whole sequences, never rounded: only layouts it splits into whole micro-batches are offered."),
    train_precision: str | None = typer.Option(None, "--train-precision", callback=lower_choice, help="Training only: mixed (default) | bf16-true | fp8 | fp4 (FP8/FP4 products: offerings whose GPU lacks those tensor cores are rejected)."),
    optimizer_state: str | None = typer.Option(None, "--optimizer-state", callback=lower_choice, help="Training only: AdamW's state under mixed/fp8/fp4 (--task train): fp32 (fp32 master + moments, 12 B a parameter; the default) | bf16-moments (fp32 master, bf16 moments, 8 B) | bf16 (bf16 master + moments, 6 B)."),
    cross_entropy: str | None = typer.Option(None, "--cross-entropy", callback=lower_choice, help="Training only: the loss, for its memory: unfused (Megatron-Core's default, 6 B a logit) | native (6) | te (Transformer Engine's fused kernel, 2) | eager (PyTorch's fp32 cross_entropy, 12; default with --train-stack pytorch)."),
    train_stack: str | None = typer.Option(None, "--train-stack", callback=lower_choice, help=OPTION_HELP.TRAIN_STACK),
    mfu: float | None = typer.Option(None, "--mfu", help=OPTION_HELP.MFU),
    mbu: float | None = typer.Option(None, "--mbu", help=OPTION_HELP.MBU),
    gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization", help=OPTION_HELP.GPU_MEMORY_UTILIZATION),
    engine: str | None = typer.Option(None, "--engine", callback=lower_choice, help=OPTION_HELP.ENGINE),
    max_num_seqs: str | None = typer.Option(None, "--max-num-seqs", help=OPTION_HELP.MAX_NUM_SEQS),
    allow_long_context: bool = typer.Option(False, "--allow-long-context", help=OPTION_HELP.ALLOW_LONG_CONTEXT),
    images: int = typer.Option(1, "--images", help="Diffusion pipeline: images per batch per replica."),
    resolution: str | None = typer.Option(None, "--resolution", help="Diffusion pipeline: output WIDTHxHEIGHT, e.g. 1024x1024."),
    offline: bool = typer.Option(False, "--offline", help=OPTION_HELP.OFFLINE),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON contract."),
    recipe: str | None = typer.Option(None, "--recipe", callback=lower_choice, help="Also write each result's launch: vllm | sglang | trtllm | torchrun-fsdp | deepspeed | accelerate | skypilot | k8s (text: the first result's; --json: every result's)."),
) -> None:
    """The cheapest catalog offerings that fit a workload, with layout, speed and price for the term."""
    from datetime import UTC, datetime
    from decimal import Decimal

    from anchorgpu.architectures import ModelSpec, load_model
    from anchorgpu.catalog import load_catalog
    from anchorgpu.cli.plan_parse import parse_batch, parse_count, parse_resolution, parse_tokens
    from anchorgpu.cli.recommend_render import render_recommendation
    from anchorgpu.hardware import get_gpu
    from anchorgpu.money_rules import usd_amount
    from anchorgpu.planner import Workload
    from anchorgpu.planner.speed.overrides import Overrides
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import recommend, recommendation_to_json
    from anchorgpu.units import quotable_term
    from anchorgpu.validation import bounded_int, comma_list, positive_number

    the_term = quotable_term(term)
    budget: Decimal | None = usd_amount(max_usd) if max_usd is not None else None
    for value, field, flag in ((min_tokens_per_s, "min_tokens_per_s_per_user", "--min-tokens-per-s-per-user"),
                               (max_ttft_s, "max_ttft_s", "--max-ttft-s")):
        if value is not None:
            positive_number(value, field=field, flag=flag)
    # token counts are read as --prompt and --context are (8k, 1e3: one parser); counts of things stay plain integers
    output_tokens_n = parse_tokens(output_tokens, field="output_tokens")
    # counts of requests are read as --tokens is (64, 1k = 1,000, 1e3: one parser, one refusal), not by Click
    concurrency_n = parse_count(concurrency, field="concurrency", example="64 or 1k")
    max_num_seqs_n = parse_count(max_num_seqs, field="max_num_seqs", example="256 or 1k")
    for value, field in ((concurrency_n, "concurrency"), (micro_batch, "micro_batch"),
                         (lora_rank, "lora_rank"), (max_num_seqs_n, "max_num_seqs"), (top, "top")):  # plan's and the API's bounds
        bounded_int(value, field=field)
    if not 1 <= max_servers <= 16:
        raise InvalidWorkload(f"--max-servers {max_servers}: choose 1 to 16")
    from anchorgpu.planner.engine_choice import (
        engine_source,
        launch_reach,
        resolve_engine,
        resolve_train_stack,
    )
    from anchorgpu.planner.inputs import workload_of
    from anchorgpu.planner.validate import check_task_options, planned_task

    given: dict[str, object] = {  # an option the task has no use for is refused, as every face refuses it
        "train_precision": train_precision, "train_stack": train_stack, "recompute": recompute, "micro_batch": micro_batch,
        "seq": seq, "global_batch": global_batch, "optimizer": optimizer, "optimizer_state": optimizer_state,
        "tokens": train_tokens, "lora_rank": lora_rank, "context": context, "concurrency": concurrency_n, "prompt": prompt,
        "output_tokens": output_tokens_n, "engine": engine, "max_num_seqs": max_num_seqs_n,
        "gpu_memory_utilization": gpu_memory_utilization, "min_tokens_per_s_per_user": min_tokens_per_s,
        "max_ttft_s": max_ttft_s,
        "lower_precision": lower_precision}
    check_task_options(task, given)
    spec_model = load_model(model, offline=offline)
    check_task_options(planned_task(task, spec_model), given)  # a diffusion pipeline's default task is diffusion
    if recipe is not None:  # up front, as plan and POST /v1/recommend refuse it, not as recipe_refused on every row
        from anchorgpu.recipes import check_kind

        recipe = check_kind(recipe, diffusion=not isinstance(spec_model, ModelSpec), engine=engine, task=task)
    chosen_by = engine_source(engine, recipe)
    engine = resolve_engine(engine, recipe)
    catalog = load_catalog()
    offerings = catalog.offerings
    if gpu is not None:
        wanted = get_gpu(gpu).name
        offerings = tuple(o for o in offerings if o.gpu == wanted)
        if not offerings:
            raise InvalidWorkload(f"--gpu {gpu}: the catalog has no offering of {wanted}")
    if isinstance(spec_model, ModelSpec) and (images != 1 or resolution is not None):
        raise InvalidWorkload(f"--images/--resolution apply to diffusion pipelines; {spec_model.name} is a language model")
    if not isinstance(spec_model, ModelSpec) and engine != "vllm":
        raise InvalidWorkload(f"--engine {engine} sizes a language model's serving engine; {spec_model.name} is a "
                              "diffusion pipeline")
    asked_images = parse_resolution(image_resolution, flag="--image-resolution")
    if not isinstance(spec_model, ModelSpec):
        from anchorgpu.planner.validate import check_kv_cache_task
        from anchorgpu.planner.workload_checks import validate_workload
        from anchorgpu.recommend.diffusion import recommend_diffusion

        if task not in ("inference", "diffusion"):
            raise InvalidWorkload(f"{spec_model.name} is a diffusion pipeline: --task {task} does not apply")
        for kv in comma_list(kv_cache, flag="--kv-cache"):
            check_kv_cache_task(kv, "diffusion")
        bounded_int(images, field="images")
        diffusion = Workload(task="diffusion", images=images, resolution=parse_resolution(resolution),
                             images_per_request=images_per_request, image_resolution=asked_images)
        validate_workload(diffusion)  # images of a serving request: refused for the task, as plan refuses them
        rec = recommend_diffusion(spec_model, diffusion, catalog, the_term, datetime.now(UTC), weights=weights,
                                  max_usd=budget, top=top, offerings=offerings)
        if as_json:
            emit_json(recommendation_to_json(rec))
        else:
            render_recommendation(rec)
        return
    workload = workload_of(  # the options not given (None) take the planner's defaults; validated by the planner
        task=task, context_tokens=parse_tokens(context, field="context"), concurrency=concurrency_n,
        gpu_memory_utilization=gpu_memory_utilization, allow_long_context=allow_long_context,
        micro_batch=micro_batch,  # not given: the sweep picks 1, 2 or 4 per layout, as plan does
        engine=engine, engine_source=chosen_by, max_num_seqs=max_num_seqs_n, seq_tokens=parse_tokens(seq, field="seq"), recompute=recompute,
        optimizer=optimizer, lora_rank=lora_rank, train_precision=train_precision, optimizer_state=optimizer_state,
        cross_entropy=cross_entropy, train_stack=resolve_train_stack(train_stack, recipe, task),
        **launch_reach(recipe),
        images_per_request=images_per_request, image_resolution=asked_images,
    )
    spec = SweepSpec(  # the request as given (None: plan's defaults, which the sweep resolves as plan does)
        workload=workload, weights=comma_list(weights, flag="--weights"), kv_caches=comma_list(kv_cache, flag="--kv-cache"),
        prompt_tokens=parse_tokens(prompt, field="prompt"), output_tokens=output_tokens_n,
        train_tokens=parse_count(train_tokens, field="tokens"),
        global_batch_tokens=parse_batch(global_batch),
        efficiencies=Overrides(mfu=mfu, mbu=mbu),
    )
    progress = _Progress(enabled=not as_json)
    try:
        rec = recommend(spec_model, spec, catalog, the_term, datetime.now(UTC), max_usd=budget,
                        min_tokens_per_s_per_user=min_tokens_per_s, max_ttft_s=max_ttft_s, top=top,
                        max_servers=max_servers,
                        offerings=offerings, progress=progress, lower_precision=lower_precision)
    finally:
        progress.close()
    if recipe is not None:
        from dataclasses import replace

        from anchorgpu.recipes.for_results import attach_recipes, request_sized

        body = attach_recipes(recommendation_to_json(rec), spec_model,
                              request_sized(replace(workload, global_batch_tokens=spec.global_batch_tokens),
                                            spec.prompt_tokens, spec.output_tokens), recipe)
        if as_json:
            emit_json(body)
            return
        render_recommendation(rec)
        _render_first_recipe(body)
        return
    if as_json:
        emit_json(recommendation_to_json(rec))
    else:
        render_recommendation(rec)


def _render_first_recipe(body: dict[str, Any]) -> None:
    """The launch of the first result (``--json`` carries every result's)."""
    from anchorgpu.cli.plan_render import render_recipe
    from anchorgpu.recipes import Recipe

    if not body["results"]:
        return
    first = body["results"][0]
    out = console()
    out.print(f"For {first['servers']} x {first['offering']} (first result):", markup=False)
    r = first.get("recipe")
    if r is None:
        out.print(f"  no launch: {first.get('recipe_refused')}", markup=False)
        return
    render_recipe(Recipe(kind=r["kind"], command=r["command"], files=tuple((f["name"], f["text"]) for f in r["files"]),
                         assumptions=tuple(r["assumptions"]), cannot_set=tuple(r["cannot_set"]),
                         tool_version=r["tool_version"]))
