"""Write the ``inferencemax-sglang-moe`` rows of ``data/measured_runs.json``: InferenceMAX's SGLang v0.5.6 sweeps of
DeepSeek-R1-0528 on 8-GPU B200 servers, the same model, GPU, engine, precision and workload served under two layouts
in one workflow run (the pairs the serving chooser's scale-up margins are measured from:
``planner/speed/layout_margin.py``); the sibling of ``inferencemax_trt_moe_rows.py``.

Sources (gminneci/mantile, commit 1d3c259c926ecce3322c9ceface7e2f00f2de7e6, copies of the ``agg_bmk.json`` artifacts
of InferenceMAX's workflow runs), every single-node, non-disaggregated ``b200`` ``sglang`` record of a workload
measured under two layouts in the same run (image ``lmsysorg/sglang:v0.5.6-cu129-amd64``, ``spec_decoding: none``,
``dp_attention: false``); the value is the record's ``mean_tpot``:

- ``reconcile/sources/inferencemax/raw/run_20286929996/agg_bmk.json``: ``nvidia/DeepSeek-R1-0528-FP4-V2`` (fp4) at
  ``tp 4, ep 4`` and ``tp 8, ep 8`` (SGLang ``--tensor-parallel-size`` with ``--ep-size``: attention TP over the
  server's GPUs, the routed experts split as many ways), 8 workloads measured under both;
- ``reconcile/sources/inferencemax/raw/run_20860620516/agg_bmk.json``: ``deepseek-ai/DeepSeek-R1-0528`` (fp8) at
  ``tp 4`` and ``tp 8``, ``ep 1`` (the experts TP-split), 1 workload measured under both (TP 4 ran only 8k/1k).

Records measured under one layout only are left out. Run once; re-running replaces the set's rows.

    python benchmarks/inferencemax_sglang_moe_rows.py
"""

from __future__ import annotations

import json
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "src/anchorgpu/planner/speed/data/measured_runs.json"
SET = "inferencemax-sglang-moe"
MANTILE = ("gminneci/mantile reconcile/sources/inferencemax/raw/run_{run}/agg_bmk.json (commit "
           "1d3c259c926ecce3322c9ceface7e2f00f2de7e6")

# (ISL, OSL, concurrency, tp, ep, mean_tpot seconds, std_tpot seconds): the records as the artifact gives them
FP4_RUN = 20286929996
FP4: tuple[tuple[int, int, int, int, int, float, float], ...] = (
    (1024, 1024, 4, 4, 4, 0.008522185973988109, 0.00015948989940559405),
    (1024, 1024, 4, 8, 8, 0.007840439323706122, 0.00014610332648020221),
    (1024, 1024, 8, 4, 4, 0.010442562459776405, 0.0003585321615477188),
    (1024, 1024, 8, 8, 8, 0.009095000211043074, 0.0003367888346816589),
    (1024, 1024, 32, 4, 4, 0.016233553936719866, 0.0044705800846084566),
    (1024, 1024, 32, 8, 8, 0.013516691087413718, 0.004732798374366978),
    (1024, 8192, 8, 4, 4, 0.010255184407483003, 0.0001976998562959532),
    (1024, 8192, 8, 8, 8, 0.00871852928342732, 9.147664484813737e-05),
    (1024, 8192, 16, 4, 4, 0.012882504064405756, 0.00023311676419042243),
    (1024, 8192, 16, 8, 8, 0.010453810665244322, 0.0001486000322854646),
    (1024, 8192, 32, 4, 4, 0.01679390455743766, 0.0006016659999919417),
    (1024, 8192, 32, 8, 8, 0.011928198690023109, 0.000647163478359922),
    (1024, 8192, 128, 4, 4, 0.028686759833162455, 0.0008024152662979563),
    (1024, 8192, 128, 8, 8, 0.022893795687665443, 0.0016046788745892903),
    (8192, 1024, 16, 4, 4, 0.015841433583242505, 0.0055303048036475155),
    (8192, 1024, 16, 8, 8, 0.012882698076189993, 0.005596656073366835),
)
FP8_RUN = 20860620516
FP8: tuple[tuple[int, int, int, int, int, float, float], ...] = (
    (8192, 1024, 4, 4, 1, 0.012242315295862926, 0.0048893169998157635),
    (8192, 1024, 4, 8, 1, 0.009814798671034916, 0.0005210462135720299),
)

