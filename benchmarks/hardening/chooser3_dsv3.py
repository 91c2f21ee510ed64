"""Stop 55 (chooser3): DeepSeek-V3 layouts chosen at 4,096 tokens, and the same split as plain 1F1B. Not a test.

    PYTHONPATH=src python benchmarks/hardening/chooser3_dsv3.py
"""
from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance

m = load_model("deepseek-v3")
for gpu, n in (("h100", 1024), ("h100", 2048), ("h100", 4096), ("gb200", 256), ("h800", 2048)):
    p = plan(m, Workload(task="train", seq_tokens=4096), layout=Layout(gpus=n), gpu=get_gpu(gpu))
    L = p.layout
    perf = plan_performance(p)
    q = plan(m, Workload(task="train", seq_tokens=4096, micro_batch=p.workload.micro_batch, recompute=p.workload.recompute), gpu=get_gpu(gpu), suggest=False, choose_layout=False,
             layout=Layout(gpus=n, tp=L.tp, pp=L.pp, dp=L.dp, ep=L.ep, zero=L.zero, cp=L.cp))
    qp = plan_performance(q)
    print(gpu, n, f"chosen TP{L.tp} PP{L.pp} v{L.virtual_stages} {L.pipeline_layout and L.pipeline_layout.text} DP{L.dp} EP{L.ep} Z{L.zero} mb{p.workload.micro_batch} {p.workload.recompute}",
          f"{perf['train_tokens_per_s']:,.0f} bubble {perf['step_time_breakdown_s']['pp_bubble']/perf['step_time_s']:.1%}",
          f"| same split v1: {qp['train_tokens_per_s']:,.0f} bubble {qp['step_time_breakdown_s']['pp_bubble']/qp['step_time_s']:.1%} fits={q.fits}")
