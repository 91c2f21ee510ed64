"""Stop 61's new-user pass over issue 11 (benchmarks/hardening/stop61_qa27.md).

1. README figures that stop 60's refit (96bb4014) moved and nothing restated: the training layout margin (10.0% ->
   9.1%, twice), the serving margin over PCIe or the network (13.6% -> 12.9%), Qwen3-30B-A3B on 64 H100 (763,905 ->
   763,815 tok/s), Mixtral 8x7B on 2 x 8 B200 in recommend (247,542 and "1.5% faster" -> 247,633 and 1.4%), DeepSeek-V3's
   default-batch line on 2,048 H800 (32% of each step, 1.31x -> 25%, 1.23x), the latency-limits table's third row (TTFT 1.07 s, $20.20 -> 1.06 s, $20.19), the
   70B ladder on 8 x H100 without a floor (TP 2 x PP 4 at 989 users, 6.3 tok/s -> TP 4 x DP 2 at 668, 8.0 tok/s), the
   recipe section's plan (31.97 GiB, short by 146.40 GiB -> the journey's 32.01 and 146.43) and the compare section's
   CUDA decode share and per-layer cost (92%, 39 us -> calibration.json's 0.9257 and 39.7 us: 93%, 40 us). Each check
   below recomputes its figure from the command README names (or calibration.json), so a refit that moves one fails
   here until README follows. The DeepSeek-V3 attention-DP engine's 12,704 tok/s still holds (JSON's 12,703.5; the
   table prints the unrounded 12,703.4), checked as a guard.
2. ``--pipeline-layout 'Et*99999999999|t|t|tL'`` (API ``pipeline_layout``) wrote the repeat out before checking it:
   MemoryError, a traceback on the CLI and a 500 on the API (and seconds of CPU and gigabytes for counts just below
   that). The repeats are now counted before they are written and refused past the most symbols any layout of the
   model has.
3. The queue line wrote a wait past 1,000 s in exponent form ("each waits about 2.11e+04 s" for DeepSeek-R1's
   1,000,000 users on 32 H100): past a minute it now writes the unit the CLI writes a run in, the seconds beside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.pipeline_layout import parse_pipeline_layout
from cli_runner import run, run_json

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
README_FLAT = re.sub(r"\s+", " ", README)
CALIBRATION = json.loads((ROOT / "src/anchorgpu/planner/speed/data/calibration.json").read_text("utf-8"))


def test_readme_margins_are_calibration_jsons() -> None:
    training = CALIBRATION["training_layout_margin"]["value"]
    assert f"the training layout margin, {training:.1%}, the median gap" in README_FLAT
    assert f"predicted more than the {training:.1%} training layout margin faster" in README_FLAT
    by_link = CALIBRATION["layout_margin"]["by_link"]
    assert (f"{by_link['scale-up']['value']:.1%} where both stay on NVLink, xGMI or NVSwitch" in README_FLAT)
    assert f"{by_link['pcie-or-network']['value']:.1%} where one crosses PCIe or the network" in README_FLAT


def test_readme_cuda_and_rocm_decode_constants_are_calibration_jsons() -> None:
    cuda, rocm = CALIBRATION["stacks"]["cuda"], CALIBRATION["stacks"]["rocm"]
    assert f"(ROCm's {rocm['decode_mbu']:.0%}, CUDA's {cuda['decode_mbu']:.0%})" in README_FLAT
    assert f"(CUDA's {cuda['per_layer_step_s'] * 1e6:.0f} us," in README_FLAT
    assert f"ROCm's {rocm['per_layer_step_s'] * 1e6:.0f} us, on one-request latency rows" in README_FLAT


def test_readme_qwen3_30b_on_64_h100_is_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    p = run_json(capsys, "plan", "qwen3-30b-a3b", "--task", "train", "--gpu", "h100", "--gpus", "64")
    lay = p["layout"]
    assert (lay["tp"], lay["pp"], lay["virtual_stages"], lay["ep"], p["workload"]["micro_batch"]) == (1, 2, 8, 8, 8)
    assert (f"TP 1 x PP 2 (v 8) x EP 8 at micro-batch 8, {p['performance']['train_tokens_per_s']:,.0f} tok/s"
            in README_FLAT)


def test_readme_mixtral_zero_pair_on_16_b200_is_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "mixtral-8x7b-v0.1", "--task", "train", "--gpu", "b200", "--gpus", "16", "--tp", "1", "--pp",
            "1", "--ep", "8")
    z1 = run_json(capsys, *base, "--zero", "1", "--micro-batch", "4")
    z2 = run_json(capsys, *base, "--zero", "2", "--micro-batch", "8")
    one, two = z1["performance"]["train_tokens_per_s"], z2["performance"]["train_tokens_per_s"]
    share = z2["per_gpu"]["total_bytes"] / z2["budget_bytes"]
    assert (f"ZeRO-1 at micro-batch 4, {one:,.0f} tok/s, not ZeRO-2 at 8, {(two / one - 1):.1%} faster at "
            f"{share:.1%} of memory") in README_FLAT


def test_readme_deepseek_v3_default_batch_line_is_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "h800", "--gpus", "2048")
    flat = re.sub(r"\s+", " ", out)
    hint = re.search(r"take (\d+%) of the step\. At --global-batch 16M this layout would run at [\d,]+ tok/s "
                     r"\(([\d.]+x)\)", flat)
    assert hint, flat[:2000]
    assert (f"DeepSeek-V3 on 2,048 H800: {hint[1]} of each step, {hint[2]} the tokens a second at "
            "`--global-batch 16M`") in README_FLAT


def test_readme_deepseek_v3_recommend_engine_row(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "recommend", "deepseek-v3", "--gpu", "h200", "--top", "3")["results"]
    one = next(r for r in rows if r["servers"] == 1)
    assert (f"(TP 1 x DP 8 x EP 8, {one['concurrency']:,} users at {one['output_tokens_per_s']:,.0f} tok/s)"
            in README_FLAT)


def test_readme_latency_limits_table_rows_are_recommends(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--top", "3", "--prompt", "8k",
                    "--min-tokens-per-s-per-user", "20", "--max-ttft-s", "2")["results"]
    block = README.split("--max-ttft-s 2` gives", 1)[1].split("```", 2)[1]
    shown = [line for line in block.splitlines() if line.startswith("│")]
    assert len(shown) == len(rows) == 3
    for line, row in zip(shown, rows, strict=True):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[1] == row["offering"]
        assert cells[9] == f"{row['ttft_s']:.2f}", (cells, row["ttft_s"])
        assert cells[7] == f"{row['output_tokens_per_s']:,.0f}"


def test_readme_70b_ladder_on_8_h100_with_and_without_a_floor(capsys: pytest.CaptureFixture[str]) -> None:
    def server(*extra: str) -> dict:
        rows = run_json(capsys, "recommend", "llama-3.1-70b", "--gpu", "h100", "--top", "20", *extra)["results"]
        return next(r for r in rows if r["offering"] == "h100-sxm-8x-bm" and r["servers"] == 1)

    free, floored = server(), server("--min-tokens-per-s-per-user", "40")

    def split(lay: dict) -> str:
        return " x ".join(f"{k.upper()} {lay[k]}" for k in ("tp", "pp", "dp") if lay[k] > 1)

    assert (f"llama-3.1-70b over the ladder: {split(free['layout'])} at {free['concurrency']:,} users, "
            f"{free['decode_tokens_per_s_per_user']:.1f} tok/s each, without a floor; {split(floored['layout'])} at "
            f"{floored['concurrency']} users with {floored['decode_tokens_per_s_per_user']:.1f} under "
            "`--min-tokens-per-s-per-user 40`)") in README_FLAT


def test_readme_recipe_section_is_the_journeys_plan(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "llama-3.1-70b", "--context", "8k", "--concurrency", "32", "--gpu", "h100")
    p = run_json(capsys, *base, "--gpus", "8", "--recipe", "vllm")
    assert (f"(the plan: FITS, {p['per_gpu']['total_bytes'] / 2**30:.2f} GiB of {p['budget_bytes'] / 2**30:.2f} GiB "
            f"per GPU, max concurrency {p['max_concurrency']})") in README_FLAT
    code, _, err = run(capsys, *base, "--gpus", "1", "--recipe", "vllm")
    assert code == 2
    assert err.strip().removeprefix("error: ") in README_FLAT


# 2. a pipeline layout's repeat counts


@pytest.mark.parametrize("text", ["Et*99999999999|t|t|tL", "(Et*8|t*8|t*8|t*8L)*99999999999",
                                  "(t*0|)*99999999|Et*8|t*8|t*8|t*8L", "Et*8|t*8|t*8|t*8|" * 3 + "|*99999999999L"])
def test_a_huge_repeat_is_refused_before_it_is_written_out(capsys: pytest.CaptureFixture[str], client: TestClient,
                                                           text: str) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--pp",
                         "4", "--pipeline-layout", text)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err[-400:]
    assert "its repeats write out" in err and "more than any layout of the model has" in err
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "pp": 4,
                                      "pipeline_layout": text})
    assert r.status_code == 422, r.text[:300]
    assert r.headers["content-type"].startswith("application/problem+json")
    assert "its repeats write out" in r.json()["detail"]


def test_the_bound_is_the_models_layers_and_the_most_chunk_ends() -> None:
    """32 layers over pp 4: 32 t, E, L and a '|' between at most 4 x 1,024 chunks (the most virtual stages any face
    accepts) = 4,129 symbols: a layout of exactly that many parses, one more is refused before it is written out."""
    with pytest.raises(InvalidWorkload, match=r"write out 4,130 symbols, more than any layout of the model has "
                                              r"\(4,129 at most"):
        parse_pipeline_layout("Et*32" + "|*4096L", pp=4, virtual_stages=None, num_layers=32, model_name="m")
    widest = parse_pipeline_layout("Et*32" + "|*4095L", pp=4, virtual_stages=None, num_layers=32, model_name="m")
    assert (widest.virtual_stages, widest.chunk_layers[0], sum(widest.chunk_layers)) == (1024, 32, 32)
    even = parse_pipeline_layout("Et*4|" + "t*4|" * 6 + "t*4L", pp=4, virtual_stages=2, num_layers=32, model_name="m")
    assert even.chunk_layers == (4,) * 8


# 3. the queue line's times


def test_a_long_queue_wait_is_written_in_hours_not_exponent_form(capsys: pytest.CaptureFixture[str]) -> None:
    perf = run_json(capsys, "plan", "deepseek-r1", "--gpu", "h100", "--gpus", "32", "--tp", "8", "--pp", "4",
                    "--concurrency", "1000000")["performance"]
    (line,) = [a for a in perf["assumptions"] if a.startswith("Requests queue:")]
    assert "e+" not in line, line
    hours, seconds = re.search(r"each waits about ([0-9.]+) h \(([0-9,]+) s\)", line).groups()  # type: ignore[union-attr]
    wait = 1_000_000 * 256 / perf["output_tokens_per_s"] - perf["ttft_s"] - 255 * perf["tpot_s"]  # Little's law
    assert float(seconds.replace(",", "")) == pytest.approx(wait, abs=1) and float(hours) == round(wait / 3600, 1)