MI355X_RUN = 20248091324
MI355X: tuple[tuple[int, int, int, int, int, float, float], ...] = (
    (1024, 1024, 4, 4, 1, 0.010960836905471134, 9.056256622467398e-05),
    (1024, 1024, 4, 8, 1, 0.010064419501957262, 6.108851018495842e-05),
    (1024, 1024, 8, 4, 1, 0.012873345286480115, 0.00017048394408447634),
    (1024, 1024, 8, 8, 1, 0.010683136150588347, 9.793676926697744e-05),
    (1024, 1024, 16, 4, 1, 0.015149587656908502, 0.00030382967112959654),
    (1024, 1024, 16, 8, 1, 0.012137087446022165, 0.0001690548998446781),
    (1024, 1024, 32, 4, 1, 0.019474047915688422, 0.000466055672213203),
    (1024, 1024, 32, 8, 1, 0.014992604652210363, 0.0002940881240513552),
    (1024, 1024, 64, 4, 1, 0.02607874523428288, 0.000763546338893046),
    (1024, 1024, 64, 8, 1, 0.019920696834600852, 0.0006076575768005032),
)

SCRIPTS = ("dandanielbro/InferenceMAX (a fork of InferenceMAX/InferenceMAX) benchmarks/single_node/dsr1_{prec}_b200.sh "
           "(commit 727718d; the run's own commit not in the record)")
FP4_NOTE = ("InferenceMAX (SemiAnalysis) serving nvidia/DeepSeek-R1-0528-FP4-V2 (ModelOpt NVFP4; planned with "
            "nvidia/DeepSeek-R1-0528-FP4's hf_quant_config.json restated for v2, quant_configs/"
            "nvidia-deepseek-r1-0528-fp4-v2.restated.hf_quant_config.json: the v2 checkpoint also quantizes each "
            "attention's wo to FP4 (TensorRT-LLM tech blog 14), so o_proj NVFP4 and the other four MLA projections "
            "16-bit; v2's own file not stored) on SGLang v0.5.6 on B200 (NVLink), "
            "sglang.launch_server --tensor-parallel-size {tp} --ep-size {ep} (attention TP {tp}, the routed experts "
            "split {ep} ways: planned as TP {tp}, EP {ep}), no DP attention, no speculative decoding; its "
            "benchmark_serving client on random prompts of about {isl:,} tokens in and {osl:,} out (planned at those), "
            "--max-concurrency {conc}, 10 x that many prompts; mean TPOT{noisy}. Server settings from {script}, the "
            "same at either TP and as InferenceMAX/InferenceMAX benchmarks/dsr1_fp4_b200_slurm.sh (commit 706bece) "
            "has them: --mem-fraction-static 0.85, --kv-cache-dtype fp8_e4m3, --max-running-requests 256, "
            "--cuda-graph-max-bs 256, --chunked-prefill-size 16384, --attention-backend trtllm_mla, "
            "--moe-runner-backend flashinfer_trtllm, --quantization modelopt_fp4; held out: the same model, GPU, "
            "engine and workload under two layouts, the pairs the serving chooser's scale-up margins are read from")
