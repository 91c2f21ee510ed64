"""Invariants of the speed estimate, checked over many planned configurations (a dev script, not a timed test).

Run from the repository root (it takes a few minutes of one CPU; be kind to a shared machine):

    nice .venv/bin/python benchmarks/speed_invariants.py            # SPEED_INV_SCALE=1 by default
    SPEED_INV_SCALE=0.3 SPEED_INV_CLI=0 nice .venv/bin/python benchmarks/speed_invariants.py   # quicker

It plans serving and training configurations in process (``plan`` + ``plan_performance``) over every registry
model, a dozen GPUs (NVIDIA datacenter and consumer, AMD), explicit and chosen layouts, several weight formats
and tiny to huge request sizes, then runs a sample of ``anchorgpu plan`` / ``recommend`` commands. It checks:

* a refusal is an :class:`~anchorgpu.errors.AnchorError` with a one-line message, never another exception;
* every figure is finite and > 0, ``_low <= value <= _high``, a rate <= its ``_ceiling`` and a time >= its own;
* serving: output tokens/s non-decreasing in concurrency (beyond rounding), TPOT non-decreasing in concurrency,
  TTFT non-decreasing in prompt length, ``max_output_tokens_per_s >= output_tokens_per_s``,
  ``decode_tokens_per_s_per_user == 1 / tpot_s``;
* training: ``train_mfu`` > 0 (and, soft, < 1: MFU counts attention over the whole sequence, so at long sequences
  its ceiling passes 1), step-time parts >= 0 summing to the step, tokens/s = tokens per step /
  step time, ``gpu_hours == gpus * train_time_s / 3600``; and (reported, "soft") a chosen layout on twice the
  GPUs that is much slower per run; the band and ceiling checks above again from 1,024 to 4,194,304 tokens a
  sequence (context parallelism at each GPU's 4,096 tokens, up to 64, and the chosen layout), where a ceiling formed
  from MFU's count (the masked half of attention included) would fall below the causal work's prediction, and the
  rate there under 0.9 of its ceiling (no calibrated training efficiency reaches 0.9 of the peak);
* CLI: exit code 0, 2 or 3 only, no traceback, ``--json`` parses, a refusal is one line.

Prints the counts (configurations, checks, violations by invariant with a few examples) and exits 1 when a
hard invariant was violated.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANCHORGPU = ROOT / ".venv" / "bin" / "anchorgpu"
sys.path.insert(0, str(ROOT / "src"))

from anchorgpu.architectures import load_model  # noqa: E402
from anchorgpu.architectures.spec import ModelSpec  # noqa: E402
from anchorgpu.errors import AnchorError  # noqa: E402
from anchorgpu.hardware import get_gpu  # noqa: E402
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan  # noqa: E402
from anchorgpu.planner.speed.estimate import plan_performance  # noqa: E402

GPUS = ("a100-80gb-sxm", "a100-40gb-sxm", "h100-sxm", "h100-pcie", "h200", "h20", "b200", "gb200", "l40s", "l4",
        "rtx-4090", "rtx-5090", "rtx-pro-6000", "mi300x", "mi325x", "mi355x", "a10g")
WEIGHTS = (None, "bf16", "fp8", "nvfp4", "int4-awq", "mxfp4", "int8", "gguf-q4_k_m")
RATES = ("output_tokens_per_s", "max_output_tokens_per_s", "decode_tokens_per_s_per_user", "train_tokens_per_s",
         "train_tflops_per_gpu", "train_mfu")
TIMES = ("ttft_s", "tpot_s", "train_time_s", "gpu_hours")
CONCURRENCY = (1, 2, 3, 8, 9, 31, 33, 64, 256, 1024, 4096, 10**6)  # 9 and 33: just past a multiple of 8 replicas
PROMPTS = (1, 16, 1000, 8000, 32000, 10**6)
SOFT = ("soft:", )  # invariant names starting with this are reported, not failed on
REL = 1e-6  # "rounding": relative slack for equalities and monotonicity


class Checker:
    def __init__(self) -> None:
        self.configs = 0
        self.planned = 0
        self.refused: Counter[str] = Counter()
        self.checks = 0
        self.violations: dict[str, list[str]] = defaultdict(list)

    def check(self, name: str, ok: bool, where: str, detail: str = "") -> bool:
        self.checks += 1
        if not ok:
            self.violations[name].append(f"{where}: {detail}")
        return ok

    def hard_violations(self) -> int:
        return sum(len(v) for k, v in self.violations.items() if not k.startswith(SOFT))


def _finite_pos(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check_figures(c: Checker, perf: dict[str, Any], where: str) -> None:
    """Every figure finite and > 0; its band around it; its ceiling beyond it."""
    for key in (*RATES, *TIMES):
        if key not in perf or perf[key] is None:
            continue
        v = perf[key]
        if not c.check("finite_positive", _finite_pos(v), where, f"{key}={v!r}"):
            continue
        lo, hi, top = perf.get(f"{key}_low"), perf.get(f"{key}_high"), perf.get(f"{key}_ceiling")
        if lo is not None and hi is not None:
            c.check("finite_positive", _finite_pos(lo) and _finite_pos(hi), where, f"{key} band {lo!r}..{hi!r}")
            c.check("low<=value<=high", lo <= v * (1 + REL) and v <= hi * (1 + REL), where, f"{key} {lo:.6g} <= {v:.6g} <= {hi:.6g}")
        if top is not None:
            c.check("finite_positive", _finite_pos(top), where, f"{key}_ceiling={top!r}")
            if key in RATES:
                c.check("rate<=ceiling", v <= top * (1 + REL), where, f"{key} {v:.6g} > ceiling {top:.6g}")
            else:
                c.check("time>=ceiling", v >= top * (1 - REL), where, f"{key} {v:.6g} < ceiling {top:.6g}")


def check_serving(c: Checker, perf: dict[str, Any], where: str, concurrency: int | None = None,
                  context_tokens: int | None = None, replicas: int = 1, prompt_asked: int | None = None) -> None:
    check_figures(c, perf, where)
    out, tpot = perf.get("output_tokens_per_s"), perf.get("tpot_s")
    sat = perf.get("saturation_concurrency") or 0
    if concurrency is not None and _finite_pos(out) and _finite_pos(tpot) and concurrency <= sat:
        # TPOT is the busiest replica's (ceil(c / replicas) users): an even split gives exactly c / TPOT; an uneven
        # one more (its lighter replicas are faster) but never more than every replica running the busiest one's
        # users (as many only where long prompts fill every pass of an EP group's replicas alike)
        even = concurrency % replicas == 0 or concurrency < replicas
        c.check("output==concurrency/tpot (even split)", not even or abs(out * tpot / concurrency - 1) <= REL, where,
                f"{out:.6g} vs {concurrency} / {tpot:.6g} = {concurrency / tpot:.6g}")
        bound = -(-concurrency // replicas) * replicas / tpot
        c.check("output<=phantom users' (uneven split)", even or out <= bound * (1 + REL),
                where, f"{out:.6g} > {-(-concurrency // replicas) * replicas} / {tpot:.6g}")
    prompt, output = perf.get("prompt_tokens"), perf.get("output_tokens")
    # (a vision or encoder-decoder model times its image/encoder work as extra prompt tokens, and an encoder-decoder's
    # prompt sits in its encoder, outside the decoder's planned context: not checked)
    if (context_tokens is not None and prompt and output and (prompt_asked is None or prompt == prompt_asked)
            and not perf.get("encoder_input_tokens")):
        c.check("speed_request_within_planned_context", prompt + output <= context_tokens, where,
                f"timed {prompt} + {output} tokens, memory planned for {context_tokens}")
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s", "decode_tokens_per_s_per_user"):
        c.check("serving_figure_present", perf.get(key) is not None, where, f"{key} missing")
    tpot, per_user = perf.get("tpot_s"), perf.get("decode_tokens_per_s_per_user")
    if _finite_pos(tpot) and _finite_pos(per_user):
        c.check("per_user==1/tpot", abs(per_user * tpot - 1) <= 1e-9, where, f"{per_user:.6g} * {tpot:.6g}")
    mx, out = perf.get("max_output_tokens_per_s"), perf.get("output_tokens_per_s")
    if mx is not None and _finite_pos(out):
        c.check("max_output>=output", mx >= out * (1 - REL), where, f"max {mx:.6g} < {out:.6g}")


def check_training(c: Checker, perf: dict[str, Any], where: str, gpus: int, train_tokens: int | None) -> None:
    check_figures(c, perf, where)
    mfu = perf.get("train_mfu")
    c.check("0<mfu", isinstance(mfu, float) and 0 < mfu, where, f"train_mfu={mfu!r}")
    c.check("soft:mfu<1", isinstance(mfu, float) and mfu < 1, where, f"train_mfu={mfu!r}")
    step, parts = perf.get("step_time_s"), perf.get("step_time_breakdown_s") or {}
    c.check("finite_positive", _finite_pos(step), where, f"step_time_s={step!r}")
    for name, v in parts.items():
        c.check("step_part>=0", isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, where, f"{name}={v!r}")
    if _finite_pos(step) and parts:
        total = sum(parts.values())
        c.check("sum(parts)==step", abs(total - step) <= 1e-6 * step, where, f"sum {total:.9g} vs step {step:.9g}: {parts}")
    tps, tokens_step = perf.get("train_tokens_per_s"), perf.get("global_batch_tokens")
    if _finite_pos(step) and _finite_pos(tps) and _finite_pos(tokens_step):
        c.check("tokens/s==tokens_per_step/step", abs(tps * step / tokens_step - 1) <= 1e-6, where,
                f"{tps:.6g} * {step:.6g} vs {tokens_step}")
    hours, t = perf.get("gpu_hours"), perf.get("train_time_s")
    if train_tokens:
        if c.check("train_time_present", _finite_pos(t) and _finite_pos(hours), where, f"time {t!r} hours {hours!r}"):
            c.check("gpu_hours==gpus*time/3600", abs(hours / (gpus * t / 3600) - 1) <= 1e-9, where,
                    f"{hours:.6g} vs {gpus} * {t:.6g} / 3600")
            c.check("train_time==tokens/rate", abs(t * tps / train_tokens - 1) <= 1e-6, where, f"{t:.6g} {tps:.6g}")
    # soft: a band edge beyond what the datasheet allows reads oddly beside the ceiling
    for key in RATES:
        hi, top = perf.get(f"{key}_high"), perf.get(f"{key}_ceiling")
        if hi is not None and top is not None:
            c.check("soft:rate_high<=ceiling", hi <= top * (1 + REL), where, f"{key}_high {hi:.4g} > ceiling {top:.4g}")


def attempt(c: Checker, where: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)``: an AnchorError is a refusal (one line), anything else a crash."""
    c.configs += 1
    try:
        result = fn(*args, **kwargs)
    except AnchorError as e:
        c.refused[type(e).__name__] += 1
        c.check("refusal_one_line", "\n" not in str(e) and bool(str(e).strip()), where, repr(str(e)))
        return None
    except Exception as e:  # noqa: BLE001 - the point of the script
        c.check("crash", False, where, f"{type(e).__name__}: {e}")
        return None
    c.planned += 1
    return result


