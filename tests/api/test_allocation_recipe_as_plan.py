"""The allocation's launch is the plan ``POST /v1/plan`` gives with the same recipe (stop 59, allocreach).

``GET /v1/allocations/{id}/recipe`` set only the accelerate flag and the serving engine on its workload, not
``launch_reach`` nor the training stack the launch runs (``resolve_train_stack``): its training plans were Megatron's
where ``plan --recipe`` plans the PyTorch stack the launch runs, so its memory and layout were not the launch's. Both
faces now build the workload for the recipe through the same functions (``anchorgpu.planner.engine_choice``).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


def _book_one_h100_server(client: TestClient, alice: Any, quote_for: Any) -> str:
    quote = quote_for(alice, offering="h100-sxm-8x-bm", quantity=1)  # 1 server of 8 H100 SXM (the seeded catalog)
    bought = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("buy-8x"))
    assert bought.status_code == 201, bought.text
    allocation_id: str = bought.json()["id"]
    return allocation_id


@pytest.mark.parametrize(("task", "kind"), [("train", "accelerate"), ("train", "torchrun-fsdp"),
                                            ("inference", "sglang")])
def test_the_allocation_launch_is_the_plan_with_that_recipe(client: TestClient, alice: Any, quote_for: Any,
                                                            task: str, kind: str) -> None:
    allocation = _book_one_h100_server(client, alice, quote_for)
    booked = client.get(f"/v1/allocations/{allocation}/recipe", headers=alice.auth,
                        params={"kind": kind, "model": "llama-3.1-8b", "task": task})
    assert booked.status_code == 200, booked.text
    planned = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": task, "gpu": "h100-sxm", "gpus": 8,
                                            "recipe": kind})
    assert planned.status_code == 200, planned.text
    mine, plan = booked.json()["plan"], planned.json()
    assert mine["layout"] == plan["layout"]
    assert (mine["fits"], mine["total_bytes"], mine["headroom_bytes"]) == (
        plan["fits"], plan["per_gpu"]["total_bytes"], plan["headroom_bytes"])