FP8_NOTE = ("InferenceMAX (SemiAnalysis) serving deepseek-ai/DeepSeek-R1-0528 (FP8 in 128 x 128 blocks) on SGLang "
            "v0.5.6 on B200 (NVLink), sglang.launch_server --tensor-parallel-size {tp} --ep-size 1 (TP {tp} of every "
            "layer, the experts TP-split), no DP attention, no speculative decoding; its benchmark_serving client on "
            "random prompts of about {isl:,} tokens in and {osl:,} out (planned at those), --max-concurrency {conc}, "
            "10 x that many prompts; mean TPOT{noisy}. Server settings from {script}, which sets them by TP (TP 4 "
            "only at 8,192 in / 1,024 out, the one workload this run measured at TP 4): at TP {tp} "
            "--mem-fraction-static {mem}, --max-running-requests {seqs}, --cuda-graph-max-bs {seqs}, "
            "--chunked-prefill-size {chunk}; --kv-cache-dtype fp8_e4m3, --attention-backend trtllm_mla, "
            "--moe-runner-backend flashinfer_trtllm, --quantization fp8; held out: the same model, GPU, engine and "
            "workload under two layouts, the pairs the serving chooser's scale-up margins are read from")
MI355X_NOTE = ("InferenceMAX (SemiAnalysis) serving amd/DeepSeek-R1-0528-MXFP4-Preview (AMD Quark OCP MXFP4 of the "
               "MLPs and experts, its card's exclude_layers '*self_attn* *mlp.gate.* *lm_head': attention 16-bit; "
               "planned with that card's Quark settings, quant_configs/amd-deepseek-r1-0528-mxfp4-preview.quark-card"
               ".json: the routed, shared-expert and dense MLPs MXFP4, attention and the LM head 16-bit) on SGLang "
               "v0.5.6.post1 (ROCm 7.0) on MI355X (xGMI), sglang.launch_server --tensor-parallel-size {tp} (TP {tp} "
               "of every layer, the experts TP-split), no DP attention, no speculative decoding; its benchmark_serving "
               "client on random prompts of about {isl:,} tokens in and {osl:,} out (planned at those), "
               "--max-concurrency {conc}, 10 x that many prompts; mean TPOT{noisy}. Server settings from {script}, "
               "the same at either TP and as InferenceMAX/InferenceMAX benchmarks/dsr1_fp4_mi355x_slurm.sh (commit "
               "1765650) has them: SGLANG_USE_AITER=1, --mem-fraction-static 0.8, --kv-cache-dtype fp8_e4m3, "
               "--chunked-prefill-size 196608, --cuda-graph-max-bs 128, --num-continuous-decode-steps 4, "
               "--attention-backend aiter (TP 4 only at 1,024 in / 1,024 out in this run); held out: the same model, "
               "GPU, engine and workload under two layouts, the pairs the serving chooser's scale-up margins are "
               "read from")
MI355X_QUANT = "amd-deepseek-r1-0528-mxfp4-preview.quark-card.json"
"""The MXFP4 Preview checkpoint's Quark settings as its card states them (quant_configs/SOURCES.md)."""
FP8_SETTINGS = {4: (0.95, 32, 8192), 8: (0.82, 128, 32768)}
"""The FP8 script's settings by TP: (--mem-fraction-static, --max-running-requests, --chunked-prefill-size)."""


def _noisy(tpot_s: float, std_s: float) -> str:
    """The record's spread where it is wide: a few stalled steps in the mean (its TTFT p99 ~70 s in these runs)."""
    return f" (std_tpot {std_s * 1e3:.1f} ms: a few slow steps in the mean)" if std_s > 0.2 * tpot_s else ""