def _plan_perf(model: Any, w: Workload, gpu: Any, layout: Layout, weights: str | None, **perf_kw: Any
               ) -> tuple[Any, dict[str, Any]] | None:
    p = plan(model, w, gpu=gpu, layout=layout, precision=PrecisionPlan(weights=weights))
    return p, plan_performance(p, **perf_kw)


def _desc(model: str, gpu: str, layout: Layout, weights: str | None, **kw: Any) -> str:
    lay = ",".join(f"{k}={v}" for k, v in (("gpus", layout.gpus), ("tp", layout.tp), ("pp", layout.pp), ("dp", layout.dp),
                                          ("ep", layout.ep), ("cp", layout.cp), ("zero", layout.zero),
                                          ("fsdp", layout.fsdp or None), ("v", layout.virtual_stages)) if v is not None)
    rest = " ".join(f"{k}={v}" for k, v in kw.items())
    return f"{model} on {gpu} [{lay}] weights={weights} {rest}"


def serving_sweep(c: Checker, models: list[ModelSpec], rng: random.Random, scale: float) -> None:
    for model in models:
        n_gpus = max(1, round(4 * scale))
        gpus = ["h100-sxm", *rng.sample([g for g in GPUS if g != "h100-sxm"], n_gpus)]
        for gname in gpus:
            gpu = get_gpu(gname)
            for weights in rng.sample(WEIGHTS, 2):
                for layout in (Layout(gpus=1), Layout(gpus=8, tp=rng.choice((2, 4, 8))),
                               Layout(gpus=8), Layout(gpus=16, tp=8, pp=2),
                               Layout(gpus=8, tp=rng.choice((1, 2)), ep=8),
                               Layout(gpus=16, tp=rng.choice((1, 2)), ep=16))[: 2 + round(4 * scale)]:
                    prompt, output = rng.choice(((1000, 200), (1, 1), (8000, 1), (100, 4000), (32000, 1000)))
                    engine = rng.choice(("vllm", "trtllm"))  # the serving engine sized for (--engine)
                    # concurrency ladder: output tokens/s and TPOT non-decreasing (fits only)
                    prev: tuple[Any, ...] | None = None
                    for conc in CONCURRENCY:
                        where = _desc(model.name, gname, layout, weights, prompt=prompt, output=output, conc=conc,
                                      engine=engine)
                        w = Workload(task="inference", prompt_tokens=prompt, output_tokens=output, concurrency=conc,
                                     engine=engine)
                        r = attempt(c, where, _plan_perf, model, w, gpu, layout, weights)
                        if r is None or r[0].fits is not True:
                            continue
                        p, perf = r
                        check_serving(c, perf, where, conc, p.workload.context_tokens, p.layout.dp, prompt)
                        # --gpus N alone keeps the default split while it holds the users, then takes another that
                        # does (Layout chosen on the N GPUs asked): the ladder compares plans of one resolved layout
                        resolved = (p.layout.tp, p.layout.pp, p.layout.dp, p.layout.ep)
                        if prev is not None and prev[2] != resolved:
                            prev = None
                        if prev is not None and prev[1].get("tpot_s") and perf.get("tpot_s"):
                            pc, pp_, _ = prev
                            # the replicas of an EP group wider than TP step together: a user added to one of them
                            # slows every replica's step by its own attention, which can cost more output than it
                            # adds where long contexts make attention the step's bulk (attention DP's imbalance);
                            # an even split of users is checked, an uneven one is not
                            lockstep = p.layout.ep > p.layout.tp and conc % p.layout.dp != 0
                            c.check("output_tps_nondecreasing_in_concurrency",
                                    lockstep or perf["output_tokens_per_s"] >= pp_["output_tokens_per_s"] * (1 - 1e-3),
                                    where,
                                    f"conc {pc}: {pp_['output_tokens_per_s']:.6g} -> conc {conc}: {perf['output_tokens_per_s']:.6g}")
                            c.check("tpot_nondecreasing_in_concurrency", perf["tpot_s"] >= pp_["tpot_s"] * (1 - REL),
                                    where, f"conc {pc}: {pp_['tpot_s']:.6g} -> conc {conc}: {perf['tpot_s']:.6g}")
                        prev = (conc, perf, resolved)
                    # prompt ladder: TTFT non-decreasing in prompt length at a fixed concurrency
                    conc = rng.choice((1, 16))
                    prev = None
                    for prompt_i in PROMPTS:
                        where = _desc(model.name, gname, layout, weights, prompt=prompt_i, output=output, conc=conc,
                                      engine=engine)
                        w = Workload(task="inference", prompt_tokens=prompt_i, output_tokens=output, concurrency=conc,
                                     allow_long_context=True, engine=engine)
                        r = attempt(c, where, _plan_perf, model, w, gpu, layout, weights)
                        if r is None or r[0].fits is not True:
                            continue
                        check_serving(c, r[1], where, conc, r[0].workload.context_tokens, r[0].layout.dp,
                                      prompt_i)
                        resolved = (r[0].layout.tp, r[0].layout.pp, r[0].layout.dp, r[0].layout.ep)
                        if prev is not None and prev[2] != resolved:  # the chooser took another layout
                            prev = None
                        if prev is not None and prev[1].get("ttft_s") and r[1].get("ttft_s"):
                            c.check("ttft_nondecreasing_in_prompt", r[1]["ttft_s"] >= prev[1]["ttft_s"] * (1 - REL),
                                    where, f"prompt {prev[0]}: {prev[1]['ttft_s']:.6g} -> {prompt_i}: {r[1]['ttft_s']:.6g}")
                        prev = (prompt_i, r[1], resolved)


