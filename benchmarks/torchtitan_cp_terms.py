"""Term-by-term planner step for torchtitan-2412 CP rows (findings: benchmarks/torchtitan_cp_findings.md, 2026 section).
Run: PYTHONPATH=src python benchmarks/torchtitan_cp_terms.py"""
import sys
from anchorgpu.planner.speed.runs import load_runs, _model, _as_measured, _pipeline_layout_of, predict
from anchorgpu.planner.speed.calibration import calibration as load_calibration
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.links import power_capped
from anchorgpu.planner.speed.training import TrainLayout, training_step
from anchorgpu.planner.speed.micro_step import micro_step, _step_shape
from anchorgpu.units import gbit_per_s_to_bytes_per_s
cal = load_calibration()
print("fa2 eff", cal.fa2_hopper_attention_efficiency, "bwd ratio", cal.fused_attention_backward_ratio)
for run in load_runs():
    r = run.row
    if not r["id"].startswith(("TT-8B-8-CP", "TT-405B-512-CP")): continue
    model, gpu = _model(r), get_gpu(r["gpu"])
    gpu = _as_measured(power_capped(gpu, r["power_limit_w"]), r)
    split = r["tp"]*r["pp"]*r["cp"]
    lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"]//split, zero=r["zero"], virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"])
    st = training_step(model, gpu, lay, seq_tokens=r["seq_tokens"], micro_batch=r["micro_batch"], global_batch_tokens=r["global_batch_tokens"], recompute=r["recompute"], precision=r["precision"], network_bytes_per_s=gbit_per_s_to_bytes_per_s(r["network_gbit_per_s_per_gpu"]), cal=cal, attention_kernel="fa2", train_stack="pytorch")
    sh = _step_shape(model, gpu, cal, r["seq_tokens"], r["recompute"], "full", r["precision"], "fa2", "pytorch")
    tokens_rank = r["micro_batch"]*r["seq_tokens"]/r["cp"]
    attn_s = sh.attn_run_f*tokens_rank/(r["tp"]*r["pp"])/sh.att_rate
    meas_step = r["global_batch_tokens"]/ (r["value"]*r["gpus"])
    pred_step = r["global_batch_tokens"]/ (predict(run, cal)*r["gpus"])
    bd = {k: round(v,2) for k,v in st.breakdown_s.items() if v} if True else None
    print(r["id"], "meas step %.2f pred %.2f" % (meas_step, pred_step), "attn/micro %.3f rate %.0f TF" % (attn_s, sh.att_rate/1e12), bd)
    m = st.microbatches
    comp = st.breakdown_s["compute"]; bub = st.breakdown_s.get("pp_bubble",0.0)
    att_step = attn_s*m*(1+bub/comp)
    print("   m", m, "attn share of pred %.2f s (%.0f%%); implied attention factor %.2f; cp_comm %.2f" % (att_step, 100*att_step/pred_step, 1+(meas_step-pred_step)/att_step, st.breakdown_s.get("cp_comm",0)))