def _mi355x_row(isl: int, osl: int, conc: int, tp: int, ep: int, tpot_s: float, std_s: float) -> dict[str, object]:
    return {"id": f"IMS-DSR1-MI355X-MXFP4-{isl // 1024}k-{osl // 1024}k-TP{tp}-C{conc}", "role": "holdout",
            "set": SET, "phase": "serve", "model": {"registry": "deepseek-r1", "hf_quant_config": MI355X_QUANT}, "gpu": "mi355x", "gpus": tp, "tp": tp,
            "pp": 1, "weights": "mxfp4", "kv_cache": "fp8", "gpu_memory_utilization": 0.8, "mem_fraction_static": 0.8,
            "prompt_tokens": isl, "output_tokens": osl, "concurrency": conc, "max_num_batched_tokens": 196608,
            "engine": "sglang", "metric": "tpot_s", "value": round(tpot_s, 7),
            "source": (MANTILE.format(run=MI355X_RUN) + f"; InferenceMAX's agg_bmk.json artifact of workflow run "
                       f"{MI355X_RUN}), hw mi355x, framework sglang, image lmsysorg/sglang:v0.5.6.post1-rocm700-mi35x, "
                       f"amd/DeepSeek-R1-0528-MXFP4-Preview fp4, spec_decoding none, isl {isl}, osl {osl}, tp {tp}, "
                       f"ep {ep}, dp_attention false, conc {conc}: mean_tpot"),
            "note": MI355X_NOTE.format(tp=tp, isl=isl, osl=osl, conc=conc, noisy=_noisy(tpot_s, std_s),
                                       script=SCRIPTS.format(prec="fp4").replace("b200", "mi355x"))}


def _row(run: int, fp4: bool, isl: int, osl: int, conc: int, tp: int, ep: int, tpot_s: float,
         std_s: float) -> dict[str, object]:
    name = f"TP{tp}" + (f"EP{ep}" if ep > 1 else "")
    row: dict[str, object] = {
        "id": f"IMS-DSR1-B200-{'FP4' if fp4 else 'FP8'}-{isl // 1024}k-{osl // 1024}k-{name}-C{conc}",
        "role": "holdout", "set": SET, "phase": "serve",
        "model": ({"registry": "deepseek-r1", "hf_quant_config": "nvidia-deepseek-r1-0528-fp4-v2.restated.hf_quant_config.json"}
                  if fp4 else {"registry": "deepseek-r1"}),
        "gpu": "b200", "gpus": tp, "tp": tp, "pp": 1}
    if ep > 1:
        row["ep"] = ep
    mem, seqs, chunk = (0.85, 256, 16384) if fp4 else FP8_SETTINGS[tp]
    row.update({"weights": "nvfp4" if fp4 else "fp8-block128x128", "kv_cache": "fp8", "gpu_memory_utilization": mem,
                "mem_fraction_static": mem, "prompt_tokens": isl, "output_tokens": osl, "concurrency": conc,
                "max_num_seqs": seqs, "max_num_batched_tokens": chunk, "engine": "sglang", "metric": "tpot_s",
                "value": round(tpot_s, 7)})
    source = (MANTILE.format(run=run) + f"; InferenceMAX's agg_bmk.json artifact of workflow run {run}), hw b200, "
              f"framework sglang, image lmsysorg/sglang:v0.5.6-cu129-amd64, "
              f"{'nvidia/DeepSeek-R1-0528-FP4-V2 fp4' if fp4 else 'deepseek-ai/DeepSeek-R1-0528 fp8'}, spec_decoding "
              f"none, isl {isl}, osl {osl}, tp {tp}, ep {ep}, dp_attention false, conc {conc}: mean_tpot")
    note = (FP4_NOTE if fp4 else FP8_NOTE).format(tp=tp, ep=ep, isl=isl, osl=osl, conc=conc, mem=mem, seqs=seqs,
                                                  chunk=chunk, noisy=_noisy(tpot_s, std_s),
                                                  script=SCRIPTS.format(prec="fp4" if fp4 else "fp8"))
    row.update({"source": source, "note": note})
    return row


def rows() -> list[dict[str, object]]:
    return ([_row(FP4_RUN, True, *rec) for rec in FP4] + [_row(FP8_RUN, False, *rec) for rec in FP8]
            + [_mi355x_row(*rec) for rec in MI355X])


def main() -> None:
    doc = json.loads(PATH.read_text("utf-8"))
    doc["rows"] = [r for r in doc["rows"] if r.get("set") != SET] + rows()
    PATH.write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n", "utf-8")


if __name__ == "__main__":
    main()
