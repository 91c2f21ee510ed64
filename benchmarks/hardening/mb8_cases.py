"""Stop 55 (mb8): the training layouts chosen for the cases of the micro-batch ladder (issue 11 item 2), with the
CPU time of each choice. Not a test. Run on two trees to compare:

    PYTHONPATH=src python benchmarks/hardening/mb8_cases.py
"""
import time

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance

CASES = [("qwen3-30b-a3b", gpu, n, seq) for gpu, n in (("b200", 8), ("b200", 64), ("h100", 64)) for seq in (2048, 4096)]
CASES += [("llama-3.1-8b", "h100", 8, 4096), ("llama-3.1-8b", "h100", 64, 4096), ("llama-3.1-70b", "h100", 512, 4096),
          ("mixtral-8x7b-v0.1", "h100", 64, 4096)]
for name, gpu, n, seq in CASES:
    start = time.process_time()
    p = plan(load_model(name), Workload(task="train", seq_tokens=seq), layout=Layout(gpus=n), gpu=get_gpu(gpu))
    cpu_ms = (time.process_time() - start) * 1e3
    lay, w = p.layout, p.workload
    print(f"{name} {n} {gpu} seq {seq}: TP{lay.tp} PP{lay.pp} v{lay.virtual_stages} CP{lay.cp} DP{lay.dp} EP{lay.ep} "
          f"Z{lay.zero} mb{w.micro_batch} {w.recompute}: {plan_performance(p)['train_tokens_per_s']:,.0f} tok/s "
          f"({cpu_ms:.0f} ms)")
