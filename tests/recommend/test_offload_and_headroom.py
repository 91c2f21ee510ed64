"""``recommend``'s training rows tell what ``plan`` tells of the same GPUs (stop 58 recoffload,
benchmarks/hardening/stop58_recoffload.md):

- a row carries plan's headroom warning for its layout (``thin_training_headroom``: free memory under 2.13% of the
  planned total, ``planner/data/training_headroom.json``; else ``eager_activations_exceed_headroom``), by the one rule
  both call (``planner.headroom.fit_headroom_warnings``);
- an offering and server count that no layout without offload fits gets the layout plan's "What would fit" offers
  first on those GPUs, ``--offload optimizer`` (stop57_closest.md), marked offloaded, in place of a rejection; one where
  a layout without offload fits is left as it was.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend
from cli_runner import run, run_json

HEADROOM = {"thin_training_headroom", "eager_activations_exceed_headroom"}
_NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _plan(capsys: pytest.CaptureFixture[str], model: str, row: dict, *flags: str) -> dict:
    network = (["--network-gbit-per-gpu", str(row["network_gbit_per_s_per_gpu"])]
               if row.get("network_gbit_per_s_per_gpu") else [])
    return run_json(capsys, "plan", model, "--task", "train", "--tokens", "10B", "--gpu", row["gpu"], "--gpus",
                    str(row["gpus"]), *network, *flags)


def _same_layout(row: dict, p: dict) -> None:
    assert row["layout"] == {k: p["layout"][k] for k in row["layout"]}, (row["layout"], p["layout"])
    assert row["concurrency"] == p["workload"]["micro_batch"]
    assert row["train_tokens_per_s"] == pytest.approx(p["performance"]["train_tokens_per_s"], abs=0.5)
    assert row["per_gpu_total_bytes"] == p["per_gpu"]["total_bytes"]


def test_70b_on_8_h200_carries_plans_thin_headroom(capsys: pytest.CaptureFixture[str]) -> None:
    """The task's case: ``plan llama-3.1-70b --task train --gpu h200 --gpus 8`` fits TP 4 x PP 2 (v 10) with 17.39 MiB
    free of 139.78 GiB and warns thin_training_headroom; recommend's 1 x 8 H200 row is that layout and now says so
    too. Every H200 row carries exactly plan's headroom warnings for its layout."""
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "10B", "--gpu", "h200",
                    "--top", "99")["results"]
    one = next(r for r in rows if r["gpus"] == 8 and r["offering"] == "h200-8x-bm")
    assert "thin_training_headroom" in one["warnings"]
    assert 0 <= one["headroom_bytes"] < 0.0213 * one["per_gpu_total_bytes"]  # thin_share(): 1.0604 x 1.0103 - 1.05
    for row in (r for r in rows if r["servers"] == 1 or r["gpus"] == 8 * r["servers"]):
        p = _plan(capsys, "llama-3.1-70b", row)
        _same_layout(row, p)
        assert HEADROOM & set(row["warnings"]) == HEADROOM & {w["code"] for w in p["warnings"]}, row["gpus"]
        assert "offload" not in row["layout"]  # a layout without offload fits every H200 count: rows unchanged


def test_thin_headroom_is_flagged_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI marks the row's memory with '!' and names the rows and the code under the table."""
    code, out, _ = run(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "10B", "--gpu", "h200",
                       "--max-servers", "1")
    assert code == 0
    row = next(line for line in out.splitlines() if "h200-8x-bm" in line and "1×8" in line)
    assert "139.8/139.8 !" in row and row.startswith("│1 ")  # the only row (the 1-GPU VM holds no 70B)
    assert "! #1: headroom under what the worst measured run took" in out and "thin_training_headroom" in out


