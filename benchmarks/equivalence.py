"""Equivalence check for speed work on the planner: same inputs, byte-identical answers, before and after.

Not a test and not a benchmark: a tool for a change that must not move a number (a faster ``plan()``, a
fused speed term). It plans a deterministic sample of configurations (every kind of model in the registry:
dense, MoE, MLA, sliding-window, state-space and hybrid, multimodal, encoder-decoder, diffusion; every task;
NVIDIA and AMD GPUs and none; explicit, partial and open layouts, many of them invalid on purpose), and
writes one JSON line per configuration: the inputs, then ``plan_to_json`` of the plan with its
``performance`` section (``plan_performance``: assumptions and warnings included), or the one-line refusal.
Then one line per catalog sweep (:data:`SWEEPS`: serving ladders and fixed concurrencies, two request
shapes, training and LoRA, over the whole catalog): the digest of every result column (dtype, shape, bytes).

    # the tree before the change (any checkout or export with a src/ folder), then this one
    git -C /work/main archive HEAD src | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    .venv/bin/python benchmarks/equivalence.py write /tmp/before.jsonl --tree /tmp/base
    .venv/bin/python benchmarks/equivalence.py write /tmp/after.jsonl
    .venv/bin/python benchmarks/equivalence.py compare /tmp/before.jsonl /tmp/after.jsonl

``write`` imports ``anchorgpu`` from ``TREE/src`` (default: this repository's) and prints a digest of the
file; ``compare`` prints the first differences (configuration, key path, both values) and exits 1 on any.
Floats are written with ``repr`` (exact), so "identical" means identical to the last bit. ``--count``
(default 36,000) and ``--seed`` choose the sample; the same arguments give the same configurations on any
tree, since the sample is drawn before anything is planned. About 1-2 minutes per 10,000 configurations on
one core; open training layouts (chosen for the user) are the slow part and are kept to small GPU counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# models of every kind the planner handles (registry names)
DENSE = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b", "qwen3-8b", "phi-4", "gpt2", "opt-125m",
         "falcon-7b", "bloomz-560m", "pythia-1b", "command-r-v01", "starcoder2-7b", "gemma-7b", "smollm3-3b")
MOE = ("mixtral-8x7b-v0.1", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b",
       "granite-3.1-3b-a800m", "llama-4-scout-17b-16e", "llama-4-maverick-17b-128e-fp8", "qwen2-57b-a14b")
MLA = ("deepseek-v2-lite", "deepseek-v3", "kimi-k2-instruct")
SLIDING = ("gemma-2-9b", "gemma-3-12b", "gemma-3-1b", "mistral-7b-v0.1", "ministral-8b-2410", "exaone-4.0-32b")
RECURRENT = ("mamba-130m", "mamba-2.8b", "falcon-mamba-7b", "mamba-codestral-7b", "jamba-1.5-mini", "nemotron-h-8b",
             "granite-4.0-h-tiny", "granite-4.0-h-1b", "nemotron-nano-9b-v2", "qwen3-coder-next")
MULTIMODAL = ("llama-3.2-11b-vision", "qwen2-vl-7b", "qwen2.5-vl-7b", "llava-1.5-7b", "llava-v1.6-mistral-7b",
              "gemma-3-4b", "qwen3-vl-4b", "mistral-small-3.1-24b", "whisper-large-v3", "t5-base", "flan-t5-xl")
DIFFUSION = ("flux.1-dev", "flux.1-schnell", "sd-3.5-large", "sdxl-base-1.0")
LANGUAGE = DENSE + MOE + MLA + SLIDING + RECURRENT + MULTIMODAL

GPUS = ("h100-sxm", "h100-sxm", "a100-80gb-sxm", "a100-40gb-sxm", "h100-pcie", "h200", "b200", "gb200", "l40s",
        "l4", "rtx-4090", "mi300x", "mi300x", "mi325x", "mi355x", "mi250x", "h20", None)
WEIGHTS = {  # per task: mostly what the task accepts, a few it refuses (the refusal is an answer too)
    "inference": (None, None, None, "bf16", "fp16", "fp8", "fp8", "int8", "int4-awq", "int4-gptq", "nf4", "mxfp4",
                  "nvfp4", "gguf-q4_k_m", "gguf-q8_0", "int3"),
    "train": (None, None, None, None, None, "bf16", "bf16", "fp16", "fp32", "fp8"),
    "lora": (None, None, "bf16", "fp16", "fp8", "int4-awq"),
    "qlora": (None, None, None, "nf4", "nf4-dq", "int4-gptq", "bf16"),
    "diffusion": (None, None, "bf16", "fp8", "nf4"),
}
TASKS = ("inference", "inference", "train", "train", "lora", "qlora")
# catalog sweeps (planner.sweep, what recommend ranks): model x workload x request shape
SWEEP_MODELS = ("llama-3.1-70b", "llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "gemma-3-12b", "deepseek-v3",
                "gpt-oss-120b", "jamba-1.5-mini")
SWEEP_SERVING = ({"context_tokens": 8192, "concurrency": 32}, {"context_tokens": 8192},
                 {"context_tokens": 32768, "concurrency": 4})
SWEEP_REQUESTS = ({}, {"prompt_tokens": 4000, "output_tokens": 200})
SWEEP_TRAINING = (("llama-3.1-8b", {"task": "train", "seq_tokens": 4096}), ("qwen3-30b-a3b", {"task": "lora"}),
                  ("llama-3.1-70b", {"task": "train"}), ("llama-3.1-70b", {"task": "train", "train_precision": "fp8"}),
                  ("mixtral-8x7b-v0.1", {"task": "qlora"}), ("llama-3.1-8b", {"task": "train", "recompute": "full"}))


def _maybe(rng: random.Random, p: float, value: Any) -> Any:
    return value if rng.random() < p else None


def _layout(rng: random.Random, task: str, moe: bool) -> dict[str, Any]:
    """Explicit layouts mostly; some partial or open (chosen for the user), small counts when open."""
    kind = rng.random()
    if task == "diffusion":  # replicas only; --offload params for the big pipelines
        out_d: dict[str, Any] = {"gpus": rng.choice((None, 1, 2, 4))}
        if rng.random() < 0.3:
            out_d["offload"] = "params"
        if rng.random() < 0.05:
            out_d["tp"] = 2
        return {k: v for k, v in out_d.items() if v is not None}
    if kind < 0.15:  # nothing but a GPU count: inference default TP, training chooses (kept small)
        return {"gpus": rng.choice((None, 1, 2, 4, 8)) if task != "inference" else rng.choice((None, 1, 2, 4, 8, 16))}
    tp = rng.choice((1, 1, 2, 4, 8, 8, 16, 3))
    pp = rng.choice((1, 1, 1, 2, 4, 8, 3))
    dp = rng.choice((1, 1, 2, 4, 8, 16, 64))
    cp = rng.choice((1, 1, 1, 1, 2, 4)) if task != "inference" and rng.random() < 0.5 else 1
    out: dict[str, Any] = {"tp": tp, "pp": pp, "dp": dp}
    if rng.random() < 0.8:
        out["gpus"] = tp * pp * dp * cp if rng.random() < 0.95 else tp * pp * dp * cp + 1
    if cp > 1:
        out["cp"] = cp
    if rng.random() < (0.5 if moe else 0.02):
        out["ep"] = rng.choice((2, 4, 8, 16))
    if task != "inference":
        if kind < 0.25:  # partial: some knobs left to the chooser
            for name in ("tp", "pp", "dp"):
                if rng.random() < 0.4:
                    out.pop(name)
            out["gpus"] = out.get("gpus") or rng.choice((2, 4, 8, 16))
            if out["gpus"] > 16:
                out["gpus"] = 16
                out.pop("dp", None)
        else:
            out["zero"] = rng.choice((0, 1, 1, 2, 3))
        if rng.random() < 0.1:
            out["fsdp"] = True
        if pp > 1:
            out["virtual_stages"] = rng.choice((1, 2, 4, 5, 8, None))
        if rng.random() < 0.15:
            out["tp_overlap"] = True
        if rng.random() < 0.08:
            out["offload"] = rng.choice(("optimizer", "params"))
    return {k: v for k, v in out.items() if v is not None}


def _workload(rng: random.Random, task: str, model: str) -> dict[str, Any]:
    w: dict[str, Any] = {"task": task}
    if task == "inference":
        form = rng.random()
        if form < 0.45:
            w["context_tokens"] = rng.choice((512, 2048, 4096, 8192, 32768, 131072, 1_000_000))
        elif form < 0.8:
            w["prompt_tokens"] = rng.choice((None, 128, 1000, 4000))
            w["output_tokens"] = rng.choice((None, 128, 200, 1000, 2048))
        w["concurrency"] = rng.choice((None, 1, 8, 32, 64, 256, 1024))
        if rng.random() < 0.1:
            w["allow_long_context"] = True
        if rng.random() < 0.1:
            w["gpu_memory_utilization"] = rng.choice((0.8, 0.95, 1.0, 1))
        if rng.random() < 0.1:
            w["max_num_seqs"] = rng.choice((64, 256))
        if rng.random() < 0.05:
            w["max_num_batched_tokens"] = 2048
        if model in MULTIMODAL and rng.random() < 0.5:
            w["images_per_request"] = rng.choice((0, 1, 2))
            if rng.random() < 0.5:
                w["image_resolution"] = rng.choice(((448, 448), (1024, 768)))
    elif task == "diffusion":
        w["resolution"] = rng.choice((None, (512, 512), (1024, 1024), (2048, 1024)))
        w["images"] = rng.choice((1, 1, 4))
        w["vae_tiling"] = rng.random() < 0.3
    else:
        w["seq_tokens"] = rng.choice((None, 1024, 2048, 4096, 8192, 32768))
        w["micro_batch"] = rng.choice((None, 1, 1, 2, 4))
        w["recompute"] = rng.choice((None, "none", "selective", "full"))
        w["global_batch_tokens"] = rng.choice((None, None, 2**20, 2**22, 2**22, 2**24, 10**7, 1000))
        w["optimizer"] = rng.choice(("adamw", "adamw", "adamw", "adamw-8bit", "sgd", "lion", "adafactor"))
        w["train_precision"] = rng.choice(("mixed", "mixed", "mixed", "mixed", "bf16-true", "fp8", "fp4"))
        if rng.random() < 0.1:
            w["grad_bytes_per_value"] = 4
        if task != "train":
            w["lora_rank"] = rng.choice((8, 16, 64))
            if rng.random() < 0.2:
                w["lora_targets"] = rng.choice((("q", "v"), ("q", "k", "v", "o"), ("gate", "up", "down")))
        if rng.random() < 0.05:
            w["allow_long_context"] = True
    return {k: v for k, v in w.items() if v is not None}


def _performance(rng: random.Random, task: str) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if task == "inference":
        if rng.random() < 0.2:
            p["prompt_tokens"] = rng.choice((100, 1000))
        if rng.random() < 0.2:
            p["output_tokens"] = rng.choice((50, 1000))
        if rng.random() < 0.2:
            p["kv_reservation"] = "full"
    elif rng.random() < 0.4:
        p["train_tokens"] = rng.choice((10**9, 10**11, 15 * 10**12))
    if rng.random() < 0.05:
        p["mfu"] = 0.4
    if rng.random() < 0.05:
        p["mbu"] = 0.7
    if rng.random() < 0.05:
        p["storage_bytes_per_s"] = 1e10
    return p


# benchmarks/run.py section (c): the explicit 70B training and serving layouts, and the layout chosen for the user
BENCHMARK_CONFIGS: tuple[dict[str, Any], ...] = (
    {"model": "llama-3.1-70b", "gpu": "h100-sxm", "precision": {},
     "workload": {"task": "train", "seq_tokens": 4096, "micro_batch": 1, "recompute": "full",
                  "global_batch_tokens": 2**22},
     "layout": {"gpus": 64, "tp": 8, "pp": 4, "zero": 1, "virtual_stages": 5}, "performance": {}, "suggest": True},
    {"model": "llama-3.1-70b", "gpu": "h100-sxm", "precision": {"weights": "fp8"},
     "workload": {"task": "inference", "context_tokens": 8192, "concurrency": 32},
     "layout": {"gpus": 4, "tp": 4, "pp": 1, "dp": 1}, "performance": {}, "suggest": True},
    {"model": "llama-3.1-70b", "gpu": "h100-sxm", "precision": {}, "workload": {"task": "train", "seq_tokens": 4096},
     "layout": {"gpus": 512}, "performance": {}, "suggest": True},
)


def configurations(count: int, seed: int) -> Iterator[dict[str, Any]]:
    """The benchmark's three, then ``count`` drawn ones: the same for the same (count, seed) on every tree."""
    for i, fixed in enumerate(BENCHMARK_CONFIGS):
        yield {"i": -len(BENCHMARK_CONFIGS) + i, **fixed}
    rng = random.Random(seed)
    for i in range(count):
        roll = rng.random()
        if roll < 0.04:
            model, task = rng.choice(DIFFUSION), rng.choice(("diffusion", "diffusion", "diffusion", "inference", "train"))
        else:
            model = rng.choice(LANGUAGE)
            task = rng.choice(TASKS) if rng.random() < 0.98 else "diffusion"
        yield {"i": i, "model": model, "gpu": rng.choice(GPUS), "workload": _workload(rng, task, model),
               "precision": {k: v for k, v in (("weights", rng.choice(WEIGHTS[task])),
                                               ("kv_cache", rng.choice(("bf16", "bf16", "fp8")))) if v},
               "layout": _layout(rng, task, model in MOE or model in MLA), "performance": _performance(rng, task),
               "suggest": rng.random() < 0.9}


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def write(out_path: Path, tree: Path, count: int, seed: int, shuffle: int | None = None,
          sample: Callable[[int, int], Iterator[dict[str, Any]]] | None = None, sweeps: bool = True) -> int:
    """Plan ``sample(count, seed)`` (default :func:`configurations`) with ``tree`` and write the lines (and the
    catalog sweeps' unless ``sweeps`` is false)."""
    sys.path.insert(0, str(tree / "src"))
    import anchorgpu
    from anchorgpu.architectures import load_model
    from anchorgpu.errors import AnchorError
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, model_to_json, plan, plan_to_json
    from anchorgpu.planner.speed.estimate import attach_performance

    source = Path(anchorgpu.__file__).resolve()
    if tree.resolve() not in source.parents:
        raise SystemExit(f"imported {source}, not the tree {tree}: run with a Python that does not shadow it")
    configs = list((sample or configurations)(count, seed))  # drawn before anything is planned
    models = {name: load_model(name) for name in sorted({c["model"] for c in configs})}
    gpus = {name: get_gpu(name) for name in sorted({c["gpu"] for c in configs if c["gpu"]})}
    model_docs: dict[tuple[str, str], dict[str, Any]] = {}
    order = list(range(len(configs)))
    if shuffle is not None:  # plan in another order (memoised state differs), write in the sample's order
        random.Random(shuffle).shuffle(order)
    lines: list[str] = [""] * len(configs)
    planned = refused = 0
    start = time.process_time()
    for index in order:
        c = configs[index]
        record: dict[str, Any] = {"config": c}
        try:
            p = plan(models[c["model"]], Workload(**_tuples(c["workload"])),
                     precision=PrecisionPlan(**c["precision"]), layout=Layout(**c["layout"]),
                     gpu=gpus[c["gpu"]] if c["gpu"] else None, suggest=c["suggest"])
            p = attach_performance(p, **c["performance"])
            key = (c["model"], p.precision.kv_cache)
            if key not in model_docs:
                model_docs[key] = model_to_json(p.model, kv_cache=p.precision.kv_cache)
            record["plan"] = plan_to_json(p, model_json={"ref": list(key)})
            planned += 1
        except (AnchorError, ValueError) as exc:  # a refusal is an answer too: its line must not move
            record["refused"] = f"{type(exc).__name__}: {exc}"
            refused += 1
        lines[index] = json.dumps(record, sort_keys=True, allow_nan=True)
    digest = hashlib.sha256()
    with out_path.open("w", encoding="utf-8") as out:
        for line in lines:
            digest.update(line.encode())
            out.write(line + "\n")
        for (name, kv), doc in sorted(model_docs.items()):
            line = json.dumps({"model_json": [name, kv], "doc": doc}, sort_keys=True)
            digest.update(line.encode())
            out.write(line + "\n")
        for line in _sweep_lines(models) if sweeps else ():
            digest.update(line.encode())
            out.write(line + "\n")
    print(f"{out_path}: {len(configs):,} configurations (seed {seed}) from {tree}: {planned:,} planned, {refused:,} refused; "
          f"{time.process_time() - start:.0f} s CPU; sha256 {digest.hexdigest()}")
    return 0


