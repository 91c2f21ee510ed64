"""Stop 55's QA pass over speed and layouts as an engineer who pays for GPUs checks them
(benchmarks/hardening/stop55_qa14.md, "qa14").

1. The layout chooser (and the sweep behind ``recommend``) never interleaved a model whose layers do not split evenly
   over the pipeline stages, though ``plan()`` takes such a split with the embedding and the loss counted as a layer
   each (Megatron-Core's --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split). Llama 3.1
   405B (126 layers) was planned with plain 1F1B everywhere: NVIDIA's own benchmark of it on 512 H100 runs TP 8 x PP 8
   x CP 2 x VP 8 (NVIDIA/dgxc-benchmarking llama3.1/README.md); on 16,384 H100 the chooser answered TP 8 x PP 64 at
   1.57M tok/s, with a 48% bubble, where the same GPUs at TP 8 x PP 16 x v 4 (given) run 2.15M. Qwen3-235B-A22B (94
   layers) likewise, where the Megatron-MoE model zoo runs PP 8 x VP 4.
2. A --virtual-stages whose pp x v chunks outnumber the layers was refused only when the plan fitted (by the speed
   model); when it did not, the plan showed a memory breakdown for a split that cannot exist and suggested
   --recompute full, which then failed with that refusal. Now refused before the memory, whatever the fit.
3. --cp was refused only where it did not divide the sequence, so --cp 2048 on 2,048-token sequences (one token a
   rank) or --cp 2 on 2,050 tokens were planned and timed; both training stacks cut a sequence into 2 x CP equal
   chunks for the causal load balance (Megatron-Core's get_pretrain_batch_on_this_cp_rank, PyTorch's
   _RoundRobinLoadBalancer), so neither launches. Now refused in one line; the chooser and the sweep try only sizes
   whose 2 x CP chunks split the sequence.
4. A well-formed count that is not a whole number after its suffix (--global-batch 4.2M = 4,404,019.2 tokens, M being
   1,048,576; --prompt 1.1k = 1,126.4) was refused as if malformed ("expected tokens such as 4M, 16M or 1048576"),
   while 4.5M and 1.5k pass: the line now says what the value came to and that it is not whole.
5. On the Megatron stack sequence parallelism (on with TP) scatters each CP rank's tokens over the TP ranks and
   asserts they divide (megatron/core/tensor_parallel/mappings.py, _split_along_first_dim); --tp 8 --seq 2052 was
   planned, and the chooser picked TP 8 at 2,052-token sequences. Now refused in one line, never chosen.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.architectures import load_model
from anchorgpu.config import Settings
from anchorgpu.planner.speed.interleave_choice import deepest_interleave
from anchorgpu.planner.train_sizes import train_cp_sizes
from cli_runner import run, run_json

# NVIDIA/dgxc-benchmarking llama3.1/README.md, H100 table: 512 GPUs, SeqLen 8192, 126 layers, TP 8, PP 8, CP 2, DP 4,
# VP 8, MBS 1, GBS 256 (sequences: 2,097,152 tokens)
PUBLISHED_405B = ("plan", "llama-3.1-405b", "--task", "train", "--gpu", "h100", "--gpus", "512", "--seq", "8192",
                  "--global-batch", "2097152", "--tp", "8", "--pp", "8", "--cp", "2")


def test_the_deepest_interleave_counts_the_embedding_and_the_loss_as_plan_does() -> None:
    # 126 + 2 = 128 = 8 x 8 x 2 (the DGX Cloud benchmark's PP 8 x VP 8); 94 + 2 = 96 = 8 x 4 x 3 (the Megatron-MoE
    # model zoo's PP 8 x VP 4 for Qwen3-235B-A22B, speed.pipeline.counts_embedding_and_loss); 80 layers as before
    assert deepest_interleave(load_model("llama-3.1-405b"), 8) == 8
    assert deepest_interleave(load_model("qwen3-235b-a22b"), 8) == 4
    assert [deepest_interleave(load_model("llama-3.1-70b"), pp) for pp in (2, 4, 8, 16)] == [10, 10, 10, 5]
    # no more chunks than layers: 16 x 8 = 128 chunks for 126 layers is refused by plan(), so never chosen
    assert deepest_interleave(load_model("llama-3.1-405b"), 16) == 4


def test_the_chooser_interleaves_llama_405b_as_its_published_run_does(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = run_json(capsys, *PUBLISHED_405B)
    assert chosen["fits"] and chosen["layout"]["virtual_stages"] == 8  # 1 (plain 1F1B) before
    given = run_json(capsys, *PUBLISHED_405B, "--virtual-stages", "8")
    plain = run_json(capsys, *PUBLISHED_405B, "--virtual-stages", "1")
    speed = chosen["performance"]["train_tokens_per_s"]
    assert speed == pytest.approx(given["performance"]["train_tokens_per_s"], rel=1e-9)
    assert speed > 1.05 * plain["performance"]["train_tokens_per_s"]  # the chooser's answer before: 87,096 vs 95,146


def test_the_chooser_on_16384_h100_is_no_slower_than_an_interleaved_layout_given(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "llama-3.1-405b", "--task", "train", "--gpu", "h100", "--gpus", "16384")
    chosen = run_json(capsys, *base)
    given = run_json(capsys, *base, "--tp", "8", "--pp", "16", "--virtual-stages", "4")
    assert chosen["layout"]["virtual_stages"] > 1
    assert chosen["performance"]["train_tokens_per_s"] >= given["performance"]["train_tokens_per_s"] * (1 - 1e-9)


TOO_MANY_CHUNKS = ("llama-3.1-405b", "--task", "train", "--gpu", "h100", "--gpus", "16384", "--tp", "8", "--pp", "16",
                   "--virtual-stages", "8")


@pytest.mark.parametrize("extra", [(), ("--seq", "8192", "--global-batch", "16M")], ids=["fits", "does-not-fit"])
def test_more_chunks_than_layers_is_refused_whether_or_not_the_memory_fits(capsys: pytest.CaptureFixture[str],
                                                                           extra: tuple[str, ...]) -> None:
    code, out, err = run(capsys, "plan", *TOO_MANY_CHUNKS, *extra)
    assert code == 2 and out == ""
    assert err.strip() == "error: --virtual-stages 8: pp 16 x v 8 chunks is more than the 126 layers of llama-3.1-405b"


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(offline=True, rate_limit=False)), raise_server_exceptions=False) as c:
        yield c


def test_the_api_refuses_more_chunks_than_layers_with_problem_json(client: TestClient) -> None:
    body = {"model": "llama-3.1-405b", "task": "train", "gpu": "h100", "gpus": 16384, "tp": 8, "pp": 16,
            "virtual_stages": 8, "seq": 8192, "global_batch": 16 * 2**20}
    r = client.post("/v1/plan", json=body)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "pp 16 x v 8 chunks is more than the 126 layers" in r.json()["detail"]


@pytest.mark.parametrize(("gpus", "cp", "seq"), [("1024", "1024", "1024"), ("64", "2", "2050"), ("64", "64", "2112")])
def test_a_cp_whose_2cp_chunks_do_not_split_the_sequence_is_refused(capsys: pytest.CaptureFixture[str], gpus: str,
                                                                    cp: str, seq: str) -> None:
    """CP equal to the sequence (one token a rank) is refused by the 2 x CP chunk rule. The case was --cp 2048 at 2,048
    tokens; since stop 60's qa26 merge --cp is bounded to 1..1,024 first (the test below), so the case is 1,024 at 1,024."""
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", gpus,
                         "--cp", cp, "--seq", seq)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: --cp {cp}: ring attention cuts each sequence into 2 x CP = {2 * int(cp):,} equal")
    assert f"the sequence of {int(seq):,} tokens is not a multiple of {2 * int(cp):,}" in err


