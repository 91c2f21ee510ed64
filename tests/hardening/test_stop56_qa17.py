"""Stop 56's second pass over the training answers: qa15's leftovers (benchmarks/hardening/stop56_qa17.md, "qa17").

1. A token count typed well but not whole: the CLI said `--global-batch '4.2M' is 4,404,019.2 (M = 1,048,576), not a
   whole number`, the page only "must be a whole number" and the API (a JSON number 4404019.2) "Input should be a
   whole number of tokens, e.g. 10000000000 or 1e10". Each face now says what the number is.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json
from hardening.conftest import page_error as _page_error

_8B_TRAIN = "model=llama-3.1-8b&task=train&gpu=h100&gpus=8"


def test_a_fractional_global_batch_is_refused_with_the_clis_reason_on_every_face(
        capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    # 4.2M = 4.2 x 1,048,576 = 4,404,019.2 tokens (the CLI's binary M for token counts: anchorgpu.validation)
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                       "--global-batch", "4.2M")
    assert code == 2 and "is 4,404,019.2 (M = 1,048,576), not a whole number" in err and err.count("\n") == 1, err
    page = client.get(f"/plan?{_8B_TRAIN}&global_batch=4.2M&lang=en")
    assert page.status_code == 422
    assert _page_error(page.text) == "“Global batch (tokens)”: 4.2M is 4,404,019.2 (M = 1,048,576), not a whole number"
    ru = client.get(f"/plan?{_8B_TRAIN}&global_batch=4.2M&lang=ru")
    assert ru.status_code == 422
    assert _page_error(ru.text).endswith(": 4.2M — это 4\xa0404\xa0019,2 (M = 1\xa0048\xa0576), не целое число")
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                      "global_batch": 4404019.2})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("body.global_batch: 4,404,019.2 is not a whole number of tokens"), r.json()


def test_training_tokens_in_exponent_form_and_the_recommend_page_too(client: TestClient) -> None:
    page = client.get(f"/plan?{_8B_TRAIN}&tokens=2.5e0&lang=en")
    assert page.status_code == 422 and _page_error(page.text) == "“Training tokens”: 2.5e0 is 2.5, not a whole number"
    rec = client.get("/recommend?model=llama-3.1-8b&task=train&train_tokens=1.0005k&lang=en")  # k = 1,000 here
    assert rec.status_code == 422 and "1.0005k is 1,000.5 (k = 1,000), not a whole number" in _page_error(rec.text)
    # a plain fraction keeps the short reason (a control: the value needs no working out)
    plain = client.get(f"/plan?{_8B_TRAIN}&tokens=1.5&lang=en")
    assert plain.status_code == 422 and _page_error(plain.text) == "“Training tokens”: must be a whole number"


# 2. With the GPU count left open and no count up to 1,024 holding the job, the plain layout planned in its place
#    refused a flag that was not the cause: DeepSeek-V3 with --zero 3 --virtual-stages 3 --ep 8 said "--virtual-stages 3
#    needs pipeline parallelism (--pp 2 or more)" (no power-of-two depth splits its 61 layers, 63 with the embedding and
#    the loss, into PP x 3 chunks; and Megatron-FSDP runs no stages); Qwen3-30B-A3B at --seq 131072 with
#    --sequence-parallel said "--sequence-parallel needs tensor parallelism" (the sequence is past its 40,960 tokens).
def test_interleaving_no_searched_depth_splits_is_refused_for_that(capsys: pytest.CaptureFixture[str]) -> None:
    for extra in ((), ("--train-stack", "pytorch"), ("--gpus", "1024")):
        code, _, err = run(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "mi300x", "--zero", "3",
                           "--virtual-stages", "3", "--ep", "8", *extra)
        assert code == 2 and err.count("\n") == 1, (extra, err)
        assert err.startswith("error: --virtual-stages 3: no pipeline depth the layout search tries") and \
            "61 layers of deepseek-v3" in err and "needs pipeline parallelism" not in err, (extra, err)


def test_interleaving_with_a_sharding_that_runs_no_stages_names_both_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--zero", "3",
                       "--virtual-stages", "2")
    assert code == 2 and err.startswith("error: --virtual-stages 2 with --zero 3: interleaving needs pipeline stages, "
                                        "and Megatron-FSDP"), err
    # controls: ZeRO-1 interleaves on Megatron, ZeRO-3 (FSDP2) on the PyTorch stack
    assert run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--zero", "1",
                    "--virtual-stages", "2")["layout"]["virtual_stages"] == 2
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--zero",
                       "3", "--virtual-stages", "2", "--train-stack", "pytorch")
    assert code == 0, err


def test_a_sequence_past_the_models_limit_is_the_reason_given(capsys: pytest.CaptureFixture[str],
                                                              client: TestClient) -> None:
    code, _, err = run(capsys, "plan", "qwen3-30b-a3b", "--task", "train", "--gpu", "b200", "--seq", "131072", "--ep",
                       "16", "--sequence-parallel", "--zero", "2")
    assert code == 2 and err.startswith("error: --seq 131,072 exceeds qwen3-30b-a3b's limit of 40,960 tokens"), err
    r = client.post("/v1/plan", json={"model": "qwen3-30b-a3b", "task": "train", "gpu": "b200", "seq": 131072,
                                      "ep": 16, "sequence_parallel": True, "zero": 2})
    assert r.status_code == 422 and r.json()["detail"].startswith("seq 131,072 exceeds"), r.json()


# 3. --no-sequence-parallel on the PyTorch stack was planned ("Sequence parallelism off (stated)"), a run torchtitan
#    cannot launch: its apply_tp applies SequenceParallel with every TP and has no switch (pytorch/torchtitan@018740b7
#    torchtitan/models/llama3/infra/parallelize.py). Refused on every face; QLoRA's default stack is PyTorch too.
_NO_SP = "--no-sequence-parallel on the PyTorch stack: torchtitan's tensor parallelism always runs sequence parallelism"


def test_no_sequence_parallel_on_the_pytorch_stack_is_refused_on_every_face(
        capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    for args in (("llama-3.1-8b", "--task", "train", "--train-stack", "pytorch", "--gpu", "h100", "--gpus", "8", "--tp",
                  "8"),
                 ("llama-3.1-8b", "--task", "train", "--train-stack", "pytorch", "--gpu", "h100"),  # chooser, count open
                 ("llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "8")):
        code, _, err = run(capsys, "plan", *args, "--no-sequence-parallel")
        assert code == 2 and err.startswith(f"error: {_NO_SP}") and err.count("\n") == 1, (args, err)
    # the Megatron stack keeps the choice (a control)
    assert run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "8",
                    "--no-sequence-parallel")["layout"]["sequence_parallel"] is False
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "train_stack": "pytorch", "gpu": "h100",
                                      "gpus": 8, "tp": 8, "sequence_parallel": False})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("sequence_parallel false on the PyTorch stack"), r.json()
    page = client.get(f"/plan?{_8B_TRAIN}&train_stack=pytorch&tp=8&sequence_parallel=off&lang=en")
    assert page.status_code == 422
    assert _page_error(page.text).startswith("“Sequence parallelism” off on the PyTorch stack"), _page_error(page.text)


# 4. QLoRA with --tp 2 was planned (70B on 8 H100: MFU 49.8%), and the chooser and recommend picked TP 2 or 4 for a
#    70B on L40S or RTX 4090: no public stack runs bitsandbytes' 4-bit base under tensor parallelism (PEFT, accelerate
#    and torchtune shard QLoRA with FSDP; torchtitan's QLoRA is an open PR; sources in anchorgpu.planner.qlora_tp).
def test_qlora_with_tensor_parallelism_is_refused_on_every_face(capsys: pytest.CaptureFixture[str],
                                                                client: TestClient) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "8", "--tp", "2")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: --tp 2 with --task qlora: no public stack runs bitsandbytes' 4-bit base under "
                          "tensor parallelism"), err
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "qlora", "gpu": "h100", "gpus": 8, "tp": 2})
    assert r.status_code == 422 and r.json()["detail"].startswith("tp 2 with task qlora: no public stack"), r.json()
    page = client.get("/plan?model=llama-3.1-70b&task=qlora&gpu=h100&gpus=8&tp=2&lang=en")
    assert page.status_code == 422 and _page_error(page.text).startswith("“TP” 2 with “Task” qlora: no public stack")
    # LoRA keeps TP (a control: its 16-bit base splits as the full model's does)
    assert run_json(capsys, "plan", "llama-3.1-70b", "--task", "lora", "--gpu", "h100", "--gpus", "8", "--tp",
                    "2")["layout"]["tp"] == 2


def test_the_chooser_and_recommend_never_pick_tensor_parallelism_for_qlora(capsys: pytest.CaptureFixture[str]) -> None:
    for gpu in ("l40s", "rtx-4090"):  # where the chooser picked TP 2 and TP 4 before
        chosen = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", gpu, "--gpus", "8")
        assert chosen["fits"] and chosen["layout"]["tp"] == 1, (gpu, chosen["layout"])
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "qlora", "--tokens", "100M", "--top", "20")["results"]
    assert rows and all(r["layout"]["tp"] == 1 for r in rows)  # L40S rows were TP 2 before
