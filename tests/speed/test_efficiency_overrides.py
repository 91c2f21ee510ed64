"""``--mfu`` / ``--mbu`` (and the API's ``mfu`` / ``mbu``) replace the calibrated efficiencies; one too small to be
a real efficiency is refused in one line instead of printing a speed of 0 tok/s."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.speed.overrides import MIN_EFFICIENCY, Overrides
from cli_runner import run


@pytest.mark.parametrize("value", [5e-324, 1e-10, 0.009, 0.0, -0.5, 1.0001, float("nan"), float("inf")])
def test_an_efficiency_outside_one_percent_to_one_is_refused(value: float) -> None:
    for name in ("mfu", "mbu"):
        with pytest.raises(InvalidWorkload, match=f"^--{name} .*: an efficiency is a fraction from 0.01 to 1"):
            Overrides(**{name: value})


def test_the_smallest_efficiency_taken_still_gives_a_speed() -> None:
    assert MIN_EFFICIENCY == 0.01 and Overrides(mfu=0.01, mbu=1).mfu == 0.01


def test_every_face_refuses_5e_324_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """QA pass: --mbu 5e-324 printed 0.0 tok/s per user (and --mfu 5e-324 on recommend a TypeError traceback)."""
    for argv in (("plan", "llama-3.1-8b", "--gpu", "h100", "--mbu", "5e-324"),
                 ("plan", "llama-3.1-8b", "--gpu", "h100", "--mfu", "5e-324"),
                 ("recommend", "llama-3.1-8b", "--top", "1", "--mfu", "5e-324")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "an efficiency is a fraction from 0.01 to 1" in err
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'e.db'}", offline=True))
    with TestClient(app) as client:
        for name in ("mfu", "mbu"):
            answer = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", name: 5e-324})
            assert answer.status_code == 422 and answer.json()["detail"].startswith(f"body.{name}: "), answer.text
            assert client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", name: 0.01}).status_code == 200


def test_a_prediction_with_the_users_efficiencies_has_no_calibrated_band() -> None:
    """The bands say where measured runs fell around the calibrated model; with --mbu/--mfu the figure is the user's
    model, so low = high = the prediction, the JSON says so, and the constants line does not call them calibrated."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    p = plan(load_model("llama-3.1-8b"), Workload(context_tokens=8192), gpu=get_gpu("h100"))
    mine = plan_performance(p, mbu=0.5)
    assert mine["efficiencies"] == "user"
    assert mine["tpot_s_low"] == mine["tpot_s"] == mine["tpot_s_high"]
    assert not any(a.startswith("calibrated CUDA constants") for a in mine["assumptions"])
    shipped = plan_performance(p)
    assert "efficiencies" not in shipped and shipped["tpot_s_low"] < shipped["tpot_s"] < shipped["tpot_s_high"]


def test_recommend_rows_with_the_users_efficiencies_carry_no_calibrated_band_either() -> None:
    """recommend reads its bands through the same calibrated(overrides) as plan: with --mbu the rows' low and high
    are the prediction itself."""
    from datetime import UTC, datetime

    from anchorgpu.architectures import load_model
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.inputs import Workload
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend.service import recommend, recommendation_to_json
    from anchorgpu.units import parse_term

    spec = SweepSpec(workload=Workload(task="inference", context_tokens=4096, concurrency=8),
                     efficiencies=Overrides(mbu=0.5))
    rec = recommend(load_model("llama-3.1-8b"), spec, load_catalog(), parse_term("1month"), datetime.now(UTC), top=3)
    row = recommendation_to_json(rec)["results"][0]
    assert row["decode_tokens_per_s_total_low"] == row["decode_tokens_per_s_total_high"]
