"""Issue 14 item 3: the charts' geometry (web/charts.py) and what the pages draw from it. The browser side
(pixel sizes and overlaps at 390 and 1280 px) is in tests/browser/test_charts_browser.py."""

from __future__ import annotations

import itertools
import re

from fastapi.testclient import TestClient

from anchorgpu.web.charts import GIB, MIN_CHART_PX, WIDE_CHART_PX, memory_bar, pareto_front, scatter


def test_memory_bar_puts_each_markers_label_on_its_own_row_beside_its_line() -> None:
    # the llama-3.1-70b / 4 x H100 case QA found: memory at the right end, an engine budget (90 %) just left of it
    bar = memory_bar({"weights_bytes": 35 * GIB, "kv_cache_bytes": 30 * GIB}, 80 * GIB, budget_bytes=72 * GIB)
    assert bar.limit_x is not None and bar.budget_x is not None
    assert bar.limit_label_y != bar.budget_label_y  # two rows: the labels cannot overlap each other
    assert max(bar.limit_label_y, bar.budget_label_y) < bar.bar_y  # both above the bar
    assert bar.limit_anchor == bar.budget_anchor == "end"  # right half: drawn leftwards, away from the edge
    small = memory_bar({"weights_bytes": 300 * GIB}, 80 * GIB)  # does not fit: the GPU's line in the left half
    assert small.over and small.limit_x is not None and small.limit_x < 50 and small.limit_anchor == "start"
    assert [t[2] for t in small.ticks][0] == "start" and [t[2] for t in small.ticks][-1] == "end"


def test_memory_bar_segments_fill_the_total_in_percent_of_the_width() -> None:
    bar = memory_bar({"weights_bytes": 60 * GIB, "kv_cache_bytes": 10 * GIB, "overhead_bytes": 2 * GIB}, 80 * GIB)
    # axis 0..80 GiB over 1..99 %: 72 GiB ends at 1 + 98 * 72 / 80 = 89.2 %
    end = bar.segments[-1].x + bar.segments[-1].width
    assert abs(end - 89.2) < 1e-9
    assert all(0 <= s.x <= 100 and s.width > 0 for s in bar.segments)


def _brute_front(points: list[tuple[str, float, float]]) -> set[str]:
    return {a[0] for a in points if not any((b[1] <= a[1] and b[2] >= a[2]) and (b[1] < a[1] or b[2] > a[2]) for b in points)}


def test_pareto_front_is_exactly_the_undominated_points() -> None:
    points = [("a", 10, 100), ("b", 12, 90), ("c", 15, 300), ("d", 15, 250), ("e", 40, 310), ("f", 50, 310), ("g", 5, 20)]
    assert {p[0] for p in pareto_front(points)} == _brute_front(points) == {"g", "a", "c", "e"}
    chart = scatter(points, x_label="USD", y_label="tok/s")
    assert {p.label for p in chart.points if p.front} == {"g", "a", "c", "e"}
    # a staircase: 3 steps between 4 front points, each a horizontal then a vertical segment, rising to the right
    assert len(chart.front) == 6
    for x1, y1, x2, y2 in chart.front:
        assert (y1 == y2 and x2 > x1) or (x1 == x2 and y2 < y1)


def _tag_boxes(chart_px: int, tags: list[tuple[float, float, str]]) -> list[tuple[float, float, float, float]]:
    boxes = []
    for x_pct, y, text in tags:
        x = x_pct * chart_px / 100
        half = 3.5 * len(text)  # 11 px bold digits are about 7 px wide
        boxes.append((x - half, y - 8, x + half, y + 4))
    return boxes


