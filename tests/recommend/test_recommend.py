"""Recommendations: priced exactly like quotes, ranked by cost, Pareto front, rejections, CLI contract."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.cli import main
from anchorgpu.errors import InvalidInput
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.quotes import price_quote
from anchorgpu.recommend import recommend, recommendation_to_json

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()
LLAMA_70B = load_model("llama-3.1-70b")
SERVING = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))


@pytest.fixture(scope="module")
def serving():
    return recommend(LLAMA_70B, SERVING, CATALOG, "1month", NOW, top=50)


def test_every_recommended_total_is_what_a_quote_for_the_same_servers_and_term_costs(serving) -> None:
    assert serving.results
    for option in serving.results:
        quote = price_quote(CATALOG, option.offering, option.servers, "1month", None, NOW)
        assert option.total_usd == quote.total_usd
        assert option.effective_per_gpu_hour_usd == quote.effective_per_gpu_hour_usd
        assert option.per_gpu_hour_usd == CATALOG.offering(option.offering).per_gpu_hour_usd


def test_training_run_prices_are_quotes_for_the_hours_the_run_needs() -> None:
    spec = SweepSpec(workload=Workload(task="train", seq_tokens=4096), train_tokens=10**11)
    rec = recommend(load_model("llama-3.1-8b"), spec, CATALOG, "1w", NOW)
    assert rec.results
    for option in rec.results:
        assert option.run_hours is not None and option.run_hours * 3600 >= option.config["train_time_s"]
        quote = price_quote(CATALOG, option.offering, option.servers, f"{option.run_hours}h", None, NOW)
        assert option.run_usd == quote.total_usd and option.run_term == f"{option.run_hours}h"
    runs = [o.run_usd for o in rec.results]
    assert runs == sorted(runs)


@pytest.fixture(scope="module")
def run_70b():
    spec = SweepSpec(workload=Workload(task="train"), train_tokens=10**12)
    return recommend(LLAMA_70B, spec, CATALOG, "1month", NOW, top=1000)


def test_an_offering_sold_by_the_month_prices_a_run_by_the_months_that_cover_it(run_70b) -> None:
    """GB200 trays are sold by the month only (catalog offerings.csv): a run of H hours on them is quoted as
    ceil(H / 720) months. It used to go unpriced, be ranked by its one-month price against other offerings' whole
    runs (first, at a twelfth of its run's price), and be offered with a `quote --term Nh` that exits 2."""
    monthly = [o for o in run_70b.results if o.offering == "gb200-4x-bm"]
    assert monthly
    for option in monthly:
        months = -(-option.run_hours // 720)
        assert option.run_term == f"{months}month"
        assert option.run_usd == price_quote(CATALOG, option.offering, option.servers, option.run_term, None, NOW).total_usd
        assert option.run_usd > option.total_usd  # the whole run, not the one-month term
    runs = [o.run_usd for o in run_70b.results]
    priced = [r for r in runs if r is not None]
    assert priced and priced == sorted(priced) and runs[:len(priced)] == priced  # a run no quote prices comes last
    assert all(o.run_refused for o in run_70b.results if o.run_usd is None)  # only those longer than 10 years


def test_the_run_front_is_priced_by_whole_runs(run_70b) -> None:
    front = run_70b.pareto
    assert front and all(p.run_usd is not None for p in front)
    for p in front:
        assert not any(o.run_usd is not None and o.run_usd <= p.run_usd and o.speed > p.speed
                       for o in run_70b.results if o is not p)


def test_the_next_step_quotes_the_run_and_that_quote_exists(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e12", "--top", "3"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    step = re.search(r"Next: anchorgpu quote (\S+) --term (\S+) --quantity (\d+)", out)
    assert step is not None
    assert main(["quote", step[1], "--term", step[2], "--quantity", step[3], "--json"]) == 0
    capsys.readouterr()


def test_results_are_sorted_by_total_cost_and_every_one_fits(serving) -> None:
    totals = [o.total_usd for o in serving.results]
    assert totals == sorted(totals)
    for option in serving.results:
        c = option.config
        assert c["fits"] and c["per_gpu_total_bytes"] <= c["budget_bytes"]
        assert c["tp"] * c["pp"] * c["dp"] == option.gpus == option.servers * CATALOG.offering(option.offering).gpus


def test_no_option_on_the_pareto_front_is_beaten_on_both_cost_and_speed(serving) -> None:
    everything = recommend(LLAMA_70B, SERVING, CATALOG, "1month", NOW, top=1000).results
    for p in serving.pareto:
        assert not any(o.total_usd <= p.total_usd and o.speed > p.speed for o in everything if o is not p)


def test_cheaper_offerings_that_do_not_fit_are_listed_with_the_reason(serving) -> None:
    cheapest = serving.results[0].total_usd
    assert serving.rejected
    for r in serving.rejected:
        assert r.total_usd is None or r.total_usd <= cheapest
        assert r.reason
    assert any(r.offering == "rtx-4090-1x-vm" and "does not fit" in r.reason for r in serving.rejected)


def test_max_usd_drops_dearer_options_and_says_why() -> None:
    rec = recommend(LLAMA_70B, SERVING, CATALOG, "1month", NOW, max_usd=Decimal("2000"), top=100, lower_precision=True)
    assert rec.results and all(o.total_usd <= 2000 for o in rec.results)


def test_a_per_user_speed_floor_keeps_only_options_that_reach_it() -> None:
    rec = recommend(LLAMA_70B, SERVING, CATALOG, "1month", NOW, min_tokens_per_s_per_user=30)
    assert rec.results and all(o.config["decode_tokens_per_s_per_user"] >= 30 for o in rec.results)


def test_bigger_batches_raise_total_tokens_per_s_in_the_recommendation() -> None:
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=4096), weights=("bf16",), kv_caches=("bf16",),
                     concurrencies=(1, 8, 64))
    rec = recommend(load_model("llama-3.1-8b"), spec, CATALOG, "1h", NOW, top=100)
    for o in rec.results:  # the fastest fitting batch is kept: 1 only where 8 sequences' KV cache alone overflows
        c = o.config
        assert c["concurrency"] >= 8 or c["per_gpu_total_bytes"] + 7 * c["kv_cache_bytes"] > c["budget_bytes"], c
    # one L4 (21.95 GiB as CUDA reports it, gpus.toml) holds a single 4,096-token sequence beside the 8B's weights
    assert any(o.config["concurrency"] >= 8 for o in rec.results)


@settings(max_examples=12, deadline=None)
@given(context=st.sampled_from([2048, 8192, 32768]), concurrency=st.sampled_from([1, 4, 32, 128]),
       term=st.sampled_from(["8h", "1w", "2w", "1month", "3months"]))
def test_ranking_is_sorted_and_deterministic_for_any_serving_workload(context, concurrency, term) -> None:
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=context, concurrency=concurrency))
    a = recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, CATALOG, term, NOW))
    b = recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, CATALOG, term, NOW))
    assert a == b
    totals = [Decimal(r["total_usd"]) for r in a["results"]]
    assert totals == sorted(totals)


