"""The planner's step term by term for OLMo-core's 32B twins (T37, T37-FP8) beside the 7B and 13B OLMo-core rows, through
the same path as runs._train (findings: benchmarks/hardening/stop63_train63.md). No model change; a reading only.

Run: PYTHONPATH=src python benchmarks/olmo32b_terms.py
"""

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import _as_measured, _model, load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.units import gbit_per_s_to_bytes_per_s

ROWS = ("T35", "T36", "OLMO-13B", "OLMO-13B-FP8", "T37", "T37-FP8")


def main() -> None:
    cal = calibration()
    for run in load_runs():
        r = run.row
        if r["id"] not in ROWS:
            continue
        split = r["tp"] * r["pp"] * r["cp"]
        lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // split, zero=r["zero"],
                          virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"])
        st = training_step(_model(r), _as_measured(get_gpu(r["gpu"]), r), lay, seq_tokens=r["seq_tokens"],
                           micro_batch=r["micro_batch"], global_batch_tokens=r["global_batch_tokens"],
                           recompute=r["recompute"], precision=r["precision"], cal=cal,
                           attention_kernel=r.get("attention_kernel", "fa2"), train_stack="pytorch",
                           network_bytes_per_s=gbit_per_s_to_bytes_per_s(r["network_gbit_per_s_per_gpu"]),
                           grad_bytes_per_value=r.get("grad_bytes_per_value", 2))
        meas_s = r["global_batch_tokens"] / (r["value"] * r["gpus"])
        pred_s = r["global_batch_tokens"] / (predict(run, cal) * r["gpus"])
        terms = ", ".join(f"{k} {v:.3f}" for k, v in st.breakdown_s.items() if v)
        print(f"{r['id']}: {r['gpus']} GPUs, {st.microbatches} micro-batches a step, measured {meas_s:.2f} s, "
              f"predicted {pred_s:.2f} s (this breakdown; {terms})")


if __name__ == "__main__":
    main()
