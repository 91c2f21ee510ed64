"""``anchorgpu plan`` through ``main(argv)``: tables, the JSON contract, exit 2 with one line on bad input."""

from __future__ import annotations

import json

import pytest

from cli_runner import run, run_json


def test_serving_journey_prints_breakdown_verdict_capacity_and_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--context", "8k",
                       "--concurrency", "32")
    assert code == 0
    for text in ("Memory per GPU", "weights", "KV cache", "Verdict: FITS", "max concurrency", "Assumed",
                 "Still to check", "tp_requires_engine_support"):
        assert text in out


def test_json_output_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--context", "8192",
                       "--concurrency", "32", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["gpu"]["name"] == "h100-sxm" and data["gpus"] == 8 and data["fits"] is True
    assert data["model"]["params_total"] == 70_553_706_496
    assert data["per_gpu"]["total_bytes"] > data["per_gpu"]["weights_bytes"] > 0
    assert data["max_concurrency"] >= 32
    assert all({"code", "message"} <= set(w) for w in data["warnings"])


def test_qlora_journey_on_one_48_gb_card(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "l40s", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["precision"]["weights"] == "nf4-dq" and data["workload"]["recompute"] == "full"
    assert data["fits"] is not None and data["checkpoint_bytes"] > 0


def test_a_plan_that_does_not_fit_shows_what_would(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1", "--context", "8k",
                       "--concurrency", "32")
    assert code == 0
    assert "DOES NOT FIT" in out and "What would fit" in out


def test_diffusion_plan_with_resolution_images_and_tiling(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "flux.1-dev", "--task", "diffusion", "--gpu", "l40s", "--resolution",
                       "2048x2048", "--images", "2", "--vae-tiling", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["workload"]["resolution"] == [2048, 2048] and data["workload"]["vae_tiling"] is True


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (("--gpus", "0"), "at least one GPU"),
        (("--gpus", "-2"), "--gpus -2: at least one GPU"),  # QA-CLI: was 'gpus=-2.0: ...'
        (("--gpus", "0.5"), "only whole GPUs"),
        (("--tp", "3"), "does not divide"),
        (("--weights", "int3"), "unknown weight format"),
        (("--context", "300000"), "--allow-long-context"),
        (("--context", "lots"), "token count"),
        (("--task", "pretrain"), "unknown task"),
        (("--resolution", "big"), "WIDTHxHEIGHT"),
        (("--zero", "5", "--task", "train"), "ZeRO stages"),
        (("--gpus", "8", "--tp", "2", "--pp", "2", "--dp", "3"), "--tp 2 x --pp 2 x --dp 3 = 12"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], fragment: str) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", *argv)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert fragment in err
    assert out == ""


def test_unknown_model_and_gpu_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "plan", "llama-9", "--json")[0] == 3
    assert run(capsys, "plan", "llama-3.1-8b", "--gpu", "h1000")[0] == 3


def test_plan_json_model_section_is_what_model_json_shows(capsys: pytest.CaptureFixture[str]) -> None:
    # DESIGN.md section 5: plan's "model" is {...as above}, the `anchorgpu model --json` object.
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--kv-cache", "fp8", "--json")
    assert code == 0
    code, model_out, _ = run(capsys, "model", "llama-3.1-8b", "--kv-cache", "fp8", "--json")
    assert code == 0
    assert json.loads(out)["model"] == json.loads(model_out)


# One of each kind the model JSON distinguishes: dense GQA, MoE, MLA, sliding windows, fused qkv, diffusion.
CONTRACT_MODELS = ("llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "phi-3-mini", "flux.1-dev")


@pytest.mark.parametrize("name", CONTRACT_MODELS)
def test_plan_json_model_section_equals_model_json_for_each_kind_of_model(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    task = ["--task", "diffusion"] if name.startswith("flux") else ["--context", "4096"]
    code, out, err = run(capsys, "plan", name, *task, "--json")
    assert code == 0, err
    code, model_out, err = run(capsys, "model", name, "--json")
    assert code == 0, err
    assert json.loads(out)["model"] == json.loads(model_out)


@pytest.mark.parametrize("name", CONTRACT_MODELS)
def test_plan_to_json_without_help_from_a_face_gives_the_model_json_document(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Callers such as POST /v1/plan or the recommender call plan_to_json(plan) alone: same document.
    from anchorgpu.architectures import load_model
    from anchorgpu.planner import Workload, plan, plan_to_json

    spec = load_model(name)
    task = "diffusion" if name.startswith("flux") else "inference"
    workload = Workload(task=task, context_tokens=None if task == "diffusion" else 4096)
    data = json.loads(json.dumps(plan_to_json(plan(spec, workload))))
    code, model_out, err = run(capsys, "model", name, "--json")
    assert code == 0, err
    assert data["model"] == json.loads(model_out)
    assert data["model"]["params_total"] == spec.params_total


def test_runtime_overheads_can_be_overridden_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    _, base, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--json")
    _, lean, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--cuda-context-mib", "0", "--fragmentation",
                     "0", "--json")
    assert json.loads(lean)["per_gpu"]["overhead_bytes"] < json.loads(base)["per_gpu"]["overhead_bytes"]
    assert json.loads(lean)["breakdown"]["cuda_context_bytes"] == 0


def test_json_carries_the_performance_section_when_a_gpu_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--context", "4096", "--concurrency", "8",
                       "--json")
    assert code == 0
    perf = json.loads(out)["performance"]
    assert perf["decode_tokens_per_s_total"] > perf["decode_tokens_per_s_per_user"] > 0


def test_readable_output_gives_the_verdict_first_in_gib_against_the_gpu_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--context", "8k",
                       "--concurrency", "32")
    assert code == 0
    assert out.index("Verdict: FITS") < out.index("Memory per GPU") < out.index("Warnings")
    verdict = next(line for line in out.splitlines() if line.startswith("Verdict"))
    # needed vs available, both in GiB, with the serving engine's share named of the H100's memory as CUDA reports
    # it: 85,017,624,576 bytes = 79.18 GiB (prime-rl's H100 80GB HBM3 baselines; gpus.toml memory_runtime_sources),
    # and 0.9 x 79.18 = 71.26 GiB, vLLM's total_gpu_memory x gpu_memory_utilization
    assert "needs" in verdict and "of 71.26 GiB per GPU" in verdict and "90% of 79.18 GiB" in verdict
    assert "headroom" in verdict
    assert "× NVIDIA H100 SXM 80GB (79.18 GiB usable of 80 GB each)" in out  # the product's 80 GB kept beside it
    for row in ("GPU memory (CUDA total)", "engine budget (90%)", "headroom"):
        assert row in out
    assert "the engine reserves" in out


