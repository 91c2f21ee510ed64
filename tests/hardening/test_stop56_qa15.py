"""Stop 56's QA pass over the training answers as a new user meets them (benchmarks/hardening/stop56_qa15.md, "qa15").

1. With ``--mfu`` the layout chooser ranked its candidates on the calibrated model and the plan then timed the layout
   it picked with the user's efficiency: on 16 H100 a 70B at ``--mfu 0.6`` got ZeRO-3 with full recompute, 15,710
   tok/s, where TP 8 x PP 2 (v 10) runs 16,227 tok/s at the same efficiency, and recommend's sweep (which times with
   the user's efficiency) could rank another layout first. The user's MFU applies to the compute of every candidate,
   so the chooser ranks them with it too: the layout shown is the fastest at the speed shown.
"""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json

_70B_16 = ("plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "16")


def test_with_mfu_the_chosen_layout_is_the_fastest_at_that_mfu(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = run_json(capsys, *_70B_16, "--mfu", "0.6")
    # the layout the calibrated ranking picks here (ZeRO-3 over 16, full recompute, micro-batch 1), timed at 0.6
    calibrated_pick = run_json(capsys, *_70B_16, "--mfu", "0.6", "--tp", "1", "--pp", "1", "--zero", "3",
                               "--recompute", "full", "--micro-batch", "1")
    assert calibrated_pick["fits"] and chosen["fits"]
    assert chosen["performance"]["train_tokens_per_s"] > calibrated_pick["performance"]["train_tokens_per_s"]
    # and the choice it states is the one it times: given back as flags, the same speed
    lay = chosen["layout"]
    given = run_json(capsys, *_70B_16, "--mfu", "0.6", "--tp", str(lay["tp"]), "--pp", str(lay["pp"]),
                     "--zero", str(lay["zero"]), "--recompute", chosen["workload"]["recompute"],
                     "--micro-batch", str(chosen["workload"]["micro_batch"]),
                     *(["--virtual-stages", str(lay["virtual_stages"])] if lay["virtual_stages"] > 1 else []))
    assert given["performance"]["train_tokens_per_s"] == pytest.approx(chosen["performance"]["train_tokens_per_s"])


def test_without_mfu_the_choice_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    # the calibrated chooser's answer here (a control: the change reaches only a plan given --mfu/--mbu)
    chosen = run_json(capsys, *_70B_16)
    assert (chosen["layout"]["tp"], chosen["layout"]["zero"], chosen["workload"]["recompute"]) == (1, 3, "full")


def test_with_mfu_plan_and_recommend_agree_on_the_same_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    # recommend's sweep always timed its layouts with the user's efficiency (sweep_training); plan now ranks so too
    rec = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--mfu", "0.6",
                   "--tokens", "1B", "--top", "20")
    row = next(r for r in rec["results"] if r["gpus"] == 16 and r["offering"].endswith("-8x-bm"))
    chosen = run_json(capsys, *_70B_16, "--mfu", "0.6")
    assert {k: chosen["layout"][k] for k in ("tp", "pp", "dp", "zero", "virtual_stages")} == \
        {k: row["layout"][k] for k in ("tp", "pp", "dp", "zero", "virtual_stages")}
    assert row["train_tokens_per_s"] == pytest.approx(chosen["performance"]["train_tokens_per_s"], abs=0.1)


# 2. recommend --task train wrote every run time in hours ("0.2 h" for an 11-minute run, "2,739.7 h" for 114 days);
#    decided: each cell in the unit the plan writes the same time in (units.duration_in_unit: days from 24 h, hours
#    from an hour, minutes from a minute), one decimal, so no cell loses its digits to a unit too large and the row
#    reads as `plan` with the row's layout does; a row's band and floor on the page in that cell's unit.
_SHORT_RUN = ("recommend", "llama-3.1-8b", "--task", "train", "--tokens", "5M", "--top", "3")


def test_the_cli_recommend_table_writes_each_run_time_in_the_plans_unit(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from anchorgpu.units import duration_in_unit

    monkeypatch.setenv("COLUMNS", "250")
    rows = run_json(capsys, *_SHORT_RUN)["results"]
    code, out, _ = run(capsys, *_SHORT_RUN)
    assert code == 0
    for rank, row in enumerate(rows, 1):
        line = next(line for line in out.splitlines() if re.match(rf"│\s*{rank}\s*│", line))
        # the JSON's train_time_s is rounded to 0.1 s and the table writes the unrounded time: either end of that
        # rounding may be the one a unit's last decimal shows (2,145.0 s is 35.75 min)
        shown = {f"{v:,.1f} {u}" for v, u in (duration_in_unit(row["train_time_s"] + d) for d in (-0.05, 0.0, 0.05))}
        assert any(text in line for text in shown), (shown, line)
    assert duration_in_unit(rows[0]["train_time_s"])[1] == "min"  # a run of minutes, not "0.2 h"


def test_the_recommend_page_writes_each_run_time_and_its_band_in_one_unit(client: TestClient) -> None:
    from anchorgpu.units import duration_in_unit

    api = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "train_tokens": 5_000_000,
                                             "top": 3}).json()["results"][0]
    page = client.get("/recommend?model=llama-3.1-8b&task=train&tokens=5000000&top=3&lang=en")
    assert page.status_code == 200
    cells = re.search(r'<tr id="rec-1">(.*?)</tr>', page.text, re.S)
    assert cells
    row = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", cells.group(1))).replace("\u00a0", " "))
    value, unit = duration_in_unit(api["train_time_s"])
    size = api["train_time_s"] / value
    assert unit == "min"
    band = f"{api['train_time_s_low'] / size:,.1f}–{api['train_time_s_high'] / size:,.1f} {unit}"
    assert f"{value:,.1f} {unit} {band}" in row, row
    assert f"{api['train_time_s_ceiling'] / size:,.1f} {unit}" in row


