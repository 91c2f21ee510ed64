"""A "What would fit" row's training speed carries its band, the one the suggested plan gives (``_low``/``_high``
from the same estimate), in the JSON, the CLI table and the page (stop 54, branch qa12; qa11 left it: the rows showed
a bare prediction beside a plan whose every speed has its band). Llama 3.1 70B at 131,072 tokens on 8 H100 does not
fit; its row ``--gpus 32`` plans the layout ``plan --gpus 32`` chooses."""

from __future__ import annotations

import re

import pytest

from cli_runner import run, run_json

ARGS = ("plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--seq", "131072")


def test_each_suggestion_s_speed_has_the_band_of_the_plan_it_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, *ARGS)
    assert doc["fits"] is False and doc["suggestions"]
    # stop 57 (closest): the optimizer offloaded on the same 8 GPUs comes first; the fewest GPUs that hold it as asked next
    assert [s["change"] for s in doc["suggestions"]][:2] == ["--offload optimizer", "--gpus 32"]
    row = doc["suggestions"][1]
    suggested = run_json(capsys, *ARGS[:-3], "32", "--seq", "131072")["performance"]
    for key in ("train_tokens_per_s", "train_tokens_per_s_low", "train_tokens_per_s_high"):
        assert row[key] == pytest.approx(suggested[key], rel=1e-9), key
    assert row["train_tokens_per_s_low"] < row["train_tokens_per_s"] <= row["train_tokens_per_s_high"]
    code, out, _ = run(capsys, *ARGS)
    assert code == 0 or code == 3
    shown = re.search(r"--gpus 32 .*?\b([\d,]+) \(([\d,]+)-([\d,]+)\) │", out)
    assert shown and "train tok/s (band)" in out, out[-1500:]
    assert [int(v.replace(",", "")) for v in shown.groups()] == [
        round(row["train_tokens_per_s"]), round(row["train_tokens_per_s_low"]), round(row["train_tokens_per_s_high"])]