def test_readable_training_time_is_in_days_and_a_short_plan_says_by_how_much(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "plan", "llama-2-7b", "--task", "train", "--gpu", "h200", "--gpus", "64", "--zero", "1",
                       "--tokens", "1e12")
    assert code == 0
    assert "training time" in out and " days" in out
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--dp", "8",
                       "--zero", "0")  # plain DP: --zero 0 alone searches TP and PP around it
    # against the H100's 79.18 GiB as CUDA reports it (gpus.toml memory_runtime_sources), not the 80 GB headline
    assert "DOES NOT FIT - needs 136.96 GiB of 79.18 GiB per GPU; short by" in out
    # the first suggestion keeps the job (a layout change), not a switch to QLoRA
    table = out[out.index("What would fit"):]
    assert table.index("--zero 3") < table.index("--task qlora")


def test_readable_diffusion_names_the_peak_phase(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "flux.1-dev", "--task", "diffusion", "--gpu", "l4", "--resolution", "1024x1024")
    assert code == 0
    assert "VAE decode peak" in out and "larger phase (VAE decode)" in out


def test_capacity_line_says_one_sequence_not_one_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    # QA-CLI: "longest context at 1 sequences". Without --concurrency the plan checks one sequence.
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--context", "8192")
    assert code == 0
    assert "longest context at 1 sequence: " in out and "sequences of 8,192 tokens" in out


def test_saturation_above_the_capacity_line_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """The capacity line holds each sequence at prompt + output, the saturation at its average cached length (a
    paged engine's blocks fill as tokens arrive), so saturation can exceed "max concurrency"; the CLI says why
    instead of showing two capacities that seem to disagree."""
    argv = ("plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200", "--concurrency", "64")
    d = run_json(capsys, *argv)
    assert d["performance"]["saturation_concurrency"] > d["max_concurrency"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "KV cache at its average length" in " ".join(out.split())


def test_training_tokens_take_decimal_suffixes_and_recommend_reads_the_batch_as_plan_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Training-token totals are written 300B or 14.8T (DeepSeek-V3's report: 14.8T tokens); they are decimal, while a
    global batch of 4M is 4,194,304 tokens on both plan and recommend (recommend refused '4M' before)."""
    base = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--zero", "3")
    by_suffix = run_json(capsys, *base, "--tokens", "14.8T")["performance"]
    by_number = run_json(capsys, *base, "--tokens", "14800000000000")["performance"]
    assert by_suffix["gpu_hours"] == by_number["gpu_hours"] > 0
    code, _, err = run(capsys, *base, "--tokens", "15Q")
    assert code == 2 and "--tokens '15Q'" in err
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "300B", "--global-batch", "4M",
                   "--top", "1")
    assert doc["results"] and doc["workload"]["global_batch_tokens"] == 4 * 2**20
    assert doc["workload"]["train_tokens"] == 300 * 10**9


@pytest.mark.parametrize(("argv", "line"), [
    # vLLM's default max_num_seqs on an H100 is 1,024 (the workload JSON's max_num_seqs); 2 replicas run 2,048
    (("--prompt", "100", "--output-tokens", "10", "--concurrency", "2000"),
     "the engine runs 2,048 at once (max_num_seqs 1,024 x 2 replicas); more wait in its queue"),
    (("--max-num-seqs", "1", "--concurrency", "100"),
     "the engine runs 104 at once (max_num_seqs 1 x 104 replicas); more wait in its queue"),
])
def test_capacity_line_says_when_the_engine_cap_runs_fewer_than_the_memory_holds(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], line: str) -> None:
    """QA (harden46): "max concurrency 36,712 sequences" counts the KV memory only; with a sequence cap below it the
    capacity lines say how many the engine runs at once (the saturation line already applies the cap)."""
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", *argv)
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", *argv)
    assert code == 0 and line in " ".join(out.split())
    cap = doc["workload"]["max_num_seqs"] * doc["layout"]["dp"]
    assert cap < doc["max_concurrency"] and f"runs {cap:,} at once" in out


def test_capacity_line_is_silent_when_the_memory_is_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--context", "8k",
                       "--concurrency", "32")
    assert code == 0 and "at once (max_num_seqs" not in out