def _sweep_lines(models: dict[str, Any]) -> Iterator[str]:
    """One JSON line per catalog sweep: each result column's digest (or the refusal line)."""
    import numpy as np

    from anchorgpu.architectures import load_model
    from anchorgpu.catalog import load_catalog
    from anchorgpu.errors import AnchorError
    from anchorgpu.planner import Workload
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    shapes = shapes_from_catalog(load_catalog().offerings)
    cases = [(m, {"task": "inference", **w}, r) for m in SWEEP_MODELS for w in SWEEP_SERVING for r in SWEEP_REQUESTS]
    cases += [(m, w, {}) for m, w in SWEEP_TRAINING]
    for name, work, request in cases:
        record: dict[str, Any] = {"sweep": [name, work, request]}
        try:
            result = sweep(models.get(name) or load_model(name), shapes, SweepSpec(workload=Workload(**work), **request))
            record["evaluated"] = result.evaluated
            record["columns"] = {
                key: f"{col.dtype} {col.shape} " + hashlib.sha256(np.ascontiguousarray(col).tobytes()).hexdigest()
                for key, col in sorted(result.columns.items())}
            record["assumptions"] = list(result.assumptions)
        except (AnchorError, ValueError) as exc:
            record["refused"] = f"{type(exc).__name__}: {exc}"
        yield json.dumps(record, sort_keys=True)


