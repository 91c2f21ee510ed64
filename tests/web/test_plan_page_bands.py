"""The plan page writes every training figure with its band and roofline ceiling, in English and Russian: the step,
the MFU and the GPU-hours beside the rates and the run's time (the ceiling never in the figure's place)."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

TRAINING = "/plan?model=llama-3.1-8b&task=train&gpu=h100&gpus=8&tokens=1e10"


def _figure(page: str, label: str) -> str:
    match = re.search(rf"<dt>{re.escape(label)}</dt><dd>(.*?)</dd>", page, re.S)
    assert match, f"no {label!r} line"
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1))))


def test_the_step_mfu_and_gpu_hours_carry_their_band_and_ceiling_in_both_languages(client: TestClient) -> None:
    perf = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                         "tokens": 10**10}).json()["performance"]
    en = client.get(TRAINING + "&lang=en").text
    ru = client.get(TRAINING + "&lang=ru").text
    step = _figure(en, "One step")
    assert step.startswith(f"{perf['step_time_s']:.3g} s (measured runs like this fell within "
                           f"{perf['step_time_s_low']:.3g}–{perf['step_time_s_high']:.3g} s; "
                           f"roofline ceiling {perf['step_time_s_ceiling']:.3g} s):")
    mfu = _figure(en, "MFU")
    assert mfu == (f"{perf['train_mfu']:.1%} (measured runs like this fell within {perf['train_mfu_low']:.1%}–"
                   f"{perf['train_mfu_high']:.1%}; roofline ceiling {perf['train_mfu_ceiling']:.1%})")
    # MFU counts attention over the whole sequence, the ceiling the causal work at the peak: past 100% by that much
    assert 1.0 < perf["train_mfu_ceiling"] < 1.1
    hours = _figure(en, "GPU-hours")
    assert hours.startswith(f"{perf['gpu_hours']:,.0f} (measured runs like this fell within "
                            f"{perf['gpu_hours_low']:,.0f}–{perf['gpu_hours_high']:,.0f}; roofline ceiling "
                            f"{perf['gpu_hours_ceiling']:,.0f})")
    step_ru, mfu_ru, hours_ru = _figure(ru, "Один шаг"), _figure(ru, "MFU"), _figure(ru, "GPU-часов")
    for line in (step_ru, mfu_ru, hours_ru):
        assert "укладывались в" in line and "потолок roofline" in line, line
    assert f"{perf['step_time_s_ceiling']:.3g}".replace(".", ",") in step_ru
