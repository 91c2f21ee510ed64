"""Stop 57 qa20: the training layouts plan chooses, and recommend's rows against plan (benchmarks/hardening/stop57_qa20.md).

Run: PYTHONPATH=src python benchmarks/hardening/qa20_sweep.py layouts MODELS GPUS COUNTS [PLAN FLAGS ...]
     PYTHONPATH=src python benchmarks/hardening/qa20_sweep.py faces
- layouts: one line per (model, GPU, count) of ``plan MODEL --task train --gpu GPU --gpus N [flags]`` (``--task``
  among the flags replaces ``train``): the layout chosen, micro-batch, recompute, tokens/s, MFU and GiB a GPU;
  comma lists, e.g. ``layouts llama-3.1-70b,qwen3-30b-a3b h100,mi300x 8,64,1024 --seq 131072``;
- faces: for seven ``recommend`` training questions, each row of the CLI's JSON against ``POST /v1/recommend`` (same
  tokens/s, time, run price) and against ``plan`` with the row's GPU, count and network (same layout, tokens/s and
  time); a row that differs is printed with "!!".
"""

from __future__ import annotations

import json
import sys
from typing import Any

sys.path.insert(0, "benchmarks/hardening")
from qa14_sweep import cli, plan_json  # noqa: E402

FACES: list[tuple[str, str, list[str], dict[str, Any]]] = [
    ("llama-3.1-70b", "train", ["--tokens", "100B"], {"train_tokens": 10**11}),
    ("qwen3-30b-a3b", "train", ["--tokens", "10B"], {"train_tokens": 10**10}),
    ("mixtral-8x7b", "train", ["--tokens", "10B"], {"train_tokens": 10**10}),
    ("llama-3.1-8b", "train", ["--tokens", "10B", "--seq", "131072"], {"train_tokens": 10**10, "seq": 131072}),
    ("llama-3.1-8b", "lora", ["--tokens", "100M"], {"train_tokens": 10**8}),
    ("llama-3.1-70b", "train", ["--tokens", "100B", "--train-precision", "fp8"],
     {"train_tokens": 10**11, "train_precision": "fp8"}),
    ("qwen3-235b-a22b", "train", ["--tokens", "100B", "--max-servers", "16"], {"train_tokens": 10**11, "max_servers": 16}),
]


def _split(layout: dict[str, Any]) -> tuple[int, ...]:
    return tuple(int(layout[k]) for k in ("tp", "pp", "dp", "ep", "cp", "virtual_stages", "zero"))


def layouts(models: str, gpus: str, counts: str, extra: list[str]) -> None:
    task = [] if "--task" in extra else ["--task", "train"]
    for model in models.split(","):
        for gpu in gpus.split(","):
            for n in counts.split(","):
                d = plan_json(model, *task, "--gpu", gpu, "--gpus", n, *extra)
                if "_code" in d:
                    print(f"{model:16} {gpu:8} {n:>5} ERR {d['_err'][:200]}")
                    continue
                lay, perf, w = d["layout"], d["performance"] or {}, d["workload"]
                tps, mfu = perf.get("train_tokens_per_s"), perf.get("train_mfu")
                print(f"{model:16} {gpu:8} {n:>5} {'FIT' if d['fits'] else 'NOFIT'} "
                      f"TP{lay['tp']} PP{lay['pp']} v{lay['virtual_stages']} CP{lay['cp']} DP{lay['dp']} EP{lay['ep']} "
                      f"Z{lay['zero']} mb{w.get('micro_batch')} rc{w.get('recompute')} "
                      f"tok/s {tps and round(tps)} mfu {mfu and round(mfu, 3)} "
                      f"GiB {d['per_gpu']['total_bytes'] / 2**30:.1f}")


def faces() -> None:
    from fastapi.testclient import TestClient

    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    client = TestClient(create_app(Settings(offline=True, rate_limit=False)))
    for model, task, flags, body in FACES:
        code, out, err = cli("recommend", model, "--task", task, "--top", "6", *flags, "--json")
        if code:
            print("!! recommend refused", model, flags, err[:300])
            continue
        rows = json.loads(out)["results"]
        api = client.post("/v1/recommend", json={"model": model, "task": task, "top": 6, **body}).json()["results"]
        plan_flags = [f for f in flags if f not in ("--max-servers", "16")]
        for i, r in enumerate(rows):
            for key in ("offering", "gpus", "train_tokens_per_s", "train_time_s", "run_hours", "run_usd"):
                if api[i].get(key) != r.get(key):
                    print(f"!! API != CLI {model} row {i} {key}: {api[i].get(key)} vs {r.get(key)}")
            network = ["--network-gbit-per-gpu", str(r["network_gbit_per_s_per_gpu"])] \
                if r.get("network_gbit_per_s_per_gpu") else []
            p = plan_json(model, "--task", task, "--gpu", r["gpu"], "--gpus", str(r["gpus"]), *plan_flags, *network)
            if "_code" in p:
                print(f"!! plan refused row {i} of {model}: {p['_err'][:200]}")
                continue
            perf = p["performance"]
            same = (_split(p["layout"]) == _split(r["layout"])
                    and abs(perf["train_tokens_per_s"] - r["train_tokens_per_s"]) <= 0.5
                    and abs(perf["train_time_s"] - r["train_time_s"]) < 1)
            print(f"{'' if same else '!!'}{model:15} {task:5} row {i} {r['offering']:18} {r['gpus']:4} "
                  f"recommend {_split(r['layout'])} {r['train_tokens_per_s']:,.0f} tok/s {r['run_hours']} h "
                  f"${r['run_usd']} | plan {_split(p['layout'])} {perf['train_tokens_per_s']:,.0f} tok/s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["layouts"]:
        layouts(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        faces()
