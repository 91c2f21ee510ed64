"""Stop 58's leftovers: the items qa22 and qa23 left open (benchmarks/hardening/stop58_leftovers.md, whose list
numbers these).

1. ``--train-precision bf16-true --offload optimizer`` counted only the moments on the host (``master = 0``), where the
   host's update keeps its own bf16 copy of the partition it updates and that partition's bf16 gradient (DeepSpeed's
   ``bf16_master_weights_and_grads``: ``base_optimizer._configure_master_weights`` sets the CPU partition's dtype,
   ``stage_1_and_2`` allocates its gradient alike; FSDP's ``CPUOffload(offload_params=True)``): 4 bytes a parameter
   short. LoRA's offloaded adapters likewise counted no copy and no gradient.
2. QLoRA's dequantization read nf4-dq's 4.127 bits a weight whatever ``--weights`` said (nf4 4.5, int8 8).
3. recommend with ``--tokens`` ranks and budgets by the run's price; its "Cheaper options rejected" list is the options
   at no more than #1's term total, and the web form's "Max total" label named the term's total only.
4. The API's ``task: "Inference"`` got a 422 without the task meant (a synonym, ``serve``, had one).
5. Serving past the engine's cap (256 users, ``--max-num-seqs 64``): the memory table's KV cache beside the engine's
   reserve and the 64 running was not said to be which (since stop 60 the row is the 64 running sequences').
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.dequant import dequant_bytes_per_layer, dequant_passes
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.units import fmt_bytes
from cli_runner import run, run_json

_OFFLOADED_8B = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "l40s", "--gpus", "1", "--offload", "optimizer")


# 1. the host's bytes of an offloaded optimizer, by precision

def test_bf16_true_offload_keeps_its_bf16_partition_and_gradients_on_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: bf16-true AdamW offloaded on one GPU (nothing sharded) keeps on the host a bf16 copy of every
    parameter (2 bytes) and its bf16 gradient (2) beside the two bf16 moments (4): gradients 2 bytes a parameter,
    state 6 (DeepSpeed's bf16_master_weights_and_grads with ZeRO-Offload, as the deepspeed recipe launches it)."""
    answer = run_json(capsys, *_OFFLOADED_8B, "--train-precision", "bf16-true")
    b = answer["breakdown"]
    params = load_model("llama-3.1-8b").params_total
    assert answer["layout"]["tp"] == answer["layout"]["pp"] == answer["layout"]["dp"] == 1
    assert b["offloaded_gradients_bytes"] == 2 * params
    assert b["offloaded_optimizer_bytes"] == 3 * b["offloaded_gradients_bytes"]  # 2 + 4 bytes a parameter
    warning = next(w["message"] for w in answer["warnings"] if w["code"] == "offload_slows_training")
    assert fmt_bytes(b["offloaded_optimizer_bytes"] + b["offloaded_gradients_bytes"]) in warning and "bf16" in warning


def test_mixed_offload_still_keeps_fp32_master_and_gradients(capsys: pytest.CaptureFixture[str]) -> None:
    """Control: mixed precision's host bytes are unchanged, 4 + 8 bytes of state and 4 of fp32 gradient a parameter."""
    b = run_json(capsys, *_OFFLOADED_8B)["breakdown"]
    assert b["offloaded_gradients_bytes"] == 4 * load_model("llama-3.1-8b").params_total
    assert b["offloaded_optimizer_bytes"] == 3 * b["offloaded_gradients_bytes"]


def test_offloaded_lora_adapters_keep_their_copy_and_gradients_on_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: LoRA's fp32 adapters offloaded on one GPU: the host keeps their fp32 copy and gradient (each the
    adapters' own bytes) beside the moments."""
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--task", "lora", "--gpu", "l4", "--gpus", "1",
                      "--offload", "optimizer")
    b = answer["breakdown"]
    assert b["offloaded_gradients_bytes"] == b["lora_adapter_weights_bytes"] > 0
    assert b["offloaded_optimizer_bytes"] == b["offloaded_gradients_bytes"] + 2 * b["lora_adapter_weights_bytes"]