def test_tags_never_overlap_and_every_point_is_named_by_one() -> None:
    # ten offerings crowded at two prices, as the 70B recommendations are
    points = [(f"o{i}", 1000.0 + 5 * i, 500.0 + (i % 3)) for i in range(6)] + [(f"p{i}", 9000.0 + i, 4000.0 + 50 * i) for i in range(4)]
    chart = scatter(points, x_label="USD", y_label="tok/s", ranks=list(range(3, 13)))
    assert [p.rank for p in chart.points] == list(range(3, 13))
    for width, attr in ((MIN_CHART_PX, "tag"), (WIDE_CHART_PX, "tag_wide")):
        tagged = [(p.x, p.y, getattr(p, attr)) for p in chart.points if getattr(p, attr)]
        for a, b in itertools.combinations(_tag_boxes(width, tagged), 2):
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (width, a, b)
        named: set[int] = set()
        for text in (t for _, _, t in tagged):  # "3", "3,4" or "3+" (a crowd: the lead and those after it)
            first = int(re.split(r"[,+]", text)[0])
            named.update(int(n) for n in text.rstrip("+").split(",")) if "+" not in text else named.update(range(first, 13))
        assert {p.rank for p in chart.points} <= named


def _recommend(client: TestClient) -> str:
    response = client.get("/recommend?model=llama-3.1-8b&task=inference&term=1month&context=8192&concurrency=16")
    assert response.status_code == 200
    return response.text


def test_every_scatter_point_is_a_focusable_link_naming_its_offering_and_its_row(client: TestClient) -> None:
    html = _recommend(client)
    rows = re.findall(r'<tr id="rec-(\d+)">\s*<td>\d+</td>\s*<td[^>]*>(\d+) × ([\w.-]+)', html)
    points = re.findall(r'<a class="pt[^"]*" href="#rec-(\d+)" aria-label="#(\d+) (\d+)× ([\w.-]+): \$[\d,.]+, [\d,]+ tokens/s', html)
    assert len(points) == len(rows) >= 5
    by_row = {r[0]: (r[1], r[2]) for r in rows}
    for href, rank, servers, offering in points:
        assert href == rank and by_row[rank] == (servers, offering)
    assert 'viewBox' not in re.search(r'<svg class="chart scatter".*?>', html, re.S).group(0)  # type: ignore[union-attr]
    front = re.search(r'id="pareto-list">(.*?)</p>', html, re.S)
    assert front is not None and "#1 " in front.group(1)  # the cheapest recommendation is always on the front
    assert html.count('class="front"') == 2 * (len(re.findall(r'href="#rec-\d+"', front.group(1))) - 1)


def test_memory_bar_labels_on_the_plan_page_use_percent_positions(client: TestClient) -> None:
    html = client.get("/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=4&context=8192&concurrency=32").text
    svg = re.search(r'<svg class="chart memory-bar".*?</svg>', html, re.S)
    assert svg is not None and "viewBox" not in svg.group(0)
    for label in re.findall(r'<text class="(?:limit|budget)-label" x="([\d.]+)%" dx="(-?\d+)"[^>]*text-anchor="(\w+)"', svg.group(0)):
        assert (label[2] == "end") == (int(label[1]) < 0)


def test_the_recommend_page_shows_expert_parallelism_of_a_moe_training_row(client: TestClient) -> None:
    """Training a mixture of experts sweeps EP (recommend's JSON ``layout.ep``); the page's layout cell says it."""
    html = client.get("/recommend?model=qwen3-235b-a22b&task=train&tokens=1e11&top=40&term=1month").text
    assert re.search(r"TP\d PP\d DP\d+ EP\d", html)


def test_the_recommend_page_prices_each_training_run_and_quotes_it(client: TestClient) -> None:
    """With a token count, each row shows the price of its whole run, and its Quote button asks for the run's term:
    hours, or whole months on an offering sold by the month (GB200 trays), which a quote for hours would refuse."""
    html = client.get("/recommend?model=llama-3.1-70b&task=train&tokens=1e12&top=40&term=1month").text
    assert "Run price" in html
    terms = re.findall(r'href="/quote\?offering=([\w-]+)&amp;region=[\w-]+&amp;quantity=\d+&amp;term=(\w+)"', html)
    assert terms and all(term.endswith("h") for offering, term in terms if offering.startswith("b200"))
    assert any(offering == "gb200-4x-bm" and term.endswith("month") for offering, term in terms)
