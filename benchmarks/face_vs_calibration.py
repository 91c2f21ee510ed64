"""Does the CLI answer what the calibration predicts, for the workload of a measured run?

For a spread of rows of ``src/anchorgpu/planner/speed/data/measured_runs.json`` (training on Megatron/NeMo,
Megatron-Bridge, torchtitan, OLMo-core and ROCm; SFT and LoRA; TensorRT-LLM's tables, dense and MoE;
InferenceMAX on H200, B200, MI300X and MI355X; GPUStack's vLLM and TensorRT-LLM rows; a ROCm vLLM row) this writes
the ``anchorgpu plan`` command a user would type for the row's workload (its model, GPU, layout, lengths,
precisions and engine settings, every one as a documented flag), runs it in-process with ``--json``, and sets the
CLI's figure (``performance.train_tokens_per_s`` over the GPUs, ``max_output_tokens_per_s``, ``tpot_s``) beside
:func:`anchorgpu.planner.speed.runs.predict`'s for the row (what ``python -m anchorgpu.planner.speed.calibrate``
reports). ``cannot say`` lists what the row sets that no flag can (a power cap, another memory bandwidth, the
attention kernel, FP32 gradient reduction, an engine's admission, captured graphs or host scheduling, the engine
whose kernels ran): where the figures differ, that is why, or the CLI takes another path for the same inputs.

    PYTHONPATH=src .venv/bin/python benchmarks/face_vs_calibration.py [ROW_ID ... | --all]

Each row prints the CLI's figure, the calibrated one and their difference, then the difference from the calibration
of the row with only what the flags say (:func:`said_only`: the unsayable settings at the CLI's values; 0.0% there
means the whole gap is what no flag can say), then the command. A row the calibration plans for another engine than
the one it ran on (TensorRT-LLM's tables: vLLM's memory sizing, TensorRT-LLM's kernels and admission) also prints
what ``--engine trtllm``, the command a user naming the engine types, answers. A config row (OLMo-core's) is written
to a temporary ``config.json`` that the command names; a quantized checkpoint's row names its registry row
(``deepseek-r1-0528-fp4``); a vision-language model is asked with ``--images-per-request 0`` (the CLI sends one
image a request unless told none, the benchmarks sent text).

(Stop 59: GPUStack's ShareGPT rows became bursts, a figure the CLI does not give, so VGM-Q235-H100-SG and TGA-Q14-SG
left ROWS for VGM-OSS120-A100-C4; the result below was read before, with them.)

Result at this commit. The 25 rows: every difference over 1% (T26 +19.0%, TT-8B-8-CP2 +14.0%, P70-H200-128/2048
+19.7%, PL4M-H200-1000/1000 +5.9%, VGM-Q235-H100-SG +11.4%) is 0.0% from the calibration of what the flags say:
all of it is a setting no flag states (torchtitan's 500 W cap, 2.4 TB/s H100s and FlashAttention-2; TensorRT-LLM's
whole-request admission under vLLM's memory sizing, its captured graph batch sizes and, for the MoE rows, the weights
and KV cache of attention DP under a TP timing, ``attention_dp_weights``; vLLM 0.11's host work between steps). ``--all`` (487 rows with a figure the CLI gives): the same holds for 470; the other 17 are 16 TensorRT-LLM
rows on pipeline stages whose ``trtllm-bench`` limits (more sequences than tokens a step) the CLI refuses under
``--engine vllm``, the engine the calibration plans them for (it accepts them under ``--engine trtllm``), and
DSV3-H800-PRETRAIN, whose layout does not fit in the planner's memory (no speed is given for a plan that does not
fit; the calibration times it anyway). Over the 333 TensorRT-LLM rows planned with vLLM's sizing, ``--engine
trtllm`` answers a median 1.9% above the calibrated figure (from -25.6% to +257.4%): the largest are the Llama 4
Maverick H100 rows (+37% to +257%), whose ``attention_dp_weights`` and vLLM sampler term leave the calibration's
plan 2.6-9.2 GiB of KV cache a GPU where TensorRT-LLM's own rule on the TP layout the flags state leaves about 28
(moe_small_batch_findings.md, Stop 56). No row showed the CLI taking another default or path than the calibration for
inputs its flags state. (Until Stop 56 the said-only figure reused the row's cached plan, so a setting the plan reads,
``attention_dp_weights``, was not taken out of it: 92 rows differed then.)
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from anchorgpu.cli import main
from anchorgpu.planner.speed.row_engines import trtllm_bench_engine
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import TRAIN_PRECISION_OF, Run, _serve_plan, load_runs, predict

ROWS = (
    # training: Megatron/NeMo, Megatron-Bridge, torchtitan, OLMo-core, ROCm, SFT and LoRA
    "T32", "N24-L2-7B-SFT", "N24-L2-7B-LORA", "MB-H100-L3-70B", "MB-B200-Q30", "T26", "TT-8B-8-CP2", "T35",
    "T37-FP8", "RT1",
    # serving: TensorRT-LLM's tables (dense and MoE), InferenceMAX, GPUStack, ROCm vLLM
    "S14", "P70-H200-128/2048", "PL4M-H200-1000/1000", "IM-OSS-H200-TP2-C16", "IM-OSS-B200-TP1-C4",
    "IM-DSR1-H200-1k-1k-C16", "IM-DSR1-H200-TRT-1k-1k-C16", "IM-DSR1-MI300X-1k-1k-C16", "IM-DSR1-MI355X-1k-1k-C4",
    "VG1", "VG-Q8-4", "VGM-OSS120-A100-C4", "RS6", "TRT-DSR1-ADP-B200-FP8KV",
)

FIGURE_OF_METRIC = {"tokens_per_s_per_gpu": "train_tokens_per_s", "model_tflops_per_gpu": "train_tflops_per_gpu",
                    "step_s": "step_time_s", "max_output_tokens_per_s": "max_output_tokens_per_s", "tpot_s": "tpot_s"}
"""The CLI's ``performance`` figure for each row metric (a training row's throughput is per GPU: divided by them)."""

ENGINE_RESERVATION = {"vllm": "average", "trtllm": "full", "sglang": "ratio"}
"""How each engine the CLI plans for admits requests, as the product does (``serving_plan.ENGINE_RESERVATION``)."""

AMD_GPUS = ("mi300x", "mi325x", "mi355x")


def _model_argument(row: dict[str, Any], folder: Path) -> str:
    """The model as a user names it: the registry name (a quantized checkpoint's own row where the row names the
    checkpoint's ``hf_quant_config.json``), or a ``config.json`` written for a config row."""
    ref = row["model"]
    if "hf_quant_config" in ref:
        from anchorgpu.architectures.registry import model_infos

        return next(info.name for info in model_infos() if info.base == ref["registry"]
                    and info.quant_config.endswith("/" + ref["hf_quant_config"]))
    if "config" in ref:
        path = folder / f"{row['id'].replace('/', '_')}-config.json"
        path.write_text(json.dumps(ref["config"]), "utf-8")
        return str(path)
    return str(ref["registry"])


def _train_flags(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The training flags of a row, and what the row sets that no flag can."""
    split = row["tp"] * row["pp"] * row["cp"]
    flags = ["--task", {"full": "train"}.get(row.get("kind", "full"), row.get("kind", "full")),
             "--gpus", str(row["gpus"]), "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--cp", str(row["cp"]),
             "--dp", str(row["gpus"] // split), "--zero", str(row["zero"]),
             "--virtual-stages", str(row["virtual_stages"]), "--seq", str(row["seq_tokens"]),
             "--micro-batch", str(row["micro_batch"]), "--global-batch", str(row["global_batch_tokens"]),
             "--recompute", row["recompute"], "--train-precision", TRAIN_PRECISION_OF[row["precision"]],
             "--network-gbit-per-gpu", f"{row['network_gbit_per_s_per_gpu']:g}",
             "--train-stack", row.get("train_stack", "megatron"), "--allow-long-context"]
    if int(row.get("ep", 1)) > 1:
        flags += ["--ep", str(row["ep"])]
    if row["tp_overlap"]:
        flags.append("--tp-overlap")
    if row.get("ep_overlap"):
        flags.append("--ep-overlap")
    for key, flag in (("pipeline_layout", "--pipeline-layout"), ("cross_entropy", "--cross-entropy"),
                      ("optimizer_state", "--optimizer-state"), ("offload_activation_layers", "--offload-activations")):
        if row.get(key):
            flags += [flag, str(row[key])]
    unsaid = [f"{key}={row[key]}" for key in ("power_limit_w", "memory_bandwidth_tb_per_s") if row.get(key)]
    if row.get("attention_kernel", "flash") != "flash":
        unsaid.append(f"attention_kernel={row['attention_kernel']}")
    if int(row.get("grad_bytes_per_value", 2)) != 2:
        unsaid.append(f"grad_bytes_per_value={row['grad_bytes_per_value']}")
    if row.get("fsdp1"):
        unsaid.append("fsdp1")
    return flags, unsaid


def _is_vision_language(row: dict[str, Any]) -> bool:
    from anchorgpu.planner.speed.runs import _model

    return _model(row).image is not None


def _serve_engine(row: dict[str, Any]) -> str:
    """The engine the calibration plans a serving row for (``runs.serve_plan_of``)."""
    return "trtllm" if "kv_free_fraction" in row else "sglang" if row.get("engine") == "sglang" else "vllm"


def _serve_flags(run: Run, row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The serving flags of a row, and what the row sets that no flag can."""
    pp = int(row.get("pp", 1))
    engine = _serve_engine(row)
    flags = ["--gpus", str(row["gpus"]), "--tp", str(row["tp"]), "--pp", str(pp),
             "--dp", str(row["gpus"] // (row["tp"] * pp)), "--weights", row["weights"], "--kv-cache", row["kv_cache"],
             "--prompt", str(row["prompt_tokens"]), "--output-tokens", str(row["output_tokens"]), "--engine", engine]
    if int(row.get("ep", 1)) > 1:
        flags += ["--ep", str(row["ep"])]
    if run.metric != "max_output_tokens_per_s":  # a benchmark at a fixed number of requests in flight
        flags += ["--concurrency", str(row.get("concurrency", 1))]
    utilization = (row["kv_free_fraction"] if engine == "trtllm" else row.get("mem_fraction_static")
                   if engine == "sglang" else row["gpu_memory_utilization"])
    if utilization is not None:
        flags += ["--gpu-memory-utilization", f"{utilization:g}"]
    seqs, tokens = row.get("max_num_seqs"), row.get("max_num_batched_tokens")
    if row.get("engine_limits") == "trtllm-bench":  # the limits trtllm-bench chose: a user types them
        from anchorgpu.hardware import get_gpu
        from anchorgpu.planner.speed.runs import _model

        seqs, tokens = trtllm_bench_engine(_model(row), get_gpu(row["gpu"]).memory_bytes, row)
    if seqs is not None:
        flags += ["--max-num-seqs", str(seqs)]
    if tokens is not None:
        flags += ["--max-num-batched-tokens", str(tokens)]
    if row.get("images_per_request") or _is_vision_language(row):  # the CLI sends one image unless told none
        flags += ["--images-per-request", str(row.get("images_per_request", 0))]
    unsaid = []
    reservation = row.get("kv_reservation", ENGINE_RESERVATION[engine])
    if reservation != ENGINE_RESERVATION[engine]:
        unsaid.append(f"kv_reservation={reservation}")
    if row.get("graph_batch_sizes"):
        unsaid.append("graph_batch_sizes")
    if row.get("host_overlap") is False:
        unsaid.append("host_overlap=false")
    if row.get("absorbed_dequant") and not (engine == "sglang" and row["gpu"] in AMD_GPUS):
        unsaid.append("absorbed_dequant")
    if row.get("attention_dp_weights"):  # timed as TP, memory held as attention DP holds it: no layout says both
        unsaid.append("attention_dp_weights")
    kernels = engine_of(run)
    if kernels is not None and kernels != engine:
        unsaid.append(f"kernels of {kernels}")
    for key in ("memory_bandwidth_tb_per_s", "power_limit_w"):
        if row.get(key):
            unsaid.append(f"{key}={row[key]}")
    return flags, unsaid


def said_only(run: Run) -> Run:
    """``run`` with what no flag can say set as the CLI sets it (the catalog's GPU, flash attention, 16-bit
    gradients, FSDP2, the engine's own admission and kernels, no captured graphs, host work beside the GPU's): the
    calibration's figure for it is what the CLI should answer exactly."""
    from dataclasses import replace

    row = dict(run.row)
    if run.phase == "train":
        for key in ("power_limit_w", "memory_bandwidth_tb_per_s", "attention_kernel", "grad_bytes_per_value", "fsdp1"):
            row.pop(key, None)
    else:
        engine = _serve_engine(row)
        for key in ("graph_batch_sizes", "host_overlap", "attention_dp_weights"):
            row.pop(key, None)
        if not (engine == "sglang" and row["gpu"] in AMD_GPUS):
            row.pop("absorbed_dequant", None)
        row["kv_reservation"], row["engine"] = ENGINE_RESERVATION[engine], engine
    return replace(run, row=row)


def predict_said(run: Run) -> float:
    """The calibration's figure for :func:`said_only` of ``run``, its plan rebuilt from that row: the calibration
    caches a serving row's plan by id (``runs._serve_plan``), so a setting the plan reads (``attention_dp_weights``)
    is swapped into the loaded row for the call and back."""
    said, saved = said_only(run).row, dict(run.row)
    run.row.clear()
    run.row.update(said)
    _serve_plan.cache_clear()
    try:
        return predict(run)
    finally:
        run.row.clear()
        run.row.update(saved)
        _serve_plan.cache_clear()


def cli_command(run: Run, folder: Path) -> tuple[list[str], list[str]]:
    """``anchorgpu plan ...`` for the row (without ``--json``) and what it cannot say."""
    row = run.row
    flags, unsaid = _train_flags(row) if run.phase == "train" else _serve_flags(run, row)
    return ["plan", _model_argument(row, folder), "--gpu", row["gpu"], *flags, "--offline"], unsaid


def as_engine_named(run: Run, argv: list[str]) -> list[str] | None:
    """The command a user who names the engine the row ran on would type, where the calibration plans the row for
    another (TensorRT-LLM's tables and InferenceMAX's TensorRT-LLM rows are planned with vLLM's memory sizing): the
    same flags with ``--engine trtllm``, the row's memory share read as TensorRT-LLM's free-memory fraction.
    None where the two are the same."""
    ran = engine_of(run)
    if run.phase != "serve" or ran is None or ran == _serve_engine(run.row):
        return None
    out = list(argv)
    out[out.index("--engine") + 1] = ran
    return out


def cli_figure(run: Run, argv: list[str]) -> float:
    """The CLI's figure for the row's metric (NaN where it answers none)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--json"])
    if code != 0:
        raise RuntimeError(f"{run.id}: exit {code}: {err.getvalue().strip()}")
    perf = json.loads(out.getvalue())["performance"]
    value = perf.get(FIGURE_OF_METRIC[run.metric])
    if value is None:
        return float("nan")
    return float(value) / (run.row["gpus"] if run.metric == "tokens_per_s_per_gpu" else 1)


def compare(ids: tuple[str, ...] = ROWS) -> list[dict[str, Any]]:
    """One record per row: id, command, CLI figure, calibrated figure, relative difference, what the CLI cannot say."""
    runs = {r.id: r for r in load_runs()}
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for run_id in ids:
            run = runs[run_id]
            argv, unsaid = cli_command(run, Path(tmp))
            calibrated, refused = predict(run), ""
            try:
                face = cli_figure(run, argv)
            except RuntimeError as exc:  # the CLI refuses the command: say why
                face, refused = float("nan"), str(exc)
            said = predict_said(run) if unsaid else calibrated
            named = as_engine_named(run, argv)
            named_figure = cli_figure(run, named) if named else None
            records.append({"id": run_id, "metric": run.metric, "command": "anchorgpu " + shlex.join(argv),
                            "cli": face, "calibrated": calibrated, "difference": face / calibrated - 1,
                            "cannot_say": unsaid, "refused": refused, "said_only": said, "said_difference": face / said - 1,
                            "engine_named": named_figure,
                            "engine_named_difference": named_figure / calibrated - 1 if named_figure else None})
    return records


def engine_of_id(run_id: str) -> str | None:
    return engine_of(next(r for r in load_runs() if r.id == run_id))


def main_cli(argv: list[str]) -> int:
    if argv == ["--all"]:  # every row whose metric the CLI answers
        argv = [run.id for run in load_runs() if run.metric in FIGURE_OF_METRIC]
    records = compare(tuple(argv) or ROWS)
    for rec in records:
        print(f"{rec['id']:<28} {rec['metric']:<24} cli {rec['cli']:>11.5g}  calibrated {rec['calibrated']:>11.5g}  "
              f"diff {rec['difference']:+7.1%}  vs said-only {rec['said_difference']:+7.1%}  "
              f"cannot say: {', '.join(rec['cannot_say']) or '-'}")
        print(f"    {rec['command']}")
        if rec["refused"]:
            print(f"    refused: {rec['refused']}")
        if rec["engine_named"] is not None:
            print(f"    with --engine {engine_of_id(rec['id'])}: cli {rec['engine_named']:.5g}, "
                  f"diff {rec['engine_named_difference']:+.1%} from the calibrated figure")
    off = [r["id"] for r in records if not abs(r["difference"]) <= 0.01]
    unexplained = [r["id"] for r in records if not abs(r["said_difference"]) <= 0.01]
    print(f"\n{len(records)} rows; {len(off)} differ by more than 1%: {', '.join(off) or 'none'}")
    print(f"{len(unexplained)} differ by more than 1% from the calibration of what the flags say: "
          f"{', '.join(unexplained) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main_cli(sys.argv[1:]))