# 3. Refusals the planner wrote in the API's spelling (``zero=5``, ``weights fp8``, ``pp=64``) reached the CLI, where
#    the user typed flags; now each names the flag (``--zero 5``), and the API's own words turn it into the field
#    (``zero 5``, anchorgpu.api.words), as every other refusal.
_TRAIN_8 = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8")


@pytest.mark.parametrize(("flags", "start"), [
    (("--zero", "5"), "error: --zero 5: ZeRO stages are 0, 1, 2 and 3"),
    (("--cp", "0"), "error: --cp 0: must be a whole number of at least 1"),
    (("--pp", "2", "--virtual-stages", "0"), "error: --virtual-stages 0: must be a whole number of at least 1"),
    (("--weights", "fp8"), "error: --weights fp8: full training keeps 16-bit weights"),
    (("--task", "qlora", "--weights", "bf16"), "error: --weights bf16: QLoRA trains adapters"),
    (("--task", "lora", "--lora-targets", "zz"), "error: --lora-targets zz: choose from"),
    (("--gpus", "64", "--tp", "1", "--pp", "64"), "error: --pp 64 exceeds the 32 layers"),
])
def test_cli_refusals_name_the_flag_typed(capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
                                         start: str) -> None:
    code, _, err = run(capsys, *_TRAIN_8, *flags)
    assert code == 2 and err.startswith(start) and err.count("\n") == 1, err


@pytest.mark.parametrize(("body", "start"), [
    ({"weights": "fp8"}, "weights fp8: full training keeps 16-bit weights"),
    ({"task": "qlora", "weights": "bf16"}, "weights bf16: QLoRA trains adapters"),
    ({"gpus": 64, "tp": 1, "pp": 64}, "pp 64 exceeds the 32 layers"),
])
def test_the_api_names_the_same_refusals_by_field(client: TestClient, body: dict[str, object], start: str) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, **body})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith(start) and "--" not in r.json()["detail"], r.json()["detail"]


# 4. The PyTorch stack's sequence split (stop55_qa14 left 1): torchtitan applies sequence parallelism with every TP
#    (apply_tp: SequenceParallel on the norms, the embedding's output Shard(1)) and asserts
#    ``seq_len % parallel_dims.seq_len_divisor == 0``, the divisor being TP x 2 x CP ("Sequence Parallel requires that
#    seq_len be divisible by TP degree"; pytorch/torchtitan@0119de15 torchtitan/distributed/parallel_dims.py,
#    @018740b7 torchtitan/models/llama3/infra/parallelize.py). 2,056 tokens = 8 x 257: Megatron's split (2,056 / 8)
#    runs, torchtitan's TP 8 (2,056 % 16) does not; the chooser picked TP 8 for a 405B on 128 H100 and recommend
#    offered a TP 8 row.
_PYTORCH_2056 = ("--task", "train", "--train-stack", "pytorch", "--gpu", "h100", "--seq", "2056")