def overrides_sweep(c: Checker, models: list[ModelSpec], rng: random.Random) -> None:
    """User efficiencies (--mfu/--mbu) at their edges, and request sizes given to plan_performance itself."""
    gpu = get_gpu("h100-sxm")
    for model in rng.sample(models, min(20, len(models))):
        for mfu, mbu in ((1.0, 1.0), (1e-6, 1e-6), (0.5, None), (None, 0.01), (0.0, 0.5), (1.5, None), (None, -1.0)):
            where = f"{model.name} on h100 inference mfu={mfu} mbu={mbu}"
            w = Workload(task="inference", prompt_tokens=500, output_tokens=100, concurrency=8)
            r = attempt(c, where, _plan_perf, model, w, gpu, Layout(gpus=8), None, mfu=mfu, mbu=mbu)
            if r is not None and r[0].fits:
                check_serving(c, r[1], where)
            where = f"{model.name} on h100 train gpus=64 mfu={mfu} mbu={mbu}"
            w = Workload(task="train", seq_tokens=2048)
            r = attempt(c, where, _plan_perf, model, w, gpu, Layout(gpus=64), None, mfu=mfu, mbu=mbu,
                        train_tokens=10**10)
            if r is not None and r[0].fits:
                check_training(c, r[1], where, r[0].layout.gpus, 10**10)
        for prompt, output in ((1, 1), (10**6, 1), (1, 10**6), (0, 5), (5, -1)):
            where = f"{model.name} on h100 plan_performance(prompt_tokens={prompt}, output_tokens={output})"
            w = Workload(task="inference", concurrency=4)
            r = attempt(c, where, _plan_perf, model, w, gpu, Layout(gpus=8), None, prompt_tokens=prompt,
                        output_tokens=output)
            if r is not None and r[0].fits:
                check_serving(c, r[1], where)


