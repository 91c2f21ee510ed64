"""A "What would fit" change is planned as the command pasted with it would be: where the user gave no memory share,
the engine's default for the changed layout, not the share the original plan resolved. SGLang derives its
mem_fraction_static from the layout (serving_engine), so the share differs between TP 8 and attention DP.

The adversarial walk's case: ``plan deepseek-v3 --gpu h200 --gpus 8 --tp 8 --concurrency 2048 --engine sglang``
offered ``--tp 1 --dp 8 --ep 8`` at 117.78 GiB with 7.93 GiB headroom (under TP 8's 0.886 share), while that
command planned on its own said DOES NOT FIT, 117.78 of 107.89 GiB (its own 0.758 share)."""

from __future__ import annotations

import pytest

from cli_runner import run_json

BASE = ("plan", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--json")


@pytest.mark.parametrize("argv", [("--gpus", "8", "--tp", "8", "--concurrency", "2048"),
                                  ("--gpus", "16", "--tp", "8", "--dp", "2", "--concurrency", "4096")])
def test_every_change_offered_fits_when_pasted(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    _pasted_changes_fit(capsys, BASE, argv)


def test_a_change_to_pipeline_stages_drops_a_given_ep(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-235B-A22B as 16 attention replicas over EP 4 does not fit on 16 H200 (a hostile walk): the change to
    16 pipeline stages says --ep 1 too, so pasted beside the user's --ep 4 it plans instead of being refused; and EP
    over each whole server is offered (it fits: each GPU holds half the experts EP 4 gives it)."""
    base = ("plan", "qwen3-235b-a22b", "--gpu", "h200", "--json")
    argv = ("--gpus", "16", "--tp", "1", "--dp", "16", "--ep", "4", "--concurrency", "512")
    answer = run_json(capsys, *base, *argv)
    assert any(s["change"] == "--tp 1 --pp 16 --ep 1" for s in answer["suggestions"])
    assert any(s["change"] == "--ep 8" for s in answer["suggestions"])  # its experts over each whole server
    _pasted_changes_fit(capsys, base, argv)


def _pasted_changes_fit(capsys: pytest.CaptureFixture[str], base: tuple[str, ...], argv: tuple[str, ...]) -> None:
    answer = run_json(capsys, *base, *argv)
    assert not answer["fits"] and answer["suggestions"]
    for s in answer["suggestions"]:
        change = s["change"].split()
        keys = {change[i] for i in range(0, len(change), 2)}
        kept: list[str] = []
        for i in range(0, len(argv), 2):  # the user's options the change does not replace (a layout change sets
            if argv[i] not in keys and not (argv[i] == "--dp" and {"--tp", "--pp"} & keys):  # its own DP)
                kept += argv[i:i + 2]
        pasted = run_json(capsys, *base, *kept, *change)
        assert pasted["fits"], s["change"]
        assert pasted["headroom_bytes"] == s["headroom_bytes"], s["change"]
