"""Stop 56 qa15: training answers across the faces, and a fuzz of training flags (benchmarks/hardening/stop56_qa15.md).

Run: PYTHONPATH=src python benchmarks/hardening/qa15_sweep.py [faces|fuzz SEED N ...] (default: faces, fuzz 1 400)
Prints one line per violated property ("!! ..."), then "done"; the checks:
- faces: 30 training plans (full, LoRA, QLoRA, MoE, FP8/FP4, CP, --mfu, --global-batch, PyTorch stack): CLI --json,
  POST /v1/plan and the /plan page give the same tokens/s, time and GPU-hours; time x tokens/s = --tokens;
  gpu_hours = GPUs x time / 3,600; qa14's band checks (qa14_sweep.problems); the CLI text and the page write the time
  in the same unit;
- fuzz: random training flag sets: exit 0 or 2, a refusal is one line starting "error: ", no NaN/inf or non-positive
  figure in the JSON, no "None" in a refusal.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import random
import re
import sys
from typing import Any

from anchorgpu.units import duration_in_unit

sys.path.insert(0, "benchmarks/hardening")
from qa14_sweep import cli, plan_json, problems  # noqa: E402

CASES = """\
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 1B
llama-3.1-8b --task lora --gpu h100 --gpus 1 --tokens 100M
llama-3.1-8b --task qlora --gpu h100 --gpus 1 --tokens 100M
llama-3.1-70b --task qlora --gpu h100 --gpus 1 --tokens 10M
llama-3.1-70b --task lora --gpu h100 --gpus 8 --tokens 1B
llama-3.1-70b --task train --gpu h100 --gpus 64 --tokens 100B --train-precision fp8
llama-3.1-70b --task train --gpu b200 --gpus 64 --tokens 100B --train-precision fp4
llama-3.1-8b --task train --gpu b200 --gpus 8 --tokens 10B --train-precision fp4
llama-3.1-8b --task train --gpu h100 --gpus 8 --seq 32768 --tokens 1B
llama-3.1-8b --task train --gpu h100 --gpus 16 --seq 131072 --tokens 1B
llama-3.1-70b --task train --gpu h100 --gpus 64 --seq 65536 --tokens 10B
mixtral-8x7b --task train --gpu h100 --gpus 64 --tokens 10B
mixtral-8x7b --task lora --gpu h100 --gpus 8 --tokens 1B
qwen3-30b-a3b --task train --gpu h100 --gpus 16 --tokens 10B
qwen3-30b-a3b --task qlora --gpu h100 --gpus 1 --tokens 10M
deepseek-v3 --task train --gpu h100 --gpus 1024 --tokens 1T
deepseek-v3 --task train --gpu h100 --gpus 1024 --tokens 1T --train-precision fp8
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 5M
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 1B --mfu 0.4
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 1B --global-batch 1M
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 1B --global-batch 16M
llama-3.1-8b --task train --gpu a100-80gb-sxm --gpus 8 --tokens 1B
llama-3.1-8b --task train --gpu l40s --gpus 8 --tokens 1B
llama-3.1-8b --task train --gpu mi300x --gpus 8 --tokens 1B
llama-3.1-8b --task train --gpu mi355x --gpus 8 --tokens 1B --train-precision fp4
llama-3.1-8b --task train --gpu h100 --gpus 16 --tokens 1B --network-gbit-per-gpu 25
llama-3.1-70b --task train --gpu h100 --gpus 16 --tokens 1B --tp 8 --pp 2
llama-3.1-70b --task train --gpu h100 --gpus 32 --tokens 1B --cp 2 --seq 8192
llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 1B --train-stack pytorch
llama-3.1-70b --task train --gpu h100 --gpus 64 --tokens 10B --train-stack pytorch"""

_FIELDS = {"--task": "task", "--gpu": "gpu", "--gpus": "gpus", "--tp": "tp", "--pp": "pp", "--cp": "cp",
           "--seq": "seq", "--global-batch": "global_batch", "--tokens": "tokens", "--mfu": "mfu",
           "--train-precision": "train_precision", "--train-stack": "train_stack",
           "--network-gbit-per-gpu": "network_gbit_per_gpu"}
_DECIMAL = {"k": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
_BINARY = {"k": 2**10, "M": 2**20}


def _body(args: list[str]) -> dict[str, Any]:
    """The POST /v1/plan body of a CLI argument list (the flags of CASES only)."""
    body: dict[str, Any] = {"model": args[0]}
    for flag, value in zip(args[1::2], args[2::2], strict=True):
        name = _FIELDS[flag]
        if name in ("task", "gpu", "train_precision", "train_stack"):
            body[name] = value
        elif name in ("mfu", "network_gbit_per_gpu"):
            body[name] = float(value)
        else:
            units = _BINARY if name == "global_batch" else _DECIMAL
            body[name] = int(float(value[:-1]) * units[value[-1]]) if value[-1] in units else int(value)
    return body


def faces() -> None:
    from fastapi.testclient import TestClient

    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    client = TestClient(create_app(Settings(offline=True, rate_limit=False)))
    for line in CASES.splitlines():
        args = line.split()
        answer = plan_json(*args)
        if "_code" in answer:
            print("!!", line, answer["_err"][:200])
            continue
        bad = problems(line, answer)
        perf, body = answer["performance"], _body(args)
        time_s, rate, hours = perf.get("train_time_s"), perf["train_tokens_per_s"], perf.get("gpu_hours")
        if time_s is not None:
            if abs(time_s * rate - body["tokens"]) > 1e-6 * body["tokens"]:
                bad.append(f"time x tokens/s {time_s * rate:.6g} != tokens {body['tokens']}")
            if hours is None or abs(hours - answer["layout"]["gpus"] * time_s / 3600) > 1e-6 * hours:
                bad.append(f"gpu_hours {hours} != GPUs x time / 3,600")
        api = client.post("/v1/plan", json=body)
        if api.status_code != 200:
            bad.append(f"API {api.status_code} {api.text[:160]}")
        else:
            for key in ("train_tokens_per_s", "train_time_s", "gpu_hours", "train_mfu"):
                theirs, ours = api.json()["performance"].get(key), perf.get(key)
                if (theirs is None) != (ours is None) or (ours and abs(theirs - ours) > 1e-9 * abs(ours)):
                    bad.append(f"API {key} {theirs} != CLI {ours}")
        page = client.get("/plan?" + "&".join(f"{k}={v}" for k, v in body.items()) + "&lang=en")
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.text))).replace("\u00a0", " ")
        _, out, _ = cli("plan", *args)
        out = re.sub(r"\s+", " ", out)
        if f"{rate:,.0f} tokens/s" not in text or f"training {rate:,.0f} tok/s" not in out:
            bad.append(f"page or CLI text lacks {rate:,.0f} tok/s")
        if time_s is not None:
            value, unit = duration_in_unit(time_s)
            if f"{value:,.1f} {unit}" not in text or f"training time {value:,.1f} {unit}" not in out:
                bad.append(f"page or CLI text lacks the time {value:,.1f} {unit}")
        for problem in bad:
            print("!!", problem)


_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b", "llama-3.2-1b", "deepseek-v3",
           "gpt-oss-20b")
_GPUS = ("h100", "b200", "mi300x", "a100-80gb-sxm", "l40s", "h200", "mi355x", "rtx-4090")
_OPTIONS = {"--gpus": "1 2 3 8 12 16 24 64 1000", "--tp": "1 2 3 4 8 16", "--pp": "1 2 3 4 8", "--cp": "1 2 4 8",
            "--ep": "1 2 4 8 16", "--dp": "1 2 4 8", "--zero": "0 1 2 3", "--seq": "512 2048 2050 4096 8192 32768 131072",
            "--global-batch": "2k 64k 1M 3M 4M 16M", "--micro-batch": "1 2 3 4 8", "--virtual-stages": "2 3 4 5",
            "--train-precision": "mixed bf16-true fp8 fp4", "--recompute": "none selective moe full",
            "--tokens": "1 5M 1B 1T", "--mfu": "0.05 0.3 0.9", "--train-stack": "megatron pytorch",
            "--network-gbit-per-gpu": "10 400", "--optimizer": "adamw adamw-8bit sgd", "--offload": "none optimizer params"}
_SWITCHES = ("--fsdp", "--tp-overlap", "--ep-overlap", "--sequence-parallel", "--no-sequence-parallel", "--json")


def fuzz(seed: int, count: int) -> None:
    from anchorgpu.cli import main

    rng = random.Random(seed)
    for _ in range(count):
        argv = ["plan", rng.choice(_MODELS), "--task", rng.choice(["train", "train", "lora", "qlora"]), "--gpu",
                rng.choice(_GPUS)]
        for flag in rng.sample(list(_OPTIONS), rng.randint(1, 5)):
            argv += [flag, rng.choice(_OPTIONS[flag].split())]
        argv += rng.sample(_SWITCHES, rng.randint(0, 2))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        said = err.getvalue()
        problem = None
        if code not in (0, 2):
            problem = f"exit {code}"
        elif code == 2 and (said.count("\n") != 1 or not said.startswith("error: ") or "None" in said):
            problem = "refusal not one line, or naming None"
        elif code == 0 and "--json" in argv:
            for key, value in (json.loads(out.getvalue()).get("performance") or {}).items():
                if isinstance(value, float) and (not math.isfinite(value) or value <= 0) \
                        and key != "pipeline_bubble_fraction":
                    problem = f"{key} = {value}"
        if problem:
            print("!!", problem, "|", " ".join(argv[1:]), "|", said.strip()[:300])


if __name__ == "__main__":
    what = sys.argv[1:] or ["faces", "fuzz", "1", "400"]
    if "faces" in what:
        faces()
    if "fuzz" in what:
        at = what.index("fuzz")
        fuzz(int(what[at + 1]), int(what[at + 2]))
    print("done")
