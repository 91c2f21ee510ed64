"""``recommend --min-tokens-per-s-per-user X --max-ttft-s T`` (API ``min_tokens_per_s_per_user``, ``max_ttft_s``;
recommend.limits): a latency SLA as AIConfigurator's SLA search takes it (TPOT, TTFT), on each configuration's
PREDICTED figures at its own concurrency. An offering and server count whose best configuration already meets the
limits keeps it, in the same order; one with no configuration that meets them is dropped, and the answer says how
many were. Before: no TTFT limit, and nothing said what the floor dropped (the flag was named --min-tokens-per-s,
read as an aggregate rate)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep_floor import UserLimits, limit_rungs
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json
from cli_runner import run, run_json

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()
LLAMA_70B = load_model("llama-3.1-70b")
# a fixed concurrency: the same configurations swept with and without the limits (no limit rung added), so the
# answer with them is the one without them, less what misses them
FIXED = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))


def _key(o) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    return o.offering, o.servers


@pytest.fixture(scope="module")
def unlimited():  # type: ignore[no-untyped-def]
    return recommend(LLAMA_70B, FIXED, CATALOG, "1month", NOW, top=100)


@pytest.mark.parametrize(("limit", "column", "meets"), [
    ({"min_tokens_per_s_per_user": 30.0}, "decode_tokens_per_s_per_user", lambda v: v >= 30.0),
    ({"max_ttft_s": 0.1}, "prefill_s", lambda v: v <= 0.1),
])
def test_a_limit_drops_the_options_that_miss_it_and_keeps_the_rest_in_order(unlimited, limit, column, meets) -> None:  # type: ignore[no-untyped-def]
    limited = recommend(LLAMA_70B, FIXED, CATALOG, "1month", NOW, top=100, **limit)
    assert limited.results and all(meets(o.config[column]) for o in limited.results)
    kept = {_key(o): o for o in limited.results}
    met_already = [o for o in unlimited.results if meets(o.config[column])]
    missed = [o for o in unlimited.results if not meets(o.config[column])]
    assert met_already and missed, "the limit should fall between the shipped catalog's options"
    # an option whose fastest configuration met it keeps that configuration
    for o in met_already:
        assert _key(o) in kept and kept[_key(o)].config == o.config, _key(o)
    # the options kept in both lists keep their order (ranked by the term's total, then speed)
    both = [_key(o) for o in unlimited.results if _key(o) in kept]
    assert [_key(o) for o in limited.results if _key(o) in set(both)] == both
    # what is gone is counted: options that fit and lost every configuration to the limit
    gone = {_key(o) for o in unlimited.results} - set(kept)
    name = "floor" if "min_tokens_per_s_per_user" in limit else "ttft"
    assert getattr(limited.limits, f"options_dropped_by_{name}") == len(gone) > 0
    offerings_gone = {o for o, _ in gone} - {o for o, _ in kept}
    assert getattr(limited.limits, f"offerings_dropped_by_{name}") == len(offerings_gone)


def test_an_option_too_slow_for_each_user_keeps_a_wider_layout_that_is_not() -> None:
    """The limits are applied over the whole grid before each option keeps its fastest configuration, so an offering
    whose fastest layout serves each user too slowly keeps another that meets the floor: on 8 H100 SXM over the
    ladder, llama-3.1-70b's most tokens/s in all is TP 4 x DP 2 at 668 users (8.0 tok/s each at stop 61; TP 2 x PP 4 at
    989 users, 6.3 tok/s, when this was written); at 40 tok/s a user it is TP 8 (shipped catalog and calibration,
    2026-12)."""
    offerings = [o for o in CATALOG.offerings if o.id.startswith("h100-sxm-8x")]
    ladder = SweepSpec(workload=Workload(task="inference"))
    fastest = recommend(LLAMA_70B, ladder, CATALOG, "1month", NOW, top=8, offerings=offerings)
    floored = recommend(LLAMA_70B, ladder, CATALOG, "1month", NOW, top=8, offerings=offerings,
                        min_tokens_per_s_per_user=40.0)
    assert [_key(o) for o in floored.results] == [_key(o) for o in fastest.results]
    for before, after in zip(fastest.results, floored.results, strict=True):
        assert before.config["decode_tokens_per_s_per_user"] < 40.0 <= after.config["decode_tokens_per_s_per_user"]
        assert after.config["tp"] > before.config["tp"], (before.config["tp"], after.config["tp"])
    assert floored.limits.options_dropped_by_floor == 0


def test_the_json_says_which_limits_were_applied_and_what_they_dropped() -> None:
    rec = recommend(LLAMA_70B, FIXED, CATALOG, "1month", NOW, top=3, min_tokens_per_s_per_user=30.0, max_ttft_s=2.0)
    body = recommendation_to_json(rec)["limits"]
    assert body["min_tokens_per_s_per_user"] == 30.0 and body["max_ttft_s"] == 2.0
    assert body["dropped"]["min_tokens_per_s_per_user"]["options"] == rec.limits.options_dropped_by_floor > 0
    line = next(a for a in rec.assumptions if a.startswith("Per-user limits applied"))
    assert "at least 30 tokens/s a user (a token every 33.3 ms or sooner)" in line and "within 2 s" in line
    none = recommendation_to_json(recommend(LLAMA_70B, FIXED, CATALOG, "1month", NOW, top=1))
    assert none["limits"]["min_tokens_per_s_per_user"] is None and none["limits"]["max_ttft_s"] is None
    assert not any(a.startswith("Per-user limits applied") for a in none["assumptions"])


def test_over_the_ladder_each_layout_gets_a_rung_at_the_most_users_within_the_ttft_limit(
        capsys: pytest.CaptureFixture[str]) -> None:
    """With a TTFT limit alone, each layout is also swept at the most users whose first token comes within it
    (planner.sweep_floor.limit_rungs), not only at the ladder's powers of two."""
    doc = run_json(capsys, "recommend", "llama-3.1-70b", "--top", "4", "--prompt", "32k", "--output-tokens", "512",
                   "--max-ttft-s", "2")
    assert doc["results"] and all(r["ttft_s"] <= 2.0 for r in doc["results"])
    swept = next(a for a in doc["assumptions"] if a.startswith("Swept"))
    assert "see a first token within 2 s" in swept
    assert doc["limits"]["dropped"]["max_ttft_s"]["offerings"] > 0
    assert any("no configuration gives a first token within 2 s" in r["reason"] for r in doc["rejected"])