def test_a_cp_past_the_layout_bound_is_refused_before_the_chunk_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """--cp 2048 at 2,048 tokens, this file's first chunk case, is refused by qa26's bound on --cp (1 to 1,024)."""
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "2048",
                         "--cp", "2048", "--seq", "2048")
    assert code == 2 and out == "" and err == "error: --cp 2048: expected a whole number from 1 to 1,024\n"


def test_a_cp_whose_2cp_chunks_split_the_sequence_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "64",
                      "--cp", "64", "--seq", "2048")  # 128 chunks of 16 tokens
    assert answer["layout"]["cp"] == 64
    # the chooser's sizes keep the rule: 18,002 tokens split in 2 (9,001 each) but not in 4
    assert train_cp_sizes(18002) == (1,) and train_cp_sizes(131072) == (1, 2, 4, 8, 16, 32)


def test_the_api_refuses_a_cp_that_leaves_one_token_a_rank(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 1024,
                                      "cp": 1024, "seq": 1024})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "2 x CP = 2,048 equal chunks" in r.json()["detail"]


@pytest.mark.parametrize(("argv", "line"), [
    (("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--global-batch", "4.2M"),
     "error: --global-batch '4.2M' is 4,404,019.2 (M = 1,048,576), not a whole number; expected tokens such as 4M, "
     "16M or 1048576"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1.1k", "--output-tokens", "100"),
     "error: --prompt '1.1k' is 1,126.4 (k = 1,024), not a whole number; expected a token count such as 8192 or 8k"),
    (("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--seq", "2048.5"),
     "error: --seq '2048.5' is 2,048.5, not a whole number; expected a token count such as 8192 or 8k"),
    (("recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1T", "--global-batch", "0.3M"),
     "error: --global-batch '0.3M' is 314,572.8 (M = 1,048,576), not a whole number; expected tokens such as 4M, "
     "16M or 1048576"),
])
def test_a_count_that_is_not_whole_after_its_suffix_says_so(capsys: pytest.CaptureFixture[str],
                                                            argv: tuple[str, ...], line: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err == line + "\n"


def test_a_suffixed_count_that_is_whole_is_still_taken(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                      "--global-batch", "4.5M")  # 4,718,592 tokens = 2,304 sequences of 2,048
    assert answer["performance"]["global_batch_tokens"] == 4_718_592


def test_sequence_parallelism_that_cannot_split_the_sequence_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--tp", "8", "--seq", "2052")
    code, out, err = run(capsys, *base)
    assert code == 2 and out == "" and err == (
        "error: --tp 8 with sequence parallelism: Megatron-Core splits each sequence's 2,052 tokens over the 8 TP "
        "ranks and refuses a remainder; give a sequence that is a multiple of 8 tokens, or --no-sequence-parallel "
        "(a dense model)\n")
    # without sequence parallelism TP 8 runs any length; the PyTorch stack's rule is not read, so not refused
    assert run_json(capsys, *base, "--no-sequence-parallel")["layout"]["tp"] == 8


def test_the_chooser_picks_no_tp_that_sequence_parallelism_cannot_split(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-405b", "--task", "train", "--gpu", "h100", "--gpus", "128",
                      "--seq", "2052")  # at 2,048 tokens: TP 8 x PP 16 (v 4)
    assert answer["fits"] and 2052 % answer["layout"]["tp"] == 0


def test_recommend_offers_no_tp_that_sequence_parallelism_cannot_split(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--seq", "2052", "--tokens", "100B",
                      "--top", "100")
    assert answer["results"] and all(2052 % r["layout"]["tp"] == 0 for r in answer["results"])  # TP 8 rows before
