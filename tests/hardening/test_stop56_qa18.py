"""Stop 56, qa18: QLoRA layouts no public stack runs (benchmarks/hardening/stop56_qa18.md).

QLoRA with interleaved virtual stages was planned and chosen (70B on 8 H100: TP 1 x PP 4 (v 10) x DP 2, 14,230
tok/s). The public launches of a 4-bit base over several GPUs are data parallel (DDP, FSDP-QLoRA, DeepSpeed ZeRO) or
the base split layer-wise with ``device_map="auto"``; none interleaves chunks, and NeMo's PEFT refuses a virtual
pipeline ("Virtual pipeline model parallel is not supported when using PEFT"). Sources in anchorgpu.planner.qlora_tp.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from cli_runner import run, run_json

_70B_QLORA = ("llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "8")
_REASON = "with --task qlora: no public stack interleaves pipeline stages over a 4-bit base"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(offline=True, rate_limit=False))) as c:
        yield c


def _page_error(page_text: str) -> str:
    found = re.search(r'class="[^"]*error[^"]*"[^>]*>(.*?)</', page_text, re.S)
    assert found, page_text[:400]
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def test_qlora_with_virtual_stages_is_refused_on_every_face(capsys: pytest.CaptureFixture[str],
                                                            client: TestClient) -> None:
    for extra in (("--virtual-stages", "2"), ("--pp", "4", "--virtual-stages", "5")):  # count open and stated
        code, _, err = run(capsys, "plan", *_70B_QLORA, *extra)
        assert code == 2 and err.count("\n") == 1, (extra, err)
        assert err.startswith(f"error: --virtual-stages {extra[-1]} {_REASON}"), err
    # the chunks of a stated layout (80 layers, PP 2, 8 chunks: 4 a stage) are interleaving too
    code, _, err = run(capsys, "plan", *_70B_QLORA, "--pp", "2", "--pipeline-layout",
                       "Et*10|t*10|t*10|t*10|t*10|t*10|t*10|t*10L")
    assert code == 2 and err.startswith(f"error: --pipeline-layout (4 chunks a stage) {_REASON}"), err
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "qlora", "gpu": "h100", "gpus": 8,
                                      "virtual_stages": 2})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("virtual_stages 2 with task qlora: no public stack interleaves"), r.json()
    page = client.get("/plan?model=llama-3.1-70b&task=qlora&gpu=h100&gpus=8&virtual_stages=2&lang=en")
    assert page.status_code == 422
    assert _page_error(page.text).startswith("“Virtual pipeline stages” 2 with “Task” qlora: no public stack"), \
        _page_error(page.text)
    # LoRA keeps interleaving (a control: its 16-bit base runs Megatron-Core's schedules as the full model's does)
    assert run_json(capsys, "plan", "llama-3.1-70b", "--task", "lora", "--gpu", "h100", "--gpus", "8", "--pp", "2",
                    "--virtual-stages", "2")["layout"]["virtual_stages"] == 2


def test_the_chooser_and_recommend_never_interleave_qlora(capsys: pytest.CaptureFixture[str]) -> None:
    for gpu in ("h100", "l40s", "rtx-4090"):  # each chose v 10 before (PP 4, PP 2, PP 4)
        chosen = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", gpu, "--gpus", "8")
        assert chosen["fits"] and (chosen["layout"]["virtual_stages"] or 1) == 1, (gpu, chosen["layout"])
    for stack in ("pytorch", "megatron"):
        chosen = run_json(capsys, "plan", *_70B_QLORA, "--train-stack", stack)
        assert (chosen["layout"]["virtual_stages"] or 1) == 1 and chosen["layout"]["tp"] == 1, (stack, chosen["layout"])
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "qlora", "--tokens", "100M", "--top", "20")["results"]
    assert rows and all(r["layout"]["virtual_stages"] == 1 and r["layout"]["tp"] == 1 for r in rows)