def test_limit_rungs_meet_both_limits_with_one_more_user_a_replica_missing_one() -> None:
    speed = lambda conc: 100.0 / np.asarray(conc, dtype=np.float64)  # noqa: E731  a user's tokens/s as 1 / users
    ttft = lambda conc: 0.1 * np.asarray(conc, dtype=np.float64)  # noqa: E731  first token later with more users
    limits = UserLimits(min_tokens_per_s_per_user=10.0, max_ttft_s=0.75)
    rungs = limit_rungs(lambda c, _asked: limits.gauge(speed(c), ttft(c)), np.array([1, 1]), np.array([[64, 5]]))
    assert rungs.tolist() == [[7, 5]]  # 0.7 s <= 0.75 < 0.8 s (speed alone would allow 10); the second at saturation


def test_the_cli_takes_the_new_name_and_the_old_one(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("recommend", "llama-3.1-8b", "--gpu", "h100", "--top", "2")
    new = run_json(capsys, *argv, "--min-tokens-per-s-per-user", "60")
    old = run_json(capsys, *argv, "--min-tokens-per-s", "60")
    assert new["results"] == old["results"] and new["limits"]["min_tokens_per_s_per_user"] == 60.0
    code, out, _ = run(capsys, *argv, "--min-tokens-per-s-per-user", "60", "--max-ttft-s", "1")
    assert code == 0 and "Per-user limits applied" in " ".join(out.split())


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--min-tokens-per-s-per-user", "0", "--min-tokens-per-s-per-user 0: expected a finite number above 0"),
    ("--min-tokens-per-s-per-user", "-20", "--min-tokens-per-s-per-user -20: expected a finite number above 0"),
    ("--max-ttft-s", "nan", "--max-ttft-s nan: expected a finite number above 0"),
    ("--max-ttft-s", "1e6", "--max-ttft-s 1,000,000: expected a finite number above 0, at most 86,400"),
    ("--max-ttft-s", "soon", "'soon' is not a valid float"),
])
def test_a_bad_limit_is_exit_2_with_one_line_naming_it(capsys: pytest.CaptureFixture[str], flag: str, value: str,
                                                       said: str) -> None:
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", flag, value)
    assert code == 2 and said in err, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


@pytest.mark.parametrize("argv", [("--min-tokens-per-s-per-user", "20"), ("--max-ttft-s", "2")])
def test_training_refuses_the_limits(capsys: pytest.CaptureFixture[str], argv: tuple[str, str]) -> None:
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", *argv)
    assert code == 2 and f"{argv[0]} {argv[1]} applies to serving" in err, err
