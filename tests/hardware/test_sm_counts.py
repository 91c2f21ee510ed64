"""The catalog's SM (NVIDIA) and compute-unit (AMD) counts agree with the sources they cite.

Each ``sm_count`` in ``hardware/data/gpus.toml`` carries its source key in a comment (``sm_count = 132  # S29``); the
number must be printed in that source's description in ``hardware/data/sources.toml`` (S15: ROCm's GPU specifications
table; S26: H20 summaries; S27: MI250X specifications; S29: NVIDIA's whitepapers and device queries; S30: Blackwell
counts; S31: tools' tables), and the loader must read the same number.
"""

from __future__ import annotations

import re
from importlib import resources

from anchorgpu.hardware import get_gpu, source_descriptions

_ROW = re.compile(r'^sm_count = "?(\d+)(\??)"?\s*#\s*(S\d+)', re.MULTILINE)
_NAME = re.compile(r'^name = "([^"]+)"', re.MULTILINE)


def _counts() -> list[tuple[str, int, bool, str]]:
    text = resources.files("anchorgpu.hardware").joinpath("data", "gpus.toml").read_text(encoding="utf-8")
    out = []
    for block in text.split("[[gpu]]")[1:]:
        name = _NAME.search(block)
        row = _ROW.search(block)
        if name and row:
            out.append((name.group(1), int(row.group(1)), row.group(2) == "?", row.group(3)))
    return out


def test_every_gpu_states_its_count_with_a_source() -> None:
    counts = {name for name, *_ in _counts()}
    # the GPUs the speed model's per-SM figures are read for (serving rows on each), all present
    assert {"a100-80gb-sxm", "h100-sxm", "h200", "b200", "gb200", "b300", "rtx-pro-6000", "l40s", "mi300x",
            "mi355x"} <= counts


def test_each_count_is_printed_in_its_cited_source_and_loaded_as_written() -> None:
    for name, count, uncertain, key in _counts():
        description = source_descriptions([key])[key]
        assert re.search(rf"(?<!\d)(?<!\d,){count}(?!\d)(?!,\d)", description), (name, count, key)
        assert get_gpu(name).sm_count == count, name
        # the one count no stored source prints for the product itself stays marked uncertain
        if name == "gb200":
            assert uncertain


def test_counts_that_matter_to_the_per_sm_rate() -> None:
    # S29: RTX Blackwell PRO whitepaper Appendix A, 188 of GB202's 192 SMs; S30: 148 SMs in a B200 (74 a die);
    # S29: GH100 in H100 SXM5 and H200, 132; S15: MI300X 304 compute units
    assert (get_gpu("rtx-pro-6000").sm_count, get_gpu("b200").sm_count, get_gpu("h100-sxm").sm_count,
            get_gpu("h200").sm_count, get_gpu("mi300x").sm_count) == (188, 148, 132, 132, 304)