def test_pytorch_stack_refuses_a_tp_whose_split_torchtitan_asserts_against(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", *_PYTORCH_2056, "--gpus", "8", "--tp", "8")
    assert code == 2 and err.startswith("error: --tp 8 on the PyTorch stack") and err.count("\n") == 1, err
    assert "2 x CP" in err and "16" in err
    # the Megatron stack splits 2,056 over 8 ranks (257 each): planned (a control)
    megatron = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--train-stack", "megatron", "--gpu",
                        "h100", "--seq", "2056", "--gpus", "8", "--tp", "8")
    assert megatron["layout"]["tp"] == 8
    # TP 4: 2,056 % 8 == 0, planned on the PyTorch stack too
    assert run_json(capsys, "plan", "llama-3.1-8b", *_PYTORCH_2056, "--gpus", "8", "--tp", "4")["layout"]["tp"] == 4


def test_pytorch_stack_chooser_and_sweep_skip_such_a_tp(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = run_json(capsys, "plan", "llama-3.1-405b", *_PYTORCH_2056, "--gpus", "128")
    assert chosen["fits"] and 2056 % (2 * chosen["layout"]["tp"] * chosen["layout"]["cp"]) == 0, chosen["layout"]
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--train-stack", "pytorch", "--seq",
                    "2056", "--top", "20")["results"]
    assert rows and all(2056 % (2 * r["layout"]["tp"] * r["layout"]["cp"]) == 0 for r in rows)


def test_the_api_refuses_it_by_field(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "train_stack": "pytorch", "gpu": "h100",
                                      "gpus": 8, "tp": 8, "seq": 2056})
    assert r.status_code == 422 and r.json()["detail"].startswith("tp 8 on the PyTorch stack"), r.json()


# 5. recommend --mfu (or --mbu) printed under its table "band (where measured runs fell) ...: #1 10,645–10,645": a band
#    of no width, named as where measured runs fell, for speeds timed with the user's efficiency, which no measured run
#    brackets (the plan, the page and the JSON's evidence give none then). Now only the roofline ceilings, and why.
def test_recommend_with_mfu_prints_no_band_of_no_width(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1B", "--mfu", "0.4",
                       "--top", "3")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("train tok/s"))
    assert "band" not in line.split(":")[0] and "–" not in line, line
    assert "ceiling" in line and "your efficiencies" in line
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1B", "--top", "3")
    assert "band (where measured runs fell)" in out  # the calibrated answer keeps its band (a control)


def test_the_sequence_parallel_line_names_the_stack_planned(capsys: pytest.CaptureFixture[str]) -> None:
    # QLoRA defaults to the PyTorch stack; its TP line said "(Megatron)" (stop 56 qa15). QLoRA now runs no TP
    # (stop 56 qa17, planner.qlora_tp): the PyTorch stack's line is read from a full-training plan on it
    pytorch = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--train-stack", "pytorch", "--gpu", "h100",
                       "--gpus", "16", "--tp", "2")
    line = next(a for a in pytorch["assumptions"] if a.startswith("Tensor parallelism with sequence parallelism"))
    assert "torchtitan" in line and "Megatron" not in line
    full = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "16", "--tp", "2")
    assert any(a.startswith("Tensor parallelism with sequence parallelism (Megatron)") for a in full["assumptions"])


# 6. Two more refusals spelled for no face: "seq 131,073 exceeds ..." on the CLI (the flag is --seq), and the
#    sequence-split refusal's "or --no-sequence-parallel", which the API kept as a flag it has no field for and the
#    page as a flag it has no input for: the API's field is sequence_parallel (false), the page's "Sequence
#    parallelism" select (off).
def test_a_sequence_past_the_models_limit_names_the_flag(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    code, _, err = run(capsys, *_TRAIN_8, "--seq", "131073")
    assert code == 2 and err.startswith("error: --seq 131,073 exceeds llama-3.1-8b's limit"), err
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "seq": 131073})
    assert r.status_code == 422 and r.json()["detail"].startswith("seq 131,073 exceeds"), r.json()


def test_the_negated_sequence_parallel_flag_is_said_as_each_face_takes_it(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 8,
                                      "seq": 2052})
    detail = r.json()["detail"]
    assert r.status_code == 422 and "or sequence_parallel false (a dense model)" in detail and "--" not in detail, detail
    page = client.get("/plan?model=llama-3.1-8b&task=train&gpu=h100&gpus=8&tp=8&seq=2052&lang=en")
    text = html.unescape(re.sub(r"<[^>]+>", "", page.text))
    assert page.status_code == 422 and "or “Sequence parallelism” off (a dense model)" in text


