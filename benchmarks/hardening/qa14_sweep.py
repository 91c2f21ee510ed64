"""Stop 55 qa14: property sweeps over plan and recommend through the CLI in-process (benchmarks/hardening/stop55_qa14.md).

Run: PYTHONPATH=src python benchmarks/hardening/qa14_sweep.py [training|serving|recommend ...] (default: all three)
Prints one line per violated property ("!! ..."), then "done"; the checks:
- training: the layout chosen for 7 models x H100/B200/MI300X x 8..16,384 GPUs; tokens/s never falls when the GPUs
  double, TP never past 8, bands, breakdown sums, gpu_hours = N x time / 3600;
- serving: TTFT, TPOT and output tokens/s monotone in concurrency and in prompt length within one layout;
- recommend: each row's speed, time, TTFT, saturation and $/M tokens equal plan's at the row's layout.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
from typing import Any

from anchorgpu.cli import main
from anchorgpu.planner.speed.figures import MODEL_FLOP_FIGURES, TIME_FIGURES


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # pragma: no cover
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def plan_json(*argv: str) -> Any:
    code, out, err = cli("plan", *argv, "--json")
    if code != 0:
        return {"_code": code, "_err": err.strip()}
    return json.loads(out)


def problems(tag: str, answer: Any) -> list[str]:
    """Band and breakdown faults in one plan answer."""
    bad: list[str] = []
    perf = answer.get("performance") or {}
    for key, value in perf.items():
        if isinstance(value, float) and not math.isfinite(value):
            bad.append(f"{tag}: {key} = {value}")
        low, high, ceil = perf.get(key + "_low"), perf.get(key + "_high"), perf.get(key + "_ceiling")
        if isinstance(value, (int, float)) and isinstance(low, (int, float)) and isinstance(high, (int, float)):
            if not low <= value * (1 + 1e-9) or not value <= high * (1 + 1e-9):
                bad.append(f"{tag}: {key} band {low:.4g} <= {value:.4g} <= {high:.4g} broken")
            if isinstance(ceil, (int, float)) and ceil:
                is_time = key in TIME_FIGURES
                if is_time and ceil > low * (1 + 1e-9):
                    bad.append(f"{tag}: time {key} floor {ceil:.4g} above low {low:.4g}")
                if not is_time and key not in MODEL_FLOP_FIGURES and high > ceil * (1 + 1e-9):
                    bad.append(f"{tag}: rate {key} high {high:.4g} above ceiling {ceil:.4g}")
    b = perf.get("step_time_breakdown_s")
    if b and perf.get("step_time_s"):
        if abs(sum(b.values()) - perf["step_time_s"]) > 1e-6 * perf["step_time_s"]:
            bad.append(f"{tag}: breakdown {sum(b.values()):.6g} != step {perf['step_time_s']:.6g}")
    m, mm = perf.get("output_tokens_per_s"), perf.get("max_output_tokens_per_s")
    if isinstance(m, (int, float)) and isinstance(mm, (int, float)) and mm < m * (1 - 1e-9):
        bad.append(f"{tag}: max_output {mm:.4g} < output {m:.4g}")
    return bad


def _layout(answer: Any) -> tuple[int, ...]:
    return tuple(answer["layout"][k] for k in ("gpus", "tp", "pp", "cp", "dp", "ep", "zero", "virtual_stages"))


def training() -> None:
    models = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b-v0.1", "deepseek-v3", "qwen3-235b-a22b",
              "qwen3-30b-a3b")
    for model in models:
        for gpu in ("h100", "b200", "mi300x"):
            prev = 0.0
            for n in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
                a = plan_json(model, "--task", "train", "--gpu", gpu, "--gpus", str(n), "--tokens", "1T")
                tag = f"{model} {gpu} x{n}"
                if "_code" in a or not a["fits"]:
                    continue
                for line in problems(tag, a):
                    print("!!", line)
                p = a["performance"]
                if a["layout"]["tp"] > 8:
                    print("!!", tag, "TP past 8")
                if abs(p["gpu_hours"] - n * p["train_time_s"] / 3600) > 1e-6 * p["gpu_hours"]:
                    print("!!", tag, "gpu_hours")
                if p["train_tokens_per_s"] < prev * 0.999:
                    print("!!", tag, f"tokens/s fell with twice the GPUs: {prev:,.0f} -> {p['train_tokens_per_s']:,.0f}")
                prev = p["train_tokens_per_s"]


def serving() -> None:
    cases = (("llama-3.1-8b", "h100", ()), ("llama-3.1-70b", "h100", ("--gpus", "8")),
             ("llama-3.1-405b", "h100", ("--gpus", "8", "--weights", "fp8")), ("mixtral-8x7b-v0.1", "h100", ("--gpus", "2")),
             ("deepseek-v3", "h200", ("--gpus", "8")), ("qwen3-30b-a3b", "b200", ("--engine", "sglang")),
             ("gpt-oss-120b", "h100", ()), ("llama-3.1-70b", "mi300x", ()), ("llama-3.1-8b", "b200", ("--engine", "trtllm")),
             ("deepseek-v3", "b200", ("--gpus", "8", "--engine", "trtllm")))
    for model, gpu, extra in cases:
        for outer, inner, vary in (("prompt", "concurrency", (1, 8, 64, 512)), ("concurrency", "prompt", (100, 2000, 32000))):
            for fixed in ((200, 8000) if outer == "prompt" else (1, 64)):
                prev: tuple[Any, ...] | None = None
                for value in vary:
                    flags = {"prompt": fixed if outer == "prompt" else value,
                             "concurrency": fixed if outer == "concurrency" else value}
                    a = plan_json(model, "--gpu", gpu, "--prompt", str(flags["prompt"]), "--output-tokens", "256",
                                  "--concurrency", str(flags["concurrency"]), *extra)
                    tag = f"{model} {gpu} {' '.join(extra)} {flags}"
                    if "_code" in a or not a["fits"]:
                        continue
                    for line in problems(tag, a):
                        print("!!", line)
                    p = a["performance"]
                    cur = (_layout(a), p["ttft_s"], p["tpot_s"], p["output_tokens_per_s"])
                    if prev is not None and prev[0] == cur[0]:
                        if cur[1] < prev[1] * 0.999 or cur[2] < prev[2] * 0.999:
                            print("!!", tag, f"TTFT/TPOT fell as {inner} grew")
                        if (cur[3] < prev[3] * 0.999) if inner == "concurrency" else (cur[3] > prev[3] * 1.001):
                            print("!!", tag, f"output tokens/s moved the wrong way as {inner} grew")
                    prev = cur


def _recommend(*argv: str) -> Any:
    code, out, err = cli("recommend", *argv, "--json")
    return json.loads(out) if code == 0 else None


def recommend_vs_plan() -> None:
    for argv in (("llama-3.1-70b", "--prompt", "1000", "--output-tokens", "500", "--concurrency", "64"),
                 ("deepseek-v3", "--prompt", "1000", "--output-tokens", "1000", "--concurrency", "256"),
                 ("gpt-oss-120b", "--prompt", "1000", "--output-tokens", "1000", "--concurrency", "64")):
        d = _recommend(*argv, "--top", "8")
        opts = dict(zip(argv[1::2], argv[2::2], strict=True))
        for r in d["results"]:
            lay = r["layout"]
            a = plan_json(argv[0], "--gpu", r["gpu"], "--gpus", str(r["gpus"]), "--tp", str(lay["tp"]), "--pp",
                          str(lay["pp"]), "--dp", str(lay["dp"]), "--prompt", opts["--prompt"], "--output-tokens",
                          opts["--output-tokens"], "--concurrency", str(r["concurrency"]), "--weights", r["weights"],
                          *(("--kv-cache", r["kv_cache"]) if r.get("kv_cache") else ()),
                          *(("--ep", str(lay["ep"])) if lay["ep"] > 1 else ()))
            tag = f"{argv[0]} {r['offering']} x{r['gpus']} {lay}"
            if "_code" in a or not a["fits"]:
                print("!!", tag, "plan refuses or does not fit the row's layout")
                continue
            p = a["performance"]
            usd = float(r["total_usd"]) / (p["output_tokens_per_s"] * d["term_hours"] * 3600) * 1e6
            if (abs(r["output_tokens_per_s"] - p["output_tokens_per_s"]) > 0.06
                    or abs(r["max_output_tokens_per_s"] - p["max_output_tokens_per_s"]) > 0.06
                    or abs(float(r["usd_per_million_output_tokens"]) - usd) > 5e-4 * usd):
                print("!!", tag, "recommend and plan disagree")
    for argv in (("llama-3.1-70b", "--task", "train", "--tokens", "1T"),
                 ("llama-3.1-405b", "--task", "train", "--tokens", "1T", "--max-servers", "16")):
        d = _recommend(*argv, "--top", "8")
        for r in d["results"]:
            if r["offering"].endswith("-1x-vm") and r["gpus"] > 1:
                continue  # servers of one GPU: plan takes servers of 8 (recommend's assumptions say so)
            lay = r["layout"]
            a = plan_json(argv[0], "--task", "train", "--gpu", r["gpu"], "--gpus", str(r["gpus"]), "--tp",
                          str(lay["tp"]), "--pp", str(lay["pp"]), "--dp", str(lay["dp"]), "--cp", str(lay["cp"]),
                          "--zero", str(lay["zero"]), "--virtual-stages", str(lay["virtual_stages"]), "--recompute",
                          r["recompute"], "--tokens", "1T",
                          *(("--network-gbit-per-gpu", str(r["network_gbit_per_s_per_gpu"]))
                            if r["network_gbit_per_s_per_gpu"] else ()))
            tag = f"{argv[0]} {r['offering']} x{r['gpus']} {lay}"
            if "_code" in a or not a["fits"]:
                print("!!", tag, "plan refuses or does not fit the row's layout")
            elif abs(r["train_tokens_per_s"] - a["performance"]["train_tokens_per_s"]) > 0.06:
                print("!!", tag, "recommend and plan disagree")


SECTIONS = {"training": training, "serving": serving, "recommend": recommend_vs_plan}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SECTIONS):
        SECTIONS[name]()
    print("done")
