"""The plan page's "What would fit" writes each suggested training speed with its band under it and says what the
range is (stop 54, branch qa12; the JSON and CLI: ``tests/planner/test_suggestion_speed_band.py``)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_page_writes_the_band_under_each_suggested_speed(client: TestClient) -> None:
    page = client.get("/plan", params={"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": "8",
                                       "seq": "131072"}).text
    table = page[page.index('id="suggestions"'):page.index("</table>", page.index('id="suggestions"'))]
    assert '<span class="muted small band">' in table  # the --gpus 32 row's band
    rows = [r for r in table.split("<tr>") if "apply-suggestion" in r or "<code>" in r]
    assert rows and all('class="muted small band"' in r for r in rows)
    assert 'id="suggestion-band-note"' in page