def test_an_unknown_weight_format_is_refused_with_one_line() -> None:
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192), weights=("int3",))
    with pytest.raises(InvalidInput):
        recommend(LLAMA_70B, spec, CATALOG, "1month", NOW)


def test_cli_json_has_the_contract_keys(capsys) -> None:
    code = main(["recommend", "llama-3.1-70b", "--task", "inference", "--context", "8192", "--concurrency", "32",
                 "--term", "1month", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert {"model", "workload", "term", "evaluated", "results", "pareto", "rejected", "assumptions",
            "warnings"} <= set(data)
    assert data["evaluated"] > 100 and data["term"] == "1month"  # one precision: the plan's (bf16 weights and KV)
    first = data["results"][0]
    for key in ("offering", "gpu", "gpus", "servers", "layout", "weights", "kv_cache", "concurrency",
                "per_gpu_total_bytes", "fits", "decode_tokens_per_s_total", "decode_tokens_per_s_per_user",
                "prefill_s", "total_usd", "per_gpu_hour_usd", "usd_per_million_output_tokens"):
        assert key in first
    assert set(first["layout"]) == {"tp", "pp", "dp", "zero", "ep", "cp", "virtual_stages"}
    assert first["layout"]["ep"] == 1  # a dense model: no expert parallelism
    assert isinstance(first["total_usd"], str)  # exact decimal money


def test_training_a_mixture_of_experts_sweeps_expert_parallelism_too(capsys) -> None:
    """plan()'s layout chooser tries EP sizes for a MoE training run; recommend ranks them as well, with EP in the
    layout (JSON and table) and the sizes it tried in the assumptions; serving splits experts with TP or, under
    attention data parallelism, over one server's GPUs."""
    code = main(["recommend", "qwen3-235b-a22b", "--task", "train", "--tokens", "1e11", "--top", "40", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    eps = {r["layout"]["ep"] for r in data["results"]}
    assert len(eps) > 1 and max(eps) > 1  # several EP sizes ranked (with its larger expert products EP wins here)
    assert any(a.startswith("Expert parallelism swept too: EP 1, 2, 4, 8") for a in data["assumptions"])
    code = main(["recommend", "qwen3-235b-a22b", "--task", "train", "--tokens", "1e11", "--top", "40"])
    assert code == 0 and re.search(r"TP\d PP\d DP\d+ EP\d", capsys.readouterr().out)
    code = main(["recommend", "qwen3-30b-a3b", "--concurrency", "16", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    # serving: the experts split with TP, or over one server's GPUs under attention data parallelism
    assert all(r["layout"]["ep"] == 1 or (r["layout"]["ep"] == r["gpus"] <= 8 and r["servers"] == 1)
               for r in data["results"])
    assert any(a.startswith("Expert parallelism swept as attention data parallelism on one server")
               for a in data["assumptions"])


def test_cli_table_names_the_layout_speed_and_monthly_price(capsys) -> None:
    code = main(["recommend", "llama-3.1-70b", "--context", "8k", "--concurrency", "32", "--top", "3"])
    out = capsys.readouterr().out
    assert code == 0
    assert "TP1" in out and "tok/s" in out and "total 1month" in out and "Cheaper options rejected" in out


@pytest.mark.parametrize(
    ("argv", "exit_code", "needle"),
    [
        (["recommend", "llama-3.1-70b", "--term", "3 fortnights"], 2, "term"),
        (["recommend", "llama-3.1-70b", "--max-usd", "lots"], 2, "--max-usd"),
        (["recommend", "llama-3.1-70b", "--weights", "int3"], 2, "int3"),
        (["recommend", "llama-3.1-70b", "--context", "999999"], 2, "context"),
        (["recommend", "llama-3.1-70b", "--mfu", "2"], 2, "mfu"),
        (["recommend", "llama-3.1-70b", "--concurrency", "0"], 2, "concurrency"),
        (["recommend", "no-such-model"], 3, "no-such-model"),
        (["recommend", "llama-3.1-70b", "--gpu", "h900"], 3, "h900"),
    ],
)
def test_bad_input_exits_with_one_line(capsys, argv, exit_code, needle) -> None:
    assert main(argv) == exit_code
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and needle in err and "\n" not in err


def test_fp8_training_is_ranked_on_gpus_with_fp8_units_and_the_others_are_rejected_with_the_reason() -> None:
    """plan refuses --train-precision fp8 on a GPU without FP8 tensor cores (an A100); recommend takes the same
    option, ranks the offerings whose GPU has them by the FP8 step (faster than mixed precision on the same
    servers: NeMo's FP8 runs, perf_measured T32-T34) and lists each other one with the reason."""
    spec = SweepSpec(workload=Workload(task="train", seq_tokens=4096, train_precision="fp8"), train_tokens=10**10)
    fp8 = recommend(load_model("llama-3.1-8b"), spec, CATALOG, "1week", NOW, top=100)
    assert fp8.results and fp8.workload["train_precision"] == "fp8"
    assert not any(o.gpu.startswith("a100") for o in fp8.results)
    a100 = [r for r in fp8.rejected if r.offering.startswith("a100")]
    assert a100 and all("has no FP8 tensor cores" in r.reason for r in a100)
    mixed = recommend(load_model("llama-3.1-8b"), SweepSpec(workload=Workload(task="train", seq_tokens=4096),
                                                            train_tokens=10**10), CATALOG, "1week", NOW, top=100)
    def layout(o):  # FP8's weight copies take memory, so the layout that fits can differ (ZeRO-3 across servers)
        return (o.offering, o.servers, *(o.config[k] for k in ("tp", "pp", "dp", "zero")))

    by_layout = {layout(o): o for o in mixed.results}
    h100 = [(o, by_layout[layout(o)]) for o in fp8.results if o.gpu == "h100-sxm" and layout(o) in by_layout]
    # FP8 is faster wherever the products set the step; where the gradient traffic does (FSDP over two one-GPU VMs
    # and their network: 2,544 against 2,545 tok/s) it leaves the step as it was, to a thousandth
    assert sum(a.speed > b.speed for a, b in h100) >= 3 and all(a.speed >= 0.999 * b.speed for a, b in h100)


def test_fp8_training_where_no_offering_has_fp8_units_is_one_line(capsys) -> None:
    code = main(["recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp8", "--gpu", "a100-80gb"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "no offering considered has a GPU with FP8 tensor cores" in err


def test_serving_recommendations_run_every_user_at_once(capsys) -> None:
    """vLLM runs at most max_num_seqs sequences a replica (256 on an A100 and on GPUs under 70 GiB, 1,024 on larger
    ones: vLLM arg_utils, as plan sizes its engine): gpt-oss-20b for 5,000 users was recommended on three one-A100
    servers, timed as if 1,667 sequences ran on each, while their engines would run 768 and queue the rest. Now every
    result runs its users at once, and the option rejected says why."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
    from anchorgpu.planner.inputs import Workload

    code = main(["recommend", "gpt-oss-20b", "--concurrency", "5000", "--top", "10", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]
    for r in data["results"]:
        cap = engine_limits(Workload(), large_gpu=large_engine_defaults(get_gpu(r["gpu"])))[1]
        assert r["concurrency"] <= r["layout"]["dp"] * cap, r
    assert not any(r["offering"] == "a100-80gb-sxm-1x-vm" and r["layout"]["dp"] < 20 for r in data["results"])
    # one H100 holds 1,500 users' cache, but its engine runs 1,024 of them at once
    code = main(["recommend", "gpt-oss-20b", "--concurrency", "1500", "--top", "1", "--max-servers", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    h100 = next(r for r in data["rejected"] if r["offering"] == "h100-sxm-1x-vm")
    assert code == 0 and "at most 1,024 sequences a replica" in h100["reason"] and "queue 476 of the 1,500" in h100["reason"]


def test_a_run_longer_than_the_term_says_how_many_servers_would_finish_it_within() -> None:
    """Llama 3.1 405B on 10^12 tokens: the fastest of 1-4 servers still runs for years; the answer says so and how
    many servers would finish within the term at the same speed per GPU (GPU-hours about the same)."""
    spec = SweepSpec(workload=Workload(task="train"), train_tokens=10**12)
    rec = recommend(load_model("llama-3.1-405b"), spec, CATALOG, "1month", NOW, top=1000)
    line = next(a for a in rec.assumptions if a.startswith("The fastest run here takes"))
    fastest = max(rec.results, key=lambda o: (o.speed, -o.servers))
    needed = -(-fastest.run_hours * fastest.servers // 720)
    assert f"takes {fastest.run_hours:,} h on {fastest.servers} x {fastest.offering}" in line
    assert f"needs about {needed} servers" in line and "--task train" in line
    short = recommend(load_model("llama-3.1-8b"), SweepSpec(workload=Workload(task="train"), train_tokens=10**9),
                      CATALOG, "1month", NOW)
    assert not any(a.startswith("The fastest run here takes") for a in short.assumptions)


def test_a_run_longer_than_any_quotable_term_has_no_run_price_and_says_why(capsys) -> None:
    """Llama 3.1 70B on 10^15 tokens runs for centuries on 1-4 servers: quote refuses terms over 10 years
    (units.MAX_TERM_HOURS), so no row may show a price for the run (it showed about $523M), and each says why,
    in the record, the JSON and the CLI's text, with the way to shorten it (more GPUs)."""
    from anchorgpu.units import MAX_TERM_HOURS

    spec = SweepSpec(workload=Workload(task="train"), train_tokens=10**15)
    rec = recommend(LLAMA_70B, spec, CATALOG, "1month", NOW, top=5)
    assert rec.results
    for option in rec.results:
        assert option.run_hours is not None and option.run_hours > MAX_TERM_HOURS
        assert option.run_usd is None and option.run_term is None
        assert option.run_refused is not None and "longer than the longest term a quote prices" in option.run_refused
        assert "more GPUs" in option.run_refused
    body = recommendation_to_json(rec)
    assert all(r["run_usd"] is None and r["run_refused"] == o.run_refused for r, o in zip(body["results"], rec.results, strict=True))
    short = recommend(LLAMA_70B, SweepSpec(workload=Workload(task="train"), train_tokens=10**9), CATALOG, "1month", NOW)
    assert all(o.run_refused is None and o.run_usd is not None for o in short.results)
    code = main(["recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e15", "--top", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "over 10 y" in out and "longer than the longest term a quote prices" in out
    assert not re.search(r"\$[0-9]{3},[0-9]{3},[0-9]{3}\.", out)  # no nine-figure run price
