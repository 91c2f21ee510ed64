"""The planner's step term by term for the torchtitan-2412 context-parallel rows, through runs._train's path
(findings: benchmarks/torchtitan_cp_findings.md, 2026-12-06 section).

Run: PYTHONPATH=src python benchmarks/torchtitan_cp_terms.py
"""

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.links import power_capped
from anchorgpu.planner.speed.micro_step import _step_shape
from anchorgpu.planner.speed.runs import _as_measured, _model, load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.units import gbit_per_s_to_bytes_per_s


def main() -> None:
    cal = calibration()
    print("fa2 efficiency", cal.fa2_hopper_attention_efficiency, "fused backward ratio",
          cal.fused_attention_backward_ratio)
    for run in load_runs():
        r = run.row
        if not r["id"].startswith(("TT-8B-8-CP", "TT-405B-512-CP")):
            continue
        model = _model(r)
        gpu = _as_measured(power_capped(get_gpu(r["gpu"]), r["power_limit_w"]), r)
        split = r["tp"] * r["pp"] * r["cp"]
        lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // split, zero=r["zero"],
                          virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"])
        st = training_step(model, gpu, lay, seq_tokens=r["seq_tokens"], micro_batch=r["micro_batch"],
                           global_batch_tokens=r["global_batch_tokens"], recompute=r["recompute"],
                           precision=r["precision"], cal=cal, attention_kernel="fa2", train_stack="pytorch",
                           network_bytes_per_s=gbit_per_s_to_bytes_per_s(r["network_gbit_per_s_per_gpu"]))
        sh = _step_shape(model, gpu, cal, r["seq_tokens"], r["recompute"], "full", r["precision"], "fa2", "pytorch")
        tokens_rank = r["micro_batch"] * r["seq_tokens"] / r["cp"]
        attn_micro_s = sh.attn_run_f * tokens_rank / (r["tp"] * r["pp"]) / sh.att_rate
        meas_s = r["global_batch_tokens"] / (r["value"] * r["gpus"])
        pred_s = r["global_batch_tokens"] / (predict(run, cal) * r["gpus"])
        bd = st.breakdown_s
        attn_step_s = attn_micro_s * st.microbatches * (1 + bd.get("pp_bubble", 0.0) / bd["compute"])
        factor = 1 + (meas_s - pred_s) / attn_step_s
        print(f"{r['id']}: measured {meas_s:.2f} s, predicted {pred_s:.2f} s, attention {attn_step_s:.2f} s "
              f"({100 * attn_step_s / pred_s:.0f}%) at {sh.att_rate / 1e12:.0f} TFLOP/s, cp_comm {bd['cp_comm']:.2f} s, "
              f"implied attention factor {factor:.2f}; " + ", ".join(f"{k} {v:.2f}" for k, v in bd.items() if v))


if __name__ == "__main__":
    main()