def training_sweep(c: Checker, models: list[ModelSpec], rng: random.Random, scale: float) -> None:
    tokens = 10**12
    for model in models:
        n_gpus = max(1, round(3 * scale))
        for gname in ["h100-sxm", *rng.sample([g for g in GPUS if g != "h100-sxm"], n_gpus)]:
            gpu = get_gpu(gname)
            for task in ("train", "lora", "qlora"):
                seq = rng.choice((512, 2048, 8192))
                # chosen layouts over a GPU ladder: per-run speed should not collapse on twice the GPUs
                prev = None
                for n in (1, 8, 16, 64, 512)[: 3 + round(2 * scale)]:
                    layout = Layout(gpus=n)
                    where = _desc(model.name, gname, layout, None, task=task, seq=seq)
                    w = Workload(task=task, seq_tokens=seq)  # type: ignore[arg-type]
                    r = attempt(c, where, _plan_perf, model, w, gpu, layout, None, train_tokens=tokens)
                    if r is None or r[0].fits is not True:
                        continue
                    check_training(c, r[1], where, r[0].layout.gpus, tokens)
                    tps = r[1].get("train_tokens_per_s")
                    if prev is not None and tps:
                        c.check("soft:chosen_layout_slower_on_more_gpus", tps >= 0.9 * prev[1], where,
                                f"{prev[0]} GPUs {prev[2]}: {prev[1]:,.0f} tok/s -> {n} GPUs {r[0].layout}: {tps:,.0f} tok/s")
                    if tps:
                        prev = (n, tps, r[0].layout)
                # explicit layouts: random knobs
                for _ in range(max(1, round(4 * scale))):
                    tp, pp, cp = rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4)), rng.choice((1, 1, 2))
                    dp = rng.choice((1, 2, 4))
                    ep = rng.choice((None, None, 2, 8)) if model.moe is not None else None
                    fsdp = rng.random() < 0.2
                    zero = None if fsdp else rng.choice((None, 0, 1, 2, 3))
                    vs = rng.choice((None, 1, 2)) if pp > 1 else None
                    layout = Layout(gpus=tp * pp * cp * dp, tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, zero=zero, fsdp=fsdp,
                                    virtual_stages=vs, tp_overlap=rng.random() < 0.3)
                    mb = rng.choice((None, 1, 4))
                    gb = rng.choice((None, 1, 2**16, 2**22, 2**26))
                    tp_ = rng.choice(("mixed", "bf16-true", "fp8"))
                    stack = rng.choice(("megatron", "pytorch"))
                    where = _desc(model.name, gname, layout, None, task=task, seq=seq, micro_batch=mb,
                                  global_batch=gb, precision=tp_) + f" stack={stack}"
                    w = Workload(task=task, seq_tokens=seq, micro_batch=mb, global_batch_tokens=gb,  # type: ignore[arg-type]
                                 train_precision=tp_, train_stack=stack)  # type: ignore[arg-type]
                    r = attempt(c, where, _plan_perf, model, w, gpu, layout, None, train_tokens=tokens)
                    if r is None or r[0].fits is not True:
                        continue
                    check_training(c, r[1], where, r[0].layout.gpus, tokens)
                    if model.moe is not None and task == "train":
                        # the plan's micro-batch for every level: left open, each level would choose its own
                        # (a level that keeps less fits a larger one), and their activations would not compare
                        recompute_ladder_checks(c, model, replace(w, micro_batch=r[0].workload.micro_batch), gpu,
                                                r[0].layout, where)


