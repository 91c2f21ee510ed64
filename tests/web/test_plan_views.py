"""Issue 14 item 1 on the planner page: every weights format side by side for the chosen model and GPU, and
the GPUs and counts a workload fits on when no GPU is chosen; each row is a link that opens that plan."""

from __future__ import annotations

import html as html_lib
import re

from fastapi.testclient import TestClient

from anchorgpu.planner import WEIGHT_FORMATS


def _table(page: str, table_id: str) -> list[tuple[str, list[str]]]:
    body = re.search(rf'<table class="compact" id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body is not None, table_id
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        link = re.search(r'href="([^"]+)"', tr)
        cells = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows.append((html_lib.unescape(link.group(1)) if link else "", cells))
    return rows


def _verdict(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", re.search(r'id="verdict">(.*?)</p>', page, re.S).group(1)).split())  # type: ignore[union-attr]


def test_every_weights_format_side_by_side_and_each_row_opens_that_plan(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=4&context=8192").text
    rows = _table(page, "formats-table")
    assert [cells[0].split()[0] for _, cells in rows] == list(WEIGHT_FORMATS)
    current = [cells for _, cells in rows if "this plan" in cells[0]]
    assert len(current) == 1 and current[0][0].startswith("bf16")
    assert current[0][1] == "4"  # the GPUs each row's plan is on
    assert current[0][2] in _verdict(page)  # the plan's own row shows the verdict's memory per GPU
    by_name = {cells[0].split()[0]: (link, cells) for link, cells in rows}
    # fp32 weights of a 70B model (~280 GB) cannot fit 4 x 80 GB: no concurrency, no speed
    fp32 = by_name["fp32"][1]
    assert fp32[3] == "does not fit" and fp32[4] == "–" and fp32[5] == "–"
    # fp8 fits with more room than bf16: higher max concurrency, and its link opens the fp8 plan with the same numbers
    link, fp8 = by_name["fp8"]
    assert fp8[3] == "fits" and int(fp8[4]) > int(current[0][4]) and re.match(r"[0-9.,]+ tokens/s ", fp8[5]) is not None  # then its band
    opened = client.get(link).text
    assert "weights=fp8" in link and fp8[2] in _verdict(opened)


def test_with_no_gpu_chosen_the_page_lists_the_fewest_gpus_of_each_kind(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-70b&context=8192").text
    rows = _table(page, "fit-table")
    assert len(rows) >= 20  # every GPU the registry knows
    h100 = next((link, cells) for link, cells in rows if "gpu=h100-sxm&" in link)
    count = int(h100[1][2])
    assert _verdict(client.get(h100[0]).text).startswith("Fits")
    if count > 1:  # one count fewer from the ladder does not fit
        fewer = {2: 1, 4: 2, 8: 4, 16: 8}[count]
        assert _verdict(client.get(f"/plan?model=llama-3.1-70b&context=8192&gpu=h100-sxm&gpus={fewer}").text).startswith("Does not fit")
    counts = [int(cells[2]) for _, cells in rows if cells[2].isdigit()]
    assert counts == sorted(counts)  # fewest GPUs first


def test_the_answer_is_one_element_the_page_can_refresh_in_place(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100").text
    assert 'id="plan-form" data-live="plan-answer"' in page
    answer = page[page.index('<div id="plan-answer"'):]
    assert 'id="verdict"' in answer and 'id="formats"' in answer
    bad = client.get("/plan?model=no-such-model-xyz")
    assert bad.status_code in (404, 422) and 'id="plan-error"' in bad.text[bad.text.index('<div id="plan-answer"'):]


def test_the_gpu_sweep_stops_at_its_time_budget_and_says_which_gpus_it_did_not_check() -> None:
    from anchorgpu.web.plan_compare import gpus_that_fit

    rows = gpus_that_fit({"model": "llama-3.1-70b", "context": 8192}, offline=True, budget_s=0.0)
    unchecked = [r for r in rows if not r.checked]
    assert len(unchecked) == len(rows) - 1 and all(r.gpus is None for r in unchecked)  # the first GPU is always tried
    full = gpus_that_fit({"model": "llama-3.1-70b", "context": 8192}, offline=True)
    assert all(r.checked for r in full)


def test_the_gpu_sweep_of_a_training_job_takes_the_planners_fewest_gpus() -> None:
    """A training job is asked once per GPU without a count: the planner's fewest GPUs, past the serving sweep's 16
    (a 70B on 16 H100; Llama 3.1 405B needs 128), each row linking to the plan it answered."""
    from anchorgpu.web.plan_compare import gpus_that_fit

    rows = {r.gpu: r for r in gpus_that_fit({"model": "llama-3.1-70b", "task": "train"}, offline=True, budget_s=30.0)}
    assert rows["h100-sxm"].gpus == 16 and "gpus=16" in rows["h100-sxm"].link
    big = {r.gpu: r for r in gpus_that_fit({"model": "llama-3.1-405b", "task": "train"}, offline=True, budget_s=30.0)}
    assert big["h100-sxm"].gpus == 128


def test_a_training_plan_lists_each_format_on_its_own_gpu_count_and_the_job_speed(client: TestClient) -> None:
    """Without a GPU count each format is planned on the fewest GPUs that hold it, so a row says how many; a training
    row's speed is the job's tokens/s (``performance.train_tokens_per_s``), not a user's, and it has no concurrency.
    The table showed "Speed per user" and "Max concurrency" over Llama-3.1-405B training rows, and no GPU count."""
    query = "model=llama-3.1-405b&task=train&gpu=h100-sxm&seq=8192"
    page = client.get(f"/plan?{query}").text
    header = re.search(r'<table class="compact" id="formats-table">.*?<thead>(.*?)</thead>', page, re.S)
    assert header is not None
    assert "Training tokens/s" in header.group(1) and "Speed per user" not in header.group(1)
    assert "Max concurrency" not in header.group(1)
    api = client.post("/v1/plan", json={"model": "llama-3.1-405b", "task": "train", "gpu": "h100-sxm", "seq": 8192}).json()
    current = next(cells for _, cells in _table(page, "formats-table") if "this plan" in cells[0])
    assert current[1] == str(api["layout"]["gpus"])  # 128, as the verdict's plan
    assert current[4].startswith(f"{api['performance']['train_tokens_per_s']:,.0f} tokens/s ")  # then its band


def test_a_gpu_that_holds_nothing_says_how_many_were_tried(client: TestClient) -> None:
    """The planner tries up to 1,024 GPUs without a count (serving_layouts.SERVING_GPU_COUNTS); the row said 'not on
    16 or fewer'."""
    page = client.get("/plan?model=llama-3.1-8b&concurrency=100000&context=131072&allow_long_context=on").text
    assert "not on 16 or fewer" not in page and "not on 1,024 or fewer" in page
    russian = client.get("/plan?model=llama-3.1-8b&concurrency=100000&context=131072&allow_long_context=on&lang=ru").text
    assert "не помещается на 1\u00a0024 и менее" in russian or "не помещается на 1 024 и менее" in russian