# 7. Found by a fuzz of training flags (benchmarks/hardening/stop56_qa15.md): a flag the model rules out was refused
#    only after the layout search, which then failed for its own reason and blamed a flag never given:
#    `--ep 16` on a dense 70B on 12 GPUs said "--virtual-stages None: no layout of the 12 GPUs interleaves"; a mixture
#    of experts with --tp-overlap and --no-sequence-parallel said "--ep 8 must divide the tp·dp = 1 GPU of a stage"
#    without --gpus, and "--tp-overlap with TP 1 ... give --tp 2 or more" with them (TP 2 is then refused too).
def test_expert_parallelism_on_a_dense_model_is_refused_before_the_search(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "lora", "--gpu", "b200", "--seq", "2050",
                       "--gpus", "12", "--ep", "16")
    assert code == 2 and err == "error: --ep 16: expert parallelism needs a mixture-of-experts model\n", err


@pytest.mark.parametrize("gpus", [(), ("--gpus", "8")])
def test_tp_overlap_against_no_sequence_parallel_on_a_moe_is_one_line_naming_both(
        capsys: pytest.CaptureFixture[str], gpus: tuple[str, ...]) -> None:
    code, _, err = run(capsys, "plan", "mixtral-8x7b", "--task", "train", "--gpu", "h200", *gpus, "--ep", "8",
                       "--tp-overlap", "--no-sequence-parallel")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: --tp-overlap with --no-sequence-parallel") and "mixture of experts" in err, err


def test_no_interleaving_refusal_names_a_virtual_stage_count_never_given(capsys: pytest.CaptureFixture[str]) -> None:
    # EP 16 splits over no TP x CP x DP of 12 GPUs: the search found nothing and said "--virtual-stages None: no layout
    # of the 12 GPUs interleaves" (speed.layouts.choose_training_layout); the EP's own refusal is the reason
    code, _, err = run(capsys, "plan", "qwen3-30b-a3b", "--task", "train", "--gpu", "h100", "--gpus", "12",
                       "--ep", "16")
    assert code == 2 and "None" not in err and err.startswith("error: --ep 16 must divide"), err


# 8. `--tp 4` alone plans 4 GPUs, but `--ep 8` alone was refused: "--ep 8 must divide the tp·dp = 1 GPU of a stage"
#    (plan mixtral-8x7b --task train --ep 8, and serving alike): with no GPU count the split given sets it, and an EP
#    needs a stage of a multiple of it (Megatron-Core folds EP over the TP, CP and DP ranks), so the fewest GPUs that
#    hold it are planned, as for TP.
@pytest.mark.parametrize(("flags", "gpus", "dp"), [
    (("--task", "train", "--ep", "8"), 8, 8),
    (("--ep", "8"), 8, 1),  # serving: TP 8 across the server (the default TP), EP 8 over it
    (("--task", "train", "--tp", "2", "--ep", "8"), 8, 4),
])
def test_an_ep_alone_sets_the_gpu_count_as_a_tp_does(capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
                                                    gpus: int, dp: int) -> None:
    answer = run_json(capsys, "plan", "mixtral-8x7b", *flags)
    assert (answer["layout"]["gpus"], answer["layout"]["ep"], answer["layout"]["dp"]) == (gpus, 8, dp)


# 9. recommend --task train without --tokens showed "-" for every run time and run price, on the CLI and the page,
#    with no word of why, and ranked by the term's total: now one line says what fills them.
def test_recommend_without_tokens_says_what_times_and_prices_the_run(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, client: TestClient) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--top", "2")
    out = " ".join(out.split())  # wrapped at the terminal's width
    assert code == 0 and "give --tokens" in out and "ranked by the term's total" in out
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1B", "--top", "2")
    assert "give --tokens" not in out  # a control: the run is timed and priced
    for lang, words in (("en", "Fill in “Train tokens”"), ("ru", "Заполните «Токены обучения»")):
        page = client.get(f"/recommend?model=llama-3.1-8b&task=train&top=2&lang={lang}")
        note = re.search(r'id="band-note">(.*?)</p>', page.text, re.S)
        assert page.status_code == 200 and note and words in html.unescape(note.group(1)), lang
