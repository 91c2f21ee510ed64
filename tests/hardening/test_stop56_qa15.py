"""Stop 56's QA pass over the training answers as a new user meets them (benchmarks/hardening/stop56_qa15.md, "qa15").

1. With ``--mfu`` the layout chooser ranked its candidates on the calibrated model and the plan then timed the layout
   it picked with the user's efficiency: on 16 H100 a 70B at ``--mfu 0.6`` got ZeRO-3 with full recompute, 15,710
   tok/s, where TP 8 x PP 2 (v 10) runs 16,227 tok/s at the same efficiency, and recommend's sweep (which times with
   the user's efficiency) could rank another layout first. The user's MFU applies to the compute of every candidate,
   so the chooser ranks them with it too: the layout shown is the fastest at the speed shown.
"""

from __future__ import annotations

import pytest

from cli_runner import run_json

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