def test_405b_on_64_h100_shows_plans_offload_row(capsys: pytest.CaptureFixture[str]) -> None:
    """``plan llama-3.1-405b --task train --gpu h100 --gpus 64`` finds no layout without offload and offers first
    ``--offload optimizer`` on the 64 GPUs (stop57_closest.md: TP 4 x PP 16, 61.32 GiB, 14,101 tok/s). recommend
    said "does not fit" for 8 x 8 H100; now its row is that layout, offloaded, as ``plan --offload optimizer``
    plans it."""
    rows = run_json(capsys, "recommend", "llama-3.1-405b", "--task", "train", "--tokens", "10B", "--gpu", "h100",
                    "--max-servers", "8", "--top", "99")["results"]
    row = next(r for r in rows if r["gpus"] == 64 and r["offering"] == "h100-sxm-8x-bm")
    assert row["layout"]["offload"] == "optimizer" and "offload_slows_training" in row["warnings"]
    bare = _plan(capsys, "llama-3.1-405b", row)
    assert bare["fits"] is False
    first = bare["suggestions"][0]
    assert first["change"] == "--offload optimizer" and first["gpus"] == 64
    assert row["per_gpu_total_bytes"] == first["total_bytes"]
    assert row["train_tokens_per_s"] == pytest.approx(first["train_tokens_per_s"], abs=0.5)
    _same_layout(row, _plan(capsys, "llama-3.1-405b", row, "--offload", "optimizer"))
    assert (row["layout"]["tp"], row["layout"]["pp"]) == (4, 16)  # stop57_closest.md's row
    # the offloaded state, with the fp32 gradient partition its host update reads (stop58_qa23 item 2), is held in
    # the servers' RAM (h100-sxm-8x-bm: 2,048 GiB, offerings.csv)
    host = 8 * (row["offloaded_optimizer_bytes"] + row["offloaded_gradients_bytes"])
    assert row["host_bytes_per_server"] == host <= 2048 * 2**30


def test_offload_only_where_no_layout_without_it_fits(capsys: pytest.CaptureFixture[str]) -> None:
    """70B on H100: one server (8 GPUs) fits no layout without offload (plan says so and offers the offload first),
    so its row is offloaded; two to four servers fit without it and keep their rows."""
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "10B", "--gpu", "h100",
                    "--top", "99")["results"]
    by_servers = {r["servers"]: r for r in rows if r["offering"] == "h100-sxm-8x-bm"}
    assert set(by_servers) == {1, 2, 3, 4}
    assert by_servers[1]["layout"].get("offload") == "optimizer"
    assert all("offload" not in by_servers[n]["layout"] for n in (2, 3, 4))
    bare = _plan(capsys, "llama-3.1-70b", by_servers[1])
    assert bare["fits"] is False and bare["suggestions"][0]["change"] == "--offload optimizer"
    code, out, _ = run(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "10B", "--gpu", "h100",
                       "--max-servers", "1")
    assert code == 0 and "off:opt" in out and "Optimizer state in host memory (ZeRO-Offload) on #1" in out


def test_offload_needs_the_servers_ram() -> None:
    """The same 1 x 8 H100 with less RAM than the offloaded optimizer state (70B: 12 bytes a parameter over 8 GPUs,
    about 0.8 TB a server) gets no offloaded row: it stays rejected, and the reason says the RAM is short."""
    catalog = load_catalog()
    small = replace(catalog.offering("h100-sxm-8x-bm"), ram_bytes=256 * 2**30)
    spec = SweepSpec(workload=Workload(task="train"), train_tokens=10**10)
    rec = recommend(load_model("llama-3.1-70b"), spec, catalog, "1month", _NOW, offerings=[small], max_servers=1)
    assert rec.results == ()
    (rejection,) = rec.rejected
    assert rejection.servers == 1 and "of RAM" in rejection.reason and "256.00 GiB" in rejection.reason
    full = recommend(load_model("llama-3.1-70b"), spec, catalog, "1month", _NOW,
                     offerings=[catalog.offering("h100-sxm-8x-bm")], max_servers=1)
    assert [o.config.get("offload") for o in full.results] == ["optimizer"]


def test_serving_rows_carry_no_offload(capsys: pytest.CaptureFixture[str]) -> None:
    """Serving is not touched: no row of an inference recommend is offloaded or carries a training warning."""
    body = run_json(capsys, "recommend", "llama-3.1-70b", "--gpu", "h100", "--context", "8192", "--concurrency", "32")
    assert body["results"]
    for row in body["results"]:
        assert "offload" not in row["layout"] and not (HEADROOM | {"offload_slows_training"}) & set(row["warnings"])
