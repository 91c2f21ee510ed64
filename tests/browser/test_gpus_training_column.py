"""The GPU list's "FP8 / FP4 training" column (gpus.toml training_stacks) in headless Chromium at 390 and 1280 px:
the MI355X's ROCm Transformer Engine shows, the long sm_120 NVFP4 recipe wraps inside its cell, and the page
itself never scrolls sideways (the table scrolls in its own box, as the catalog's does)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("width", (390, 1280))
def test_the_gpu_list_shows_the_training_column_without_widening_the_page(browser: Any, open_page: Any, server: str,
                                                                          width: int) -> None:
    context, page = open_page(browser, width, timeout_ms=20_000)
    try:
        page.goto(f"{server}/gpus")
        row = page.locator("#gpus tr", has_text="mi355x")
        assert "FP4: ROCm Transformer Engine (MXFP4BlockScaling)" in row.inner_text()
        # the RTX PRO 6000's FP4 recipe (S32) wraps in its cell, not one line as wide as a laptop
        cell_px = page.locator("#gpus tr", has_text="rtx-pro-6000").locator("td").nth(5).bounding_box()["width"]
        assert cell_px < 700, cell_px
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
