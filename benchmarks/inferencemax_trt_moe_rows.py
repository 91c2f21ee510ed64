"""Write the ``inferencemax-trt-moe`` rows of ``data/measured_runs.json``: InferenceMAX's TensorRT-LLM sweep of
gpt-oss-120b on B200 (one workflow run, one image), the same model, GPU, engine, precision and workload served
under several layouts on NVLink, including attention data parallelism with EP (the pairs the serving chooser's
scale-up margin is measured from: ``planner/speed/layout_margin.py``).

Source: gminneci/mantile reconcile/sources/inferencemax/raw/run_20764588467/agg_bmk.json (commit
1d3c259c926ecce3322c9ceface7e2f00f2de7e6), a copy of the ``agg_bmk.json`` artifact of InferenceMAX's workflow
run 20764588467 (2026-01-06): every single-node ``b200-trt`` record (image
``nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc2``, ``openai/gpt-oss-120b``, fp4, no speculative decoding) of a
workload that was measured under two or more layouts; the value is the record's ``mean_tpot``. Records measured
under one layout only (nothing to pair) are left out. Run once; re-running replaces the set's rows.

    python benchmarks/inferencemax_trt_moe_rows.py
"""

from __future__ import annotations

import json
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "src/anchorgpu/planner/speed/data/measured_runs.json"
SET = "inferencemax-trt-moe"

# (ISL, OSL, concurrency, tp, ep, dp_attention, mean_tpot seconds): the records as the artifact gives them
RECORDS: tuple[tuple[int, int, int, int, int, bool, float], ...] = (
    (1024, 1024, 4, 4, 1, False, 0.002358458940265775),
    (1024, 1024, 4, 8, 1, False, 0.0021859746501825096),
    (1024, 1024, 8, 2, 1, False, 0.0032338703827730604),
    (1024, 1024, 8, 4, 1, False, 0.0027609569421809892),
    (1024, 1024, 8, 8, 1, False, 0.002590113407153491),
    (1024, 1024, 16, 2, 1, False, 0.004110287701853397),
    (1024, 1024, 16, 4, 1, False, 0.0032689147043550816),
    (1024, 1024, 64, 2, 2, True, 0.005546751156315909),
    (1024, 1024, 64, 4, 4, True, 0.005011601829972176),
    (1024, 1024, 128, 1, 1, False, 0.012802353720062932),
    (1024, 1024, 128, 2, 2, True, 0.007042129744354695),
    (1024, 8192, 4, 2, 1, False, 0.0026029319235543044),
    (1024, 8192, 4, 4, 1, False, 0.0022987283244688254),
    (1024, 8192, 4, 8, 1, False, 0.0021730316215859435),
    (1024, 8192, 8, 2, 1, False, 0.0031114762650564986),
    (1024, 8192, 8, 4, 1, False, 0.002592181764192906),
    (1024, 8192, 8, 8, 1, False, 0.0024927343897510647),
    (1024, 8192, 16, 2, 1, False, 0.0037891749950059507),
    (1024, 8192, 16, 4, 1, False, 0.0029638295578926334),
    (1024, 8192, 64, 2, 2, True, 0.006529976356106601),
    (1024, 8192, 64, 4, 1, False, 0.004349691926783143),
    (1024, 8192, 128, 2, 2, True, 0.006868721512360681),
    (1024, 8192, 128, 4, 1, False, 0.005531558597747428),
    (8192, 1024, 4, 2, 1, False, 0.0027868340062751095),
    (8192, 1024, 4, 4, 1, False, 0.0024136308162244747),
    (8192, 1024, 4, 8, 1, False, 0.0023160782038930947),
    (8192, 1024, 8, 2, 1, False, 0.0034452768496640988),
    (8192, 1024, 8, 4, 1, False, 0.0028649181594531683),
    (8192, 1024, 8, 8, 1, False, 0.002723940162152709),
    (8192, 1024, 16, 2, 1, False, 0.004526645365808104),
    (8192, 1024, 16, 4, 1, False, 0.00352550561035415),
    (8192, 1024, 32, 2, 1, False, 0.00612347177636866),
    (8192, 1024, 32, 4, 1, False, 0.004673008702843031),
    (8192, 1024, 64, 2, 1, False, 0.008718922125693161),
    (8192, 1024, 64, 2, 2, True, 0.009256538457013016),
    (8192, 1024, 128, 1, 1, False, 0.021754075018542728),
    (8192, 1024, 128, 2, 1, False, 0.013520070916029085),
    (8192, 1024, 128, 2, 2, True, 0.013443899415691957),
)

