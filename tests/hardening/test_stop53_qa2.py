"""Stop 53's second QA pass (benchmarks/hardening/stop53_qa2.md, "qa8"): the stop's new features (serving EP smaller
than TP, FP8/FP4 training stacks, TensorRT-LLM's PP host passes, uneven pipeline splits and training without
--gpus, vLLM's Marlin MoE kernel) as a new user tries them. Each test but the controls fails on the main it branched
from (6fe64970):
1. a TensorRT-LLM plan with pipeline stages said nothing of the PP loop's host passes (pp a cycle) that cap a
   replica: its constants line gave "10.7 us per running sequence a step" only;
2. `gpus show` (CLI, JSON, API) did not say which framework trains FP8 / FP4 on a GPU (`training_stacks`);
3. recommend's FP4 training line named "Transformer Engine" whatever the GPUs swept (MI355X: ROCm Transformer
   Engine's MXFP4BlockScaling; RTX PRO 6000 / RTX 5090: NVFP4BlockScaling with sm_120's switches);
4. training without --gpus around a split past 1,024 GPUs (--dp 2000, --pp 5 --dp 300) tried no count: the given
   split was planned unchosen, "none of the layouts fits" beside a fit, or "no count ... up to 1,024 holds this job,
   so one GPU is planned" beside 2,000 GPUs; a split that holds it on its own product said "; 0 do not"; the count
   had no thousands separator."""

from __future__ import annotations

import pytest

from cli_runner import run, run_json
from hardening.conftest import Served

PP4_OSS = ("plan", "gpt-oss-20b", "--gpu", "h100", "--gpus", "4", "--pp", "4", "--engine", "trtllm")


def _perf_lines(answer: dict[str, object], start: str) -> list[str]:
    perf = answer["performance"]
    assert isinstance(perf, dict)
    return [a for a in perf["assumptions"] if a.startswith(start)]


# 1. TensorRT-LLM's PP loop: its host passes are said, and whether they bind ---------------------------------------


def test_a_trtllm_pp_plan_says_its_host_passes_cap_a_replica(capsys: pytest.CaptureFixture[str]) -> None:
    """10.7 us a sequence (calibration.json host_s_per_sequence_step, x86) x 4 passes = 42.8 us a cycle: 1 / 42.8 us
    = 23,364 tokens/s a replica (engine_terms.host_passes_per_cycle, TensorRT-LLM _executor_loop_pp)."""
    answer = run_json(capsys, *PP4_OSS, "--concurrency", "1024")
    assert answer["performance"]["decode_bound"] == "host"
    (said,) = _perf_lines(answer, "TensorRT-LLM's PP loop")
    assert "once per micro-batch, 4 times a cycle over 4 stages: 42.8 us per running sequence a cycle (4 x 10.7 us)" \
        in said, said
    assert "caps a pipeline replica at 23,364 output tokens/s" in said, said
    assert said.endswith("at this plan's concurrency and at saturation the host sets the pace (host-bound)"), said
    assert round(answer["performance"]["max_output_tokens_per_s"]) == 23364


def test_the_host_passes_line_says_where_the_cap_does_not_bind(capsys: pytest.CaptureFixture[str]) -> None:
    one = run_json(capsys, *PP4_OSS)  # one request: the GPU's step; saturation: the host
    (said,) = _perf_lines(one, "TensorRT-LLM's PP loop")
    assert said.endswith("at saturation the host sets the pace (host-bound), at this plan's concurrency the GPU's "
                         "step is the longer"), said
    dense = run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--tp", "4", "--pp", "2",
                     "--engine", "trtllm")
    (said,) = _perf_lines(dense, "TensorRT-LLM's PP loop")
    assert "2 times a cycle" in said and said.endswith("the cap does not bind"), said


@pytest.mark.parametrize("argv", [
    ("--gpus", "4", "--pp", "4", "--engine", "vllm"),
    ("--gpus", "4", "--pp", "4", "--engine", "sglang"),
    ("--gpus", "4", "--tp", "4", "--engine", "trtllm"),
])
def test_no_host_passes_line_without_trtllm_stages(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    answer = run_json(capsys, "plan", "gpt-oss-20b", "--gpu", "h100", *argv)
    assert _perf_lines(answer, "TensorRT-LLM's PP loop") == []  # control


# 2. gpus show: which framework trains FP8 / FP4 ---------------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "stacks", "sources"), [
    ("mi355x", {"fp8": "ROCm Transformer Engine", "fp4": "ROCm Transformer Engine (MXFP4BlockScaling)"}, ["S33"]),
    ("h100", {"fp8": "Transformer Engine", "fp4": None}, ["S32"]),
    ("a100", {"fp8": None, "fp4": None}, []),
])
def test_gpus_show_json_names_the_training_stacks(capsys: pytest.CaptureFixture[str], gpu: str,
                                                  stacks: dict[str, str | None], sources: list[str]) -> None:
    """gpus.toml training_stacks (sources S32, S33), as plan and recommend read them."""
    answer = run_json(capsys, "gpus", "show", gpu)
    assert answer["training_stacks"] == stacks and answer["training_sources"] == sources


