"""Put the planner's predictions beside what one GPU measured (benchmarks/device/h200_measure.py's JSON).

Usage: python benchmarks/device/compare.py [RUN.json] [--write]

``--write`` refreshes ``src/anchorgpu/planner/data/eager_stack.json``: what the measured transformers runs held and
how fast they ran against the plan (``stack_ratios``), which the planner states beside every training plan and
warns with when the headroom would not hold an eager stack's extra activations.

Prints markdown: training speed and memory (every term the planner plans against the measured peaks by phase),
prefill, decode and the two hardware constants the serving model leans on (HBM efficiency, matrix-product
efficiency). Nothing here feeds the calibration: the measured stack (transformers, a minimal graph-captured
Llama) is not the Megatron/TensorRT-LLM/vLLM class of stack the calibration rows ran.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.experts import expert_rows_factor
from anchorgpu.planner.speed.serving import ServingSetup, decode_step, serve_shape_factor, soft_roofline

GIB = 2**30
HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "h200_2026-12-04.json"
STACK_FILE = HERE.parents[1] / "src" / "anchorgpu" / "planner" / "data" / "eager_stack.json"


def _in_use_bytes(r: dict) -> int:
    """A training row's peak in use: allocated at the peak plus what CUDA holds outside PyTorch's allocator."""
    return r["peak_allocated_bytes"] + (r["device_used_bytes"] - r["reserved_now_bytes"])


def _plan_of(r: dict, gpu: object, train_stack: str = "megatron") -> object:
    return plan(
        load_model(r["model"]),
        Workload(task="train", seq_tokens=r["seq"], micro_batch=r["micro_batch"], recompute=r["recompute"],
                 train_stack=train_stack, global_batch_tokens=r["micro_batch"] * r["seq"]),  # one micro-batch a step
        layout=Layout(gpus=1, zero=0),
        gpu=gpu,
    )


def stack_ratios(doc: dict, gpu_name: str = "h200") -> dict:
    """Measured over planned, per training row and summarised per stack and recompute level: the memory the forward
    pass added over the planned activations, the peak in use (allocated at the peak plus what CUDA holds outside
    PyTorch) over the planned total, and the tokens/s over the prediction. Two decimals, as the text shows them."""
    gpu = get_gpu(gpu_name)
    rows = []
    for r in doc["train"]:
        if not r.get("fits"):
            continue
        p = _plan_of(r, gpu)
        pg = p.per_gpu
        total, in_use = pg.total_bytes, _in_use_bytes(r)
        as_pytorch = _plan_of(r, gpu, "pytorch")
        rows.append(
            {
                "model": r["model"],
                "micro_batch": r["micro_batch"],
                "seq": r["seq"],
                "recompute": r["recompute"],
                "stack": "compiled" if "compile" in r["stack"] else "eager",
                "activations": round(r["forward_adds_bytes"] / pg.activations_bytes, 3),
                "peak": round(in_use / total, 3),
                "speed": round(r["tokens_per_s"] / plan_performance(p)["train_tokens_per_s"], 3),
                # the same run over the prediction for a PyTorch-native stack (--train-stack pytorch), not fitted on it
                "speed_pytorch": round(r["tokens_per_s"] / plan_performance(as_pytorch)["train_tokens_per_s"], 3),
                # the peak in use over the --train-stack pytorch plan's total (its own activations and fp32 loss)
                "peak_pytorch": round(in_use / as_pytorch.per_gpu.total_bytes, 3),
            }
        )

    def span(stack: str, key: str, recompute: str | None = None) -> list[float]:
        vals = [x[key] for x in rows if x["stack"] == stack and (recompute is None or x["recompute"] == recompute)]
        return [round(min(vals), 2), round(max(vals), 2)]

    return {
        "eager": {
            "activations_no_recompute": span("eager", "activations", "none"),
            "activations_full_recompute": span("eager", "activations", "full"),
            "peak": span("eager", "peak"),
            "speed": span("eager", "speed"),
            "speed_pytorch": span("eager", "speed_pytorch"),
            "peak_pytorch": span("eager", "peak_pytorch"),
        },
        "compiled": {
            "activations": span("compiled", "activations"),
            "peak": span("compiled", "peak"),
            "speed": span("compiled", "speed"),
            "speed_pytorch": span("compiled", "speed_pytorch"),
            "peak_pytorch": span("compiled", "peak_pytorch"),
        },
        "rows": rows,
    }


def write_stack_file(doc: dict, run: Path) -> None:
    meta = doc["meta"]
    out = {
        "about": "What a transformers model trained with PyTorch held and how fast it ran, over what the planner "
        "plans for a fused stack (Megatron-Core / Transformer Engine class): measured, not fitted. The planner states "
        "these beside every training plan and warns when the headroom would not hold an eager stack's extra "
        "activations. Written by benchmarks/device/compare.py --write from the run named in source.",
        "source": f"benchmarks/device/{run.name}: one {meta.get('gpu')}, torch {meta.get('torch')}, transformers "
        f"{meta.get('transformers')}, CUDA {meta.get('cuda')}; random-init Llama-3.2-1B/3B and Llama-3.1-8B, 4,096-token "
        "sequences, SDPA attention, BF16 weights and gradients with FP32 master weights and AdamW moments",
        "run": f"benchmarks/device/{run.name}",
        "gpu": gpu_of(meta),
        **stack_ratios(doc),
    }
    STACK_FILE.write_text(json.dumps(out, indent=1) + "\n")


def gpu_of(meta: dict) -> str:
    return "h200" if "H200" in str(meta.get("gpu")) else str(meta.get("gpu"))


def training(rows: list[dict], gpu_name: str) -> list[str]:
    gpu = get_gpu(gpu_name)
    out = [
        "| model | micro-batch x seq | recompute | stack | measured tok/s | ours (band) | measured/ours "
        "| planned activations GiB | forward adds GiB | planned total GiB | measured peak GiB (in use) | planned fits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = _plan_of(r, gpu)
        perf = plan_performance(p)
        pg = p.per_gpu
        total, in_use = pg.total_bytes, _in_use_bytes(r)
        stack = "compiled" if "compile" in r["stack"] else "eager"
        tok = perf["train_tokens_per_s"]
        out.append(
            f"| {r['model']} | {r['micro_batch']} x {r['seq']} | {r['recompute']} | {stack} "
            f"| {r['tokens_per_s']:,.0f} | {tok:,.0f} ({perf['train_tokens_per_s_low']:,.0f}-"
            f"{perf['train_tokens_per_s_high']:,.0f}) | {r['tokens_per_s'] / tok:.2f}x "
            f"| {pg.activations_bytes / GIB:.2f} | {r['forward_adds_bytes'] / GIB:.2f} "
            f"| {total / GIB:.2f} | {r['peak_allocated_bytes'] / GIB:.2f} ({in_use / GIB:.2f}) "
            f"| {'yes' if p.fits else 'no'} |"
        )
    return out


def lora(rows: list[dict], gpu_name: str) -> list[str]:
    """LoRA fine-tuning (frozen BF16 base, rank 16 on q/k/v/o/gate/up/down, FP32 adapters) against ``--task lora``
    plans of the same model, micro-batch, sequence and recompute on one GPU."""
    gpu = get_gpu(gpu_name)
    out = [
        "| model | micro-batch x seq | recompute | measured tok/s | ours (band) | measured/ours | planned activations GiB "
        "| forward adds GiB | adds/planned | planned total GiB | measured peak GiB (in use) | peak/planned |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if not r.get("fits"):
            out.append(f"| {r['model']} | {r['micro_batch']} x {r['seq']} | {r['recompute']} | out of memory | | | | | | | | |")
            continue
        p = plan(load_model(r["model"]), Workload(task="lora", seq_tokens=r["seq"], micro_batch=r["micro_batch"],
                                                  recompute=r["recompute"]), layout=Layout(gpus=1), gpu=gpu)
        perf = plan_performance(p)
        pg = p.per_gpu
        in_use = _in_use_bytes(r)
        tok = perf["train_tokens_per_s"]
        out.append(
            f"| {r['model']} | {r['micro_batch']} x {r['seq']} | {r['recompute']} | {r['tokens_per_s']:,.0f} "
            f"| {tok:,.0f} ({perf['train_tokens_per_s_low']:,.0f}-{perf['train_tokens_per_s_high']:,.0f}) "
            f"| {r['tokens_per_s'] / tok:.2f}x | {pg.activations_bytes / GIB:.2f} | {r['forward_adds_bytes'] / GIB:.2f} "
            f"| {r['forward_adds_bytes'] / pg.activations_bytes:.2f}x | {pg.total_bytes / GIB:.2f} "
            f"| {r['peak_allocated_bytes'] / GIB:.2f} ({in_use / GIB:.2f}) | {in_use / pg.total_bytes:.2f}x |"
        )
    return out


def _setup(model_name: str, context: int, gpu) -> tuple[object, ServingSetup]:
    model = load_model(model_name)
    p = plan(
        model,
        Workload(task="inference", prompt_tokens=max(context - 1, 1), output_tokens=1, concurrency=1),
        layout=Layout(gpus=1),
        gpu=gpu,
    )
    kv_per_token = p.per_gpu.kv_cache_bytes / context
    return model, ServingSetup(
        weights_bytes_per_gpu=p.per_gpu.weights_bytes, kv_bytes_per_sequence_per_gpu=kv_per_token * context
    )


def serving(doc: dict, gpu_name: str) -> list[str]:
    """One engine step as the planner times it (``serving.decode_step``) beside the measured step: the measured
    decode step is replayed from a CUDA graph (no host launches) of a minimal, unfused implementation."""
    gpu = get_gpu(gpu_name)
    out = [
        "| phase | model | tokens or context x batch | measured s | ours s (fixed part) | ceiling s | measured/ours |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["prefill"]:
        model, setup = _setup(r["model"], r["tokens"], gpu)
        st = decode_step(model, gpu, setup, batch=0, prefill_tokens=r["tokens"] * r["batch"], prompt_tokens=r["tokens"])
        ceil = decode_step(
            model, gpu, setup, batch=0, prefill_tokens=r["tokens"] * r["batch"], prompt_tokens=r["tokens"], ideal=True
        )
        out.append(
            f"| prefill ({'compiled' if r.get('compiled') else 'unfused'}) | {r['model']} | {r['tokens']} x {r['batch']} "
            f"| {r['s']:.4f} | {st.step_s:.4f} "
            f"({st.fixed_s:.4f}) | {ceil.step_s:.4f} | {r['s'] / st.step_s:.2f}x |"
        )
    for r in doc["decode"]:
        if "graph_s" not in r or r["weights"] != "bf16":
            continue
        model, setup = _setup(r["model"], r["context"], gpu)
        st = decode_step(model, gpu, setup, batch=r["batch"], cached_tokens=r["context"])
        ceil = decode_step(model, gpu, setup, batch=r["batch"], cached_tokens=r["context"], ideal=True)
        out.append(
            f"| decode step ({'compiled' if r.get('compiled') else 'unfused'}, graph) | {r['model']} "
            f"| {r['context']} x {r['batch']} | {r['graph_s']:.5f} "
            f"| {st.step_s:.5f} ({st.fixed_s:.5f}) | {ceil.step_s:.5f} | {r['graph_s'] / st.step_s:.2f}x |"
        )
    return out


def widths(doc: dict, gpu_name: str) -> list[str]:
    """A layer's four products by per-GPU width: measured TFLOP/s against the serving model's share of the peak,
    ``serve_matmul_efficiency * w / (w + serve_matmul_half_width)``."""
    gpu = get_gpu(gpu_name)
    k = calibration().stack(gpu)
    peak = gpu.peak_flops_per_s("bf16") / 1e12
    out = ["| rows | width | measured TFLOP/s | share of peak | serving model's share |", "|---|---|---|---|---|"]
    for r in doc.get("width", []):
        ours = k.serve_matmul_efficiency * serve_shape_factor(r["width"], k.serve_matmul_half_width)
        out.append(f"| {r['rows']:,} | {r['width']:,} | {r['tflops']:.0f} | {r['tflops'] / peak:.0%} | {ours:.0%} |")
    return out


def experts(doc: dict, gpu_name: str) -> list[str]:
    """Routed experts' products (equal rows an expert) against the serving model's time for them: weight reads at
    ``decode_mbu``, products at the width's share of the peak slowed by ``expert_rows_factor`` (the fitted
    ``moe_expert_half_tokens``), joined by the soft roofline - the terms ``serving._step`` adds for routed experts."""
    gpu = get_gpu(gpu_name)
    k = calibration().stack(gpu)
    peak, bw = gpu.peak_flops_per_s("bf16"), gpu.memory_bandwidth_bytes_per_s
    out = [
        "| experts (E x hidden x ffn) | rows an expert | torch.bmm ms | torch._grouped_mm ms | model ms | bmm/model |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc.get("experts", []):
        memory_s = r["weight_bytes"] / (bw * k.decode_mbu)
        eff = k.serve_matmul_efficiency * serve_shape_factor(r["hidden"], k.serve_matmul_half_width)
        tokens = r["rows"] * r["experts"]  # routed copies; k/E of them per expert: rows = tokens * (1/E)
        factor = expert_rows_factor(tokens, 1.0 / r["experts"], k.moe_expert_half_tokens)
        model_s = soft_roofline(memory_s, r["flops"] / (peak * eff) * factor, k.roofline_exponent)
        grouped = f"{r['grouped_s'] * 1e3:.3f}" if "grouped_s" in r else "-"
        out.append(
            f"| {r['model']} ({r['experts']} x {r['hidden']} x {r['ffn']}) | {r['rows']} "
            f"| {r['bmm_s'] * 1e3:.3f} | {grouped} | {model_s * 1e3:.3f} | {r['bmm_s'] / model_s:.2f}x |"
        )
    return out


def moe_layers(doc: dict) -> list[str]:
    """A whole routed MoE layer (router, top-k, sort, gather, two grouped products, combine; CUDA graph) against its
    grouped products alone with the same rows spread evenly: what routing adds per token of the step."""
    out = [
        "| model (E, k, hidden x ffn) | tokens | layer ms | products ms | added ms | added us a token |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc.get("moe_layer", []):
        added = r["layer_s"] - r["products_s"]
        # the even products read every expert; the routed layer touches 1 - (1 - k/E)^T of them, above 98% from
        # 4 E copies: below that the two read different weights and their difference is not routing's
        even = r["tokens"] * r["k"] >= 4 * r["experts"]
        per_token = f"{added / r['tokens'] * 1e6:.2f}" if even else "-"
        added_ms = f"{added * 1e3:.3f}" if even else "-"
        out.append(
            f"| {r['model']} ({r['experts']}, {r['k']}, {r['hidden']} x {r['ffn']}) | {r['tokens']:,} "
            f"| {r['layer_s'] * 1e3:.3f} | {r['products_s'] * 1e3:.3f} | "
            f"{added_ms} | {per_token} |"
        )
    return out


def hardware(doc: dict, gpu_name: str) -> list[str]:
    gpu = get_gpu(gpu_name)
    k = calibration().stack(gpu)
    bw = gpu.memory_bandwidth_bytes_per_s / 1e12
    read = next(r for r in doc["hbm"] if r["what"].startswith("read"))
    big = [r["tflops"] for r in doc["gemm"] if r["dtype"] == "bf16" and r["m"] >= 2048]
    big8 = [r["tflops"] for r in doc["gemm"] if r["dtype"] == "fp8" and r["m"] >= 2048]
    peak, peak8 = gpu.peak_flops_per_s("bf16") / 1e12, gpu.peak_flops_per_s("fp8") / 1e12
    m1 = [r for r in doc["gemm"] if r["dtype"] == "bf16" and r["m"] == 1]
    m1_bytes = sum(r["n"] * r["k"] * 2 for r in m1)
    m1_s = sum(r["s"] for r in m1)
    return [
        f"- HBM streaming read: {read['tb_s']:.2f} TB/s = {read['tb_s'] / bw:.0%} of {bw} TB/s; the calibrated "
        f"decode_mbu is {k.decode_mbu:.0%}.",
        f"- BF16 products with 2,048+ rows (Llama-3.1-8B's shapes, width 4,096): median {statistics.median(big):.0f} "
        f"TFLOP/s ({statistics.median(big) / peak:.0%} of {peak:.0f}), {min(big):.0f}-{max(big):.0f}; the serving model "
        f"gives products of that width {k.serve_matmul_efficiency * serve_shape_factor(4096, k.serve_matmul_half_width):.0%} "
        f"of the peak; training {k.train_matmul_efficiency:.0%} for the whole step's products.",
        f"- FP8 products with 2,048+ rows: median {statistics.median(big8):.0f} TFLOP/s "
        f"({statistics.median(big8) / peak8:.0%} of {peak8:.0f}); calibrated FP8 efficiency "
        f"{k.fp8_matmul_efficiency:.0%}.",
        f"- One row (a batch-1 decode's products, a Llama-3.1-8B layer's four weights): {m1_bytes / m1_s / 1e12:.2f} "
        f"TB/s = {m1_bytes / m1_s / 1e12 / bw:.0%} of the datasheet; the planner reads weights at "
        f"{k.decode_mbu:.0%} and adds {k.per_layer_step_s * 1e6:.0f} us a layer of fixed cost.",
    ]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT
    doc = json.loads(path.read_text())
    if "--write" in sys.argv:
        write_stack_file(doc, path)
        print(f"wrote {STACK_FILE}")
    gpu_name = "h200"
    print(
        f"Measured on {doc['meta'].get('gpu')} (torch {doc['meta'].get('torch')}, transformers "
        f"{doc['meta'].get('transformers')}, CUDA {doc['meta'].get('cuda')}); device memory "
        f"{doc['meta'].get('memory_bytes', 0) / GIB:.2f} GiB as CUDA reports it.\n"
    )
    print("\n".join(hardware(doc, gpu_name)) + "\n")
    print("\n".join(training(doc["train"], gpu_name)) + "\n")
    if doc.get("lora"):
        print("\n".join(lora(doc["lora"], gpu_name)) + "\n")
    print("\n".join(serving(doc, gpu_name)) + "\n")
    print("\n".join(widths(doc, gpu_name)) + "\n")
    print("\n".join(experts(doc, gpu_name)) + "\n")
    print("\n".join(moe_layers(doc)))


if __name__ == "__main__":
    main()