def test_recommend_counts_the_bf16_true_host_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: recommend's offloaded bf16-true rows carry the same host bytes as plan (gradients a third of the
    state) and the server's RAM holds them."""
    answer = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--gpu", "l40s",
                      "--train-precision", "bf16-true", "--top", "40")
    rows = [r for r in answer["results"] if r["layout"].get("offload")]
    assert rows
    for r in rows:
        assert r["offloaded_gradients_bytes"] * 3 == r["offloaded_optimizer_bytes"] > 0
        per_gpu = r["offloaded_optimizer_bytes"] + r["offloaded_gradients_bytes"]
        assert r["host_bytes_per_server"] == per_gpu * (r["gpus"] // r["servers"])


# 2. QLoRA's dequantization at the base format's bits

@pytest.mark.parametrize("fmt", ["nf4", "int8"])
def test_dequantization_reads_the_base_formats_bits(fmt: str) -> None:
    """Property: the step of a QLoRA layout over ``fmt`` takes longer than over nf4-dq by exactly the extra bytes its
    dequantizations read (each layer's linears at the format's bits), at the bandwidth share they are timed at."""
    model, gpu, cal = load_model("llama-2-70b"), get_gpu("h100"), calibration()
    lay = TrainLayout(gpus=1)
    args = dict(seq_tokens=2048, micro_batch=1, global_batch_tokens=2048 * 8, kind="qlora", cal=cal)
    default = training_step(model, gpu, lay, **args)  # type: ignore[arg-type]
    other = training_step(model, gpu, lay, base_format=fmt, **args)  # type: ignore[arg-type]
    extra_bytes = (dequant_bytes_per_layer(model, fmt) - dequant_bytes_per_layer(model)) * model.num_layers
    extra_s = default.microbatches * dequant_passes("none") * extra_bytes / (
        gpu.memory_bandwidth_bytes_per_s * cal.stack(gpu).decode_mbu)
    assert extra_s > 0
    assert other.step_s - default.step_s == pytest.approx(extra_s, rel=1e-6)


def test_plan_and_recommend_time_qlora_at_the_format_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: plan's QLoRA speed moves with --weights (nf4 reads 4.5 bits where nf4-dq reads 4.127: slower), and
    recommend's row of the same GPUs times it as plan does."""
    base = ("plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "1")
    dq = run_json(capsys, *base)["performance"]["train_tokens_per_s"]
    nf4 = run_json(capsys, *base, "--weights", "nf4")["performance"]["train_tokens_per_s"]
    assert nf4 < dq
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "qlora", "--weights", "nf4", "--gpu", "h100",
                    "--top", "40")["results"]
    one = next(r for r in rows if r["gpus"] == 1)
    assert one["train_tokens_per_s"] == pytest.approx(nf4, rel=1e-3)


# 3. recommend's wording with --tokens

def test_rejected_heading_says_which_price_with_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """With --tokens the rows are ranked by the run's price: the rejected list says it is the options at no more than
    #1's term total and prices each by its term; without --tokens it stays "Cheaper options rejected"."""
    args = ("recommend", "llama-3.1-8b", "--task", "train", "--gpu", "l40s")
    code, out, _ = run(capsys, *args, "--tokens", "1e10")
    assert code == 0
    out = re.sub(r"\s+", " ", out)
    assert "Options rejected at no more than #1's 1month total (the rows are ranked by the run's price" in out
    assert "Cheaper options rejected" not in out
    assert re.search(r"x\d+ \(1month total \$[\d,]+\.\d\d\)", out), out
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--top", "3")  # ranked by the term's
    assert code == 0 and "Cheaper options rejected" in out and "1month total $" not in out


@pytest.mark.parametrize(("lang", "words"), [("en", "the run's"), ("ru", "за прогон")])
def test_the_budget_field_names_the_run_price(client: TestClient, lang: str, words: str) -> None:
    page = client.get(f"/recommend?lang={lang}").text
    label = re.search(r'<label>([^<]*)<input name="max_usd"', page)
    assert label and words in label.group(1), label


@pytest.mark.parametrize(("lang", "words"), [("en", "ranked by the run's price"), ("ru", "по цене прогона")])
def test_the_rejected_heading_on_the_page_says_which_price(client: TestClient, lang: str, words: str) -> None:
    page = client.get("/recommend?model=llama-3.1-8b&task=train&gpu=l40s&train_tokens=1e10&top=3"
                      f"&lang={lang}").text
    head = re.search(r'<h2 id="rejected-head">(.*?)</h2>', page, re.S)
    assert head and words in head.group(1), page[-2000:]


# 4. the API's task in another case

@pytest.mark.parametrize(("path", "task", "meant"), [("/v1/plan", "Inference", "inference"),
                                                    ("/v1/plan", "QLoRA", "qlora"),
                                                    ("/v1/recommend", "Train", "train")])
def test_api_task_in_another_case_names_the_task_meant(client: TestClient, path: str, task: str, meant: str) -> None:
    """Refused (the contract's one spelling is lower case: DESIGN.md has no case-insensitive task), naming it."""
    r = client.post(path, json={"model": "llama-3.1-8b", "task": task, "gpu": "h100"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].endswith(f"; did you mean '{meant}'?")


def test_api_lower_case_task_is_taken(client: TestClient) -> None:
    """Control: the contract's spelling plans."""
    assert client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "inference", "gpu": "h100"}).status_code == 200


# 5. the KV cache of users beyond the engine's cap

_QUEUED = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--concurrency", "256", "--max-num-seqs", "64",
           "--prompt", "1000", "--output-tokens", "200")


def test_kv_lines_say_which_figure_is_which(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: the capacity lines name the table's KV cache as the 64 running sequences' and say how many of the
    256 wait, beside the engine's start-up reserve; the figures are the plan's own (stop 60, queuekv: a waiting
    request holds no KV cache, so the row is the running sequences', one sequence's times 64)."""
    answer = run_json(capsys, *_QUEUED)
    kv = answer["per_gpu"]["kv_cache_bytes"]
    assert kv == 64 * answer["breakdown"]["kv_per_sequence_bytes"]
    code, out, _ = run(capsys, *_QUEUED)
    assert code == 0
    out = re.sub(r"\s+", " ", out)
    assert (f"the KV cache row below is the 64 running sequences' ({fmt_bytes(kv)}): the other 192 wait in the "
            "queue holding none") in out
    code, out, _ = run(capsys, *_QUEUED[:-6], "--prompt", "1000", "--output-tokens", "200")  # no cap: no such words
    assert code == 0 and "running sequences'" not in out


@pytest.mark.parametrize(("lang", "words"), [("en", "running sequences"), ("ru", "ждут в очереди")])
def test_the_plan_page_says_it_too(client: TestClient, lang: str, words: str) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100&gpus=1&concurrency=256&max_num_seqs=64&prompt=1000"
                      f"&output_tokens=200&lang={lang}").text
    found = re.search(r'<dd id="kv-queued">(.*?)</dd>', page)
    assert found and words in found.group(1) and "64" in found.group(1) and "192" in found.group(1)