def _diff(a: Any, b: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: {'missing before' if key not in a else 'missing after'}")
            else:
                _diff(a[key], b[key], f"{path}.{key}", found, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", found, limit)
    elif a != b or type(a) is not type(b):
        found.append(f"{path}: {a!r} -> {b!r}")


def compare(before: Path, after: Path, limit: int = 20) -> int:
    lines_a = before.read_text(encoding="utf-8").splitlines()
    lines_b = after.read_text(encoding="utf-8").splitlines()
    if len(lines_a) != len(lines_b):
        print(f"different line counts: {len(lines_a):,} vs {len(lines_b):,}")
    differing = 0
    shown: list[str] = []
    valid = fits = 0
    for la, lb in zip(lines_a, lines_b, strict=False):
        a, b = json.loads(la), json.loads(lb)
        if "plan" in a:
            valid += 1
            fits += a["plan"]["fits"] is True
        if la == lb:
            continue
        differing += 1
        if len(shown) < limit:
            found: list[str] = []
            _diff(a, b, "", found, 5)
            shown.append(f"config {a.get('config', {}).get('i', a.get('model_json') or a.get('sweep'))}: " + "; ".join(found))
    print(f"{before} vs {after}: {len(lines_a):,} lines, {valid:,} planned ({fits:,} fit); "
          + ("IDENTICAL" if differing == 0 and len(lines_a) == len(lines_b) else f"{differing:,} DIFFER"))
    for line in shown:
        print("  " + line)
    return 0 if differing == 0 and len(lines_a) == len(lines_b) else 1


def main(argv: list[str] | None = None, *, description: str | None = None, count: int = 36_000, seed: int = 11,
         **write_options: Any) -> int:
    """``write`` / ``compare`` on the command line; ``count``, ``seed`` and ``write_options`` (``sample``,
    ``sweeps``) let another sample (``chosen_equivalence.py``) reuse it."""
    parser = argparse.ArgumentParser(description=description or __doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="plan the sample with a tree and write JSON lines")
    w.add_argument("out", type=Path)
    w.add_argument("--tree", type=Path, default=ROOT, help="a checkout or export with src/anchorgpu (default: this one)")
    w.add_argument("--count", type=int, default=count)
    w.add_argument("--seed", type=int, default=seed)
    w.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                   help="plan the configurations in a shuffled order (same file expected): catches a memo keyed wrongly")
    c = sub.add_parser("compare", help="compare two files written by 'write'")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        return write(args.out, args.tree, args.count, args.seed, args.shuffle, **write_options)
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