LONG_SEQS = (1024, 8192, 32768, 131072, 1_048_576, 4_194_304)
LONG_MODELS = ("pythia-1b", "llama-3.2-1b", "llama-3.1-8b", "gemma-2-9b", "qwen3-30b-a3b", "deepseek-v2-lite",
               "jamba-1.5-mini", "llama-3.1-70b")


def long_sequence_sweep(c: Checker, rng: random.Random, scale: float) -> None:
    """Training from 1,024 to 4,194,304 tokens a sequence on 64 GPUs: context parallelism keeping 4,096 tokens a GPU
    (up to 64, TP 1) and the layout chosen, each checked as ``check_training`` does (prediction within its band, a
    rate at most its ceiling, a time at least its own), and the rate under 0.9 of its ceiling."""
    tokens = 10**12
    for name in LONG_MODELS:
        model = load_model(name)
        for gname in ["h100-sxm", "b200", *rng.sample(["h200", "mi355x", "a100-80gb-sxm"], max(0, round(scale)))]:
            gpu = get_gpu(gname)
            for seq in LONG_SEQS:
                cp = max(1, min(64, seq // 4096))
                for layout in (Layout(gpus=64, cp=cp, tp=1 if cp > 1 else None), Layout(gpus=64)):
                    where = _desc(name, gname, layout, None, task="train", seq=seq)
                    w = Workload(task="train", seq_tokens=seq, allow_long_context=True)
                    r = attempt(c, where, _plan_perf, model, w, gpu, layout, None, train_tokens=tokens)
                    if r is None or r[0].fits is not True:
                        continue
                    check_training(c, r[1], where, r[0].layout.gpus, tokens)
                    # the ceiling is every GPU at the peak on the causal work the step runs, and no calibrated
                    # training efficiency (products, attention) reaches 0.9 of the peak: a prediction that close to
                    # its ceiling means the ceiling counts other work (MFU's, the masked half included)
                    tps, top = r[1].get("train_tokens_per_s"), r[1].get("train_tokens_per_s_ceiling")
                    if _finite_pos(tps) and _finite_pos(top):
                        c.check("train_rate<=0.9*ceiling", tps <= 0.9 * top, where,
                                f"{tps:,.0f} tok/s is {tps / top:.2f} of the ceiling {top:,.0f}")


def recompute_ladder_checks(c: Checker, model: ModelSpec, w: Workload, gpu: Any, layout: Any, where: str) -> None:
    """A mixture of experts on one layout at each recompute level: each level keeps no more activations than the one
    before (none, selective, moe, full), and runs no faster than no recompute."""
    lay = Layout(gpus=layout.gpus, tp=layout.tp, pp=layout.pp, cp=layout.cp, dp=layout.dp, ep=layout.ep,
                 zero=layout.zero, virtual_stages=layout.virtual_stages, tp_overlap=layout.tp_overlap)
    plans = {}
    for rc in ("none", "selective", "moe", "full"):
        got = attempt(c, f"{where} recompute={rc}", _plan_perf, model, replace(w, recompute=rc), gpu, lay, None)
        if got is not None:
            plans[rc] = got
    # on the PyTorch-native stack selective recompute is torchtitan's op-level policy, which may keep less than
    # Megatron-Core's MoE-block recompute: each is checked against none and full only there
    orders = [("none", "selective", "moe", "full")] if w.train_stack != "pytorch" else [
        ("none", "selective", "full"), ("none", "moe", "full")]
    for order in orders:
        kept = [plans[rc][0].per_gpu.activations_bytes for rc in order if rc in plans]
        c.check("recompute_keeps_more_activations", all(a >= b for a, b in zip(kept, kept[1:], strict=False)), where,
                f"activations by recompute level {order}: {kept}")
    base = plans.get("none")
    for rc in ("moe", "full"):
        if base is not None and rc in plans:
            fast, slow = base[1].get("train_tokens_per_s"), plans[rc][1].get("train_tokens_per_s")
            if fast and slow:
                c.check("soft:recompute_faster_than_none", slow <= fast * 1.001, f"{where} recompute={rc}",
                        f"{slow:,.0f} tok/s against {fast:,.0f} without recompute")


def diffusion_sweep(c: Checker, pipelines: list[Any]) -> None:
    for model in pipelines:
        for gname in ("h100-sxm", "rtx-4090", "mi300x"):
            where = f"{model.name} on {gname} diffusion"
            w = Workload(task="diffusion", resolution=(1024, 1024), images=2)
            r = attempt(c, where, _plan_perf, model, w, get_gpu(gname), Layout(gpus=1), None)
            if r is not None:
                c.check("diffusion_no_figures", r[1].get("ttft_s") is None, where, "serving figures for a pipeline")


CLI_CASES: list[list[str]] = [
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--concurrency", "64", "--prompt", "1000",
     "--output-tokens", "200", "--weights", "fp8"],
    ["plan", "llama-3.1-8b", "--gpu", "rtx-4090", "--concurrency", "1000000"],
    ["plan", "llama-3.1-8b", "--gpu", "l4", "--prompt", "1000000", "--output-tokens", "1", "--allow-long-context"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1", "--output-tokens", "1000000", "--allow-long-context"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "0"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "0"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1.5"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--tp", "3"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--mfu", "2"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--mbu", "0"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--mfu", "nan"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--mbu", "inf"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "1e12"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "0"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "1e300"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "1e400"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "-5"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--tokens", "nan"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--global-batch", "1"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--global-batch", "1e30"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "8", "--global-batch", "0"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--tp", "8", "--pp", "4",
     "--virtual-stages", "5", "--zero", "1", "--tokens", "1e12"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--tp", "8", "--pp", "4",
     "--virtual-stages", "0"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--cp", "0"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--cp", "4", "--seq", "32k",
     "--tokens", "1e11"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--fsdp", "--tokens", "1e11"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--seq", "0"],
    ["plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "64", "--micro-batch", "0"],
    ["plan", "llama-3.1-70b", "--gpu", "mi300x", "--task", "lora", "--gpus", "8", "--tokens", "1e9"],
    ["plan", "llama-3.1-70b", "--gpu", "a100-40gb-sxm", "--task", "qlora", "--gpus", "1", "--tokens", "1e9"],
    ["plan", "mixtral-8x7b-v0.1", "--gpu", "h100", "--gpus", "8", "--ep", "8", "--tp", "1", "--concurrency", "64"],
    ["plan", "mixtral-8x7b-v0.1", "--gpu", "h100", "--task", "train", "--gpus", "16", "--ep", "8", "--tokens", "1e10"],
    ["plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--concurrency", "32"],
    ["plan", "deepseek-v3", "--gpu", "b200", "--gpus", "8", "--weights", "nvfp4", "--concurrency", "256"],
    ["plan", "deepseek-v3", "--gpu", "mi325x", "--gpus", "8", "--concurrency", "1"],
    ["plan", "gpt-oss-120b", "--gpu", "mi355x", "--gpus", "1", "--concurrency", "16"],
    ["plan", "gemma-3-27b", "--gpu", "rtx-5090", "--gpus", "2", "--weights", "int4-awq", "--concurrency", "4"],
    ["plan", "qwen2.5-vl-7b", "--gpu", "l40s", "--images-per-request", "4", "--concurrency", "8"],
    ["plan", "mamba-2.8b", "--gpu", "a10g", "--concurrency", "64"],
    ["plan", "jamba-1.5-mini", "--gpu", "h100", "--gpus", "2", "--concurrency", "64"],
    ["plan", "flux.1-dev", "--gpu", "h100", "--task", "diffusion", "--resolution", "1024x1024"],
    ["plan", "whisper-large-v3", "--gpu", "l4", "--concurrency", "8"],
    ["plan", "t5-base", "--gpu", "l4", "--task", "train", "--tokens", "1e9"],
    ["plan", "llama-3.1-405b", "--gpu", "h100", "--gpus", "1024", "--task", "train", "--tokens", "1.5e13"],
    ["plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--task", "train", "--tp", "8", "--tp-overlap",
     "--train-precision", "fp8", "--tokens", "1e10"],
    ["plan", "llama-3.1-8b", "--gpu", "a100", "--task", "train", "--gpus", "8", "--train-precision", "fp8"],
    ["plan", "llama-3.1-8b", "--gpu", "nope-gpu"],
    ["plan", "no-such-model", "--gpu", "h100"],
    ["recommend", "llama-3.1-70b", "--task", "inference", "--context", "8192", "--concurrency", "32"],
    ["recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e12"],
    ["recommend", "llama-3.1-8b", "--task", "qlora", "--tokens", "1e8"],
    ["recommend", "mixtral-8x7b-v0.1", "--task", "inference", "--concurrency", "1000000"],
    ["recommend", "llama-3.1-8b", "--task", "inference", "--prompt", "1", "--output-tokens", "1"],
    ["recommend", "llama-3.1-8b", "--task", "train", "--tokens", "0"],
    ["recommend", "llama-3.1-8b", "--task", "inference", "--min-tokens-per-s", "1e12"],
    ["recommend", "llama-3.1-8b", "--task", "inference", "--mfu", "0"],
]


def cli_sweep(c: Checker, rng: random.Random, scale: float) -> None:
    env = {**os.environ, "ANCHORGPU_DATABASE_URL": "sqlite:////tmp/anchorgpu-speed-invariants.sqlite3"}
    cases = list(CLI_CASES)
    if scale < 1:
        cases = rng.sample(cases, max(8, round(len(cases) * scale)))
    for argv in cases:
        for as_json in (True, False):
            cmd = [str(ANCHORGPU), *argv, *(["--json"] if as_json else [])]
            where = " ".join(["anchorgpu", *argv, *(["--json"] if as_json else [])])
            c.configs += 1
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
            except subprocess.TimeoutExpired:
                c.check("cli_timeout", False, where, "over 120 s")
                continue
            c.check("cli_exit_code_0_2_3", p.returncode in (0, 2, 3), where, f"rc={p.returncode} {p.stderr[-300:]!r}")
            c.check("cli_no_traceback", "Traceback" not in p.stderr + p.stdout, where, p.stderr[-300:])
            if p.returncode in (2, 3):
                c.refused[f"cli exit {p.returncode}"] += 1
                msg = p.stderr.strip()
                c.check("cli_refusal_one_line", bool(msg) and "\n" not in msg, where, repr(msg[:300]))
            if p.returncode == 0 and as_json:
                try:
                    data = json.loads(p.stdout)
                except ValueError as e:
                    c.check("cli_json_parses", False, where, str(e))
                    continue
                c.check("cli_json_parses", True, where)
                c.check("cli_json_no_nan", "NaN" not in p.stdout and "Infinity" not in p.stdout, where, "NaN/Infinity in JSON")
                perf = data.get("performance") if isinstance(data, dict) else None
                if isinstance(perf, dict) and data.get("fits") is True:
                    if perf.get("ttft_s") is not None:
                        check_serving(c, perf, where)
                    if perf.get("train_tokens_per_s") is not None:
                        tokens = None
                        if "--tokens" in argv:
                            tokens = int(float(argv[argv.index("--tokens") + 1]))
                        check_training(c, perf, where, data["gpus"], tokens)


def main() -> int:
    scale = float(os.environ.get("SPEED_INV_SCALE", "1"))
    rng = random.Random(int(os.environ.get("SPEED_INV_SEED", "7")))
    import anchorgpu.architectures as arch

    names = list(arch.list_models())
    loaded = [load_model(n) for n in names]
    llms = [m for m in loaded if isinstance(m, ModelSpec)]
    pipelines = [m for m in loaded if not isinstance(m, ModelSpec)]
    c = Checker()
    start, cpu0 = time.perf_counter(), time.process_time()
    for label, fn in (("serving", lambda: serving_sweep(c, llms, rng, scale)),
                      ("overrides", lambda: overrides_sweep(c, llms, rng)),
                      ("training", lambda: training_sweep(c, llms, rng, scale)),
                      ("long seq", lambda: long_sequence_sweep(c, rng, scale)),
                      ("diffusion", lambda: diffusion_sweep(c, pipelines)),
                      ("cli", lambda: cli_sweep(c, rng, scale) if os.environ.get("SPEED_INV_CLI", "1") != "0" else None)):
        t0, n0, k0 = time.process_time(), c.configs, c.checks
        fn()
        print(f"{label:10s} {c.configs - n0:7,d} configurations, {c.checks - k0:8,d} checks, "
              f"{time.process_time() - t0:6.1f} s CPU", flush=True)
    print(f"\nmodels {len(llms)} LLMs + {len(pipelines)} pipelines; GPUs {len(GPUS)}")
    print(f"configurations {c.configs:,} (planned {c.planned:,}; refused {dict(c.refused)}); checks {c.checks:,}; "
          f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu0:.0f} s CPU")
    total = c.hard_violations()
    print(f"violations: {total:,} hard, {sum(len(v) for v in c.violations.values()) - total:,} soft")
    for name, items in sorted(c.violations.items(), key=lambda kv: (kv[0].startswith(SOFT), kv[0])):
        print(f"\n[{name}] {len(items):,}")
        for line in items[: int(os.environ.get("SPEED_INV_EXAMPLES", "4"))]:
            print(f"  - {line}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