SOURCE = ("gminneci/mantile reconcile/sources/inferencemax/raw/run_20764588467/agg_bmk.json (commit "
          "1d3c259c926ecce3322c9ceface7e2f00f2de7e6; InferenceMAX's agg_bmk.json artifact of workflow run 20764588467, "
          "2026-01-06), hw b200-trt, framework trt, image nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc2, "
          "openai/gpt-oss-120b fp4, isl {isl}, osl {osl}, tp {tp}, ep {ep}, dp_attention {dpa}, conc {conc}: mean_tpot")
NOTE = ("InferenceMAX (SemiAnalysis) serving gpt-oss-120b (MXFP4 as shipped) on TensorRT-LLM 1.2.0rc2 on B200 "
        "(NVLink), trtllm-serve --tp_size {tp} --ep_size {ep} with enable_attention_dp {dpa}{layout}; its "
        "benchmark_serving client on random prompts of about {isl:,} tokens in and {osl:,} out (planned at those), "
        "--max-concurrency {conc}, --ignore-eos; mean TPOT. Server settings from InferenceMAX/InferenceMAX "
        "benchmarks/gptoss_fp4_b200_trt_slurm.sh (commit cc9bed4; the run's own commit not in the record): an FP8 KV "
        "cache at free_gpu_memory_fraction 0.85 (kv_free_fraction), --max_batch_size 512, --max_num_tokens 20000, "
        "the TRTLLM MoE backend (moe_config.backend TRTLLM: TRTLLM-gen kernels){balance}; held out: the same model, GPU, engine and workload under several layouts, the pairs "
        "the serving chooser's scale-up margin is read from")

BALANCE = (", attention_dp_config enable_balance true (attention_dp_balance: each rank holds its new prompts until "
           "every rank has one, TensorRT-LLM's default timeout_iters 50 and batching_wait_iters 10)")


def _row(isl: int, osl: int, conc: int, tp: int, ep: int, dpa: bool, tpot_s: float) -> dict[str, object]:
    gpus = tp  # InferenceMAX's single-node records: the engine's --tp_size GPUs
    layout = (f" (attention data parallel over the {gpus} GPUs, experts split {ep} ways: planned as TP 1, DP {gpus}, "
              f"EP {ep})" if dpa else f" (TP {tp} of every layer{', the experts split ' + str(ep) + ' ways' if ep > 1 else ''})")
    name = f"DEP{gpus}" if dpa else f"TP{tp}" + (f"EP{ep}" if ep > 1 else "")
    row: dict[str, object] = {
        "id": f"IMT-OSS-B200-{isl // 1024}k-{osl // 1024}k-{name}-C{conc}", "role": "holdout", "set": SET,
        "phase": "serve", "model": {"registry": "gpt-oss-120b"}, "gpu": "b200", "gpus": gpus,
        "tp": 1 if dpa else tp, "pp": 1}
    if ep > 1:
        row["ep"] = ep
    row.update({"weights": "mxfp4", "kv_cache": "fp8", "gpu_memory_utilization": 0.85, "kv_free_fraction": 0.85,
                "prompt_tokens": isl, "output_tokens": osl, "concurrency": conc, "max_num_seqs": 512,
                "max_num_batched_tokens": 20000, "kv_reservation": "full", "engine": "trtllm", "moe_backend": "TRTLLM",
                **({"attention_dp_balance": True} if dpa else {}), "metric": "tpot_s",
                "value": round(tpot_s, 7),
                "source": SOURCE.format(isl=isl, osl=osl, tp=tp, ep=ep, dpa=str(dpa).lower(), conc=conc),
                "note": NOTE.format(tp=tp, ep=ep, dpa=str(dpa).lower(), layout=layout, isl=isl, osl=osl, conc=conc,
                                   balance=BALANCE if dpa else "")})
    return row


def main() -> None:
    text = PATH.read_text("utf-8")
    doc = json.loads(text)
    doc["rows"] = [r for r in doc["rows"] if r.get("set") != SET] + [_row(*rec) for rec in RECORDS]
    PATH.write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n", "utf-8")


if __name__ == "__main__":
    main()