def test_gpus_show_table_names_the_sm120_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "show", "rtx-5090")
    assert code == 0
    rows = [line.split("│")[1:3] for line in out.splitlines() if line.count("│") == 3]
    fields: dict[str, str] = {}
    name = ""
    for field, value in rows:
        name = field.strip() or name
        fields[name] = (fields.get(name, "") + " " + value.strip()).strip()
    flat = " ".join(f"{k}: {v}" for k, v in fields.items())
    assert "FP8 / FP4 training" in flat and "FP4: Transformer Engine (NVFP4BlockScaling with the Hadamard" in flat, flat
    assert "S32: Transformer Engine (NVIDIA/TransformerEngine@" in flat  # its source, in the sources row


def test_the_api_gpu_answer_names_the_training_stacks(sqlite_served: Served) -> None:
    response = sqlite_served.client.get("/v1/gpus/mi355x")
    assert response.status_code == 200, response.text[:300]
    assert response.json()["training_stacks"]["fp4"] == "ROCm Transformer Engine (MXFP4BlockScaling)"


# 3. recommend's FP4 training line names the swept GPUs' frameworks --------------------------------------------------


def _fp4_line(capsys: pytest.CaptureFixture[str], *gpu: str) -> str:
    answer = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp4", "--top",
                      "2", *gpu)
    (said,) = [a for a in answer["assumptions"] if a.startswith("FP4 training as")]
    return said


def test_recommend_fp4_on_mi355x_names_rocm_te(capsys: pytest.CaptureFixture[str]) -> None:
    said = _fp4_line(capsys, "--gpu", "mi355x")
    assert said.startswith("FP4 training as ROCm Transformer Engine (MXFP4BlockScaling) runs it:"), said


def test_recommend_fp4_over_the_catalog_names_each_gpus_framework(capsys: pytest.CaptureFixture[str]) -> None:
    said = _fp4_line(capsys)
    assert said.startswith("FP4 training as each GPU's framework runs it (b200"), said
    assert "rtx-pro-6000, rtx-5090: Transformer Engine (NVFP4BlockScaling with the Hadamard transform" in said, said
    assert "mi355x: ROCm Transformer Engine (MXFP4BlockScaling)" in said, said


def test_recommend_fp4_on_b200_keeps_its_line(capsys: pytest.CaptureFixture[str]) -> None:  # control
    assert _fp4_line(capsys, "--gpu", "b200").startswith("FP4 training as Transformer Engine runs it:")


# 4. training without --gpus: a split past 1,024 GPUs, a split that holds it alone -----------------------------------


def test_a_split_past_1024_gpus_is_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """--dp 2000 was planned unchosen (no sharding: 141 GiB a GPU, does not fit), saying "no count of h100-sxm up to
    1,024 holds this job as asked, so one GPU is planned" beside 2,000 GPUs; ZeRO-1 over them holds it."""
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--dp", "2000")
    assert answer["fits"] is True and answer["gpus"] == 2000 and answer["layout"]["zero"] == 1, answer["layout"]
    said = " ".join(answer["assumptions"])
    assert "GPU count not given: 2,000 h100-sxm, the fewest that hold this job as asked, as few as the split given " \
           "allows" in said, said
    assert "one GPU is planned" not in said and "none of the layouts fits" not in said, said


def test_a_split_past_1024_gpus_that_fits_is_not_called_unfit(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--pp", "5", "--dp", "300")
    assert answer["fits"] is True and answer["gpus"] == 1500
    assert "none of the layouts fits" not in " ".join(answer["assumptions"])


def test_a_split_that_holds_it_on_its_own_product_says_no_zero(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--pp", "5")
    (said,) = [a for a in answer["assumptions"] if a.startswith("GPU count not given")]
    assert "; 0 do not" not in said and "5 h100-sxm, the fewest" in said, said


def test_a_split_that_fits_nowhere_names_its_own_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """PP 3 tries 3, 6 ... 768 GPUs; none holds 405B at 131,072 tokens on 24 GB, and the plan shows the 3 of the
    split given, which it called "one GPU" "up to 1,024"."""
    answer = run_json(capsys, "plan", "llama-3.1-405b", "--gpu", "rtx-4090", "--task", "train", "--pp", "3",
                      "--seq", "131072")
    assert answer["fits"] is False and answer["gpus"] == 3
    (said,) = [a for a in answer["assumptions"] if a.startswith("GPU count not given")]
    assert "no count of rtx-4090 up to 768 holds this job as asked, so the 3 GPUs of the split given are planned" \
        in said, said


def test_the_count_is_written_with_separators(capsys: pytest.CaptureFixture[str]) -> None:
    # --cp 8: with CP left open the chooser now splits the 131,072 tokens over CP 32 and 512 GPUs hold it
    answer = run_json(capsys, "plan", "llama-3.1-405b", "--gpu", "rtx-4090", "--task", "train", "--seq", "131072",
                      "--cp", "8")
    (said,) = [a for a in answer["assumptions"] if a.startswith("GPU count not given")]
    assert said.startswith("GPU count not given: 1,024 rtx-4090, the fewest"), said
