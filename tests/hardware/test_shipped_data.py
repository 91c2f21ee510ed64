"""The shipped GPU data: every GPU the issue names, figures that match the reference table, and the
distinctions the planner relies on (absent vs unknown, uncertain values, usable vs headline memory).

Figures are checked two ways: a hand-written table of anchor figures, each naming its source, and a
cell-by-cell comparison with ``reference_gpu_specs.csv`` (a verbatim copy of the team's
``shared/reference/gpu_specs.csv``; source keys S#/P# explained in ``gpu_specs.md`` and in our
``hardware/data/sources.toml``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from anchorgpu.hardware import PRECISIONS, get_gpu, list_gpus, source_descriptions
from anchorgpu.hardware.loader import load_shipped_gpus
from anchorgpu.units import GIB

REFERENCE_CSV = Path(__file__).with_name("reference_gpu_specs.csv")

# Reference-table row label -> our canonical name.
CSV_ROWS = {
    "NVIDIA A100 80GB SXM": "a100-80gb-sxm",
    "NVIDIA H100 SXM 80GB": "h100-sxm",
    "NVIDIA H100 PCIe 80GB": "h100-pcie",
    "NVIDIA H100 NVL 94GB": "h100-nvl",
    "NVIDIA H200 SXM 141GB": "h200",
    "NVIDIA B200 (HGX/DGX, per GPU)": "b200",
    "NVIDIA B300 / Blackwell Ultra (HGX, per GPU)": "b300",
    "NVIDIA GB200 (per GPU, NVL72)": "gb200",
    "NVIDIA L40S": "l40s",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
    "NVIDIA GeForce RTX 5090": "rtx-5090",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI325X": "mi325x",
    "AMD Instinct MI355X": "mi355x",
    "NVIDIA L4": "l4",
    "NVIDIA A10G (AWS G5)": "a10g",
}
# Cells where our data deliberately goes beyond the reference table, each with the source that fills it.
# Everything else must match the reference cell by cell.
BEYOND_REFERENCE: dict[str, dict[str, str]] = {
    # The reference leaves the MI325X link empty ("per-link BW not confirmed"). S23/S24: AMD lists the same
    # 128 GB/s peak per Infinity Fabric link for MI300X and MI325X, in the same 7-link 8-GPU mesh, so the
    # MI325X gets the MI300X's 7 x 128 = 896? GB/s (same arithmetic, same uncertainty) instead of PCIe.
    "mi325x": {"scaleup_bw_per_gpu_GBps_bidir": "896?", "sources": "S14;S15;S16;S23;S24"},
}
# The totals the CUDA/ROCm runtime reports (gpus.toml memory_runtime_bytes), which the planner budgets against
# in place of the reference table's usable figure; each with where it was reported (gpus.toml names repo@commit
# and path). The lowest report that names the GPU model is taken.
RUNTIME_TOTALS: dict[str, int] = {
    "h100-sxm": 85_017_624_576,  # 79.18 GiB: prime-rl's 1- and 8-GPU H100 80GB HBM3 baselines (79.21 in a deviceQuery)
    "a100-80gb-sxm": 85_100_068_864,  # 79.26 GiB: deviceQuery on A100-SXM4-80GB (thamada/nvidia-smi)
    "h200": 150_109_880_320,  # 139.80 GiB: our run, benchmarks/device/h200_2026-12-04.json
    "b200": 191_503_138_816,  # 178.35 GiB: prime-rl's 8 x B200 baseline
    "l40s": 47_803_596_800,  # 44.52 GiB: deviceQuery on an L40S, ECC on (thamada/nvidia-smi)
    "mi300x": 206_141_652_992,  # 196,592 MiB: HIP device properties of an MI300X (thamada/nvidia-smi)
    "l4": 23_570_219_008,  # 21.95 GiB: deviceQuery on an L4, ECC on (thamada/nvidia-smi gls/L4_deviceQuery.py)
    "h100-nvl": 99_861_594_112,  # 93.00 GiB: deviceQuery on 2 x H100 NVL (thamada/nvidia-smi gls/H100NVLx2_deviceQuery.py)
    "rtx-4090": 25_386_352_640,  # 23.64 GiB: deviceQuery on 8 x RTX 4090 (thamada/nvidia-smi gls/RTX4090_deviceQuery.py)
    "rtx-5090": 33_677_115_392,  # 32,117 MiB, the lower edge of vLLM's rounded '31.37GiB' (vllm-project/vllm#14452)
    "b300": 287_386_370_048,  # 274,073 MiB, the lower edge of torch's rounded '267.7 GiB' (sgl-project/sglang#25225)
    "a100-40gb-sxm": 42_298_834_944,  # 39.39 GiB: deviceQuery on 8 x A100-SXM4-40GB (bottlerocket-os/bottlerocket#3873)
    "h100-pcie": 84_942_979_072,  # 79.11 GiB: XLA's H100 PCIe device description (openxla/xla specs/h100_pcie.txtpb)
    "gb200": 197_897_748_480,  # 184.31 GiB: XLA's GB200 device description (openxla/xla specs/gb200.txtpb)
    "gb300": 297_021_079_552,  # 276.62 GiB: XLA's GB300 device description (openxla/xla specs/gb300.txtpb)
    "rtx-pro-6000": 101_967_724_544,  # 97,244 MiB, the lower edge of ds4's rounded 'total=94.97 GiB' (antirez/ds4#431)
    "mi325x": 274_861_129_728,  # 262,128 MiB: rocminfo GPU pool on MI325X (ROCm/rocm-systems#8263)
    "mi355x": 309_220_868_096,  # 294,896 MiB: rocminfo GPU pool on MI355X (ROCm/rocm-libraries#9055)
    "a10g": 23_605_542_912,  # 22,512 MiB, the lower edge of torch's rounded '21.99 GiB' on 8 x A10G (philschmid/...#49)
    "h20": 102_010_716_160,  # 97,285 MiB, the lower edge of torch's floored 'total_memory=97285MB' on an NVIDIA H20
    # (alipay/PainlessInferenceAcceleration flood/flood/ops/seg_attn.py)
}
DEVICE_RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "device"
CSV_PEAK_COLUMNS = {
    "fp64_vector_tflops": "fp64_vector",
    "fp64_tensor_tflops": "fp64_tensor",
    "fp32_nontensor_tflops": "fp32",
    "tf32_tensor_dense_tflops": "tf32",
    "bf16_fp16_tensor_dense_tflops": "bf16",
    "fp8_tensor_dense_tflops": "fp8",
    "int8_tensor_dense_tops": "int8",
    "fp4_tensor_dense_tflops": "fp4",
}


def reference_rows() -> list[dict[str, str]]:
    with REFERENCE_CSV.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def cell(text: str) -> tuple[float | None, bool]:
    """(value, uncertain) of a reference cell: '154?' -> (154.0, True); '' -> (None, False)."""
    text = text.strip()
    if not text:
        return None, False
    uncertain = text.endswith("?")
    return float(text.rstrip("?")), uncertain


def test_the_shipped_data_loads_and_validates() -> None:
    gpus = load_shipped_gpus()
    assert len(gpus) == len({g.name for g in gpus}) >= 17


@pytest.mark.parametrize(
    "name",
    [
        "a100-80gb-sxm", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "b300", "gb200", "l40s", "l4",
        "rtx-pro-6000", "rtx-5090", "rtx-4090", "mi300x", "mi325x", "mi355x", "a10g",
    ],
)
def test_every_gpu_the_issue_names_is_shipped(name: str) -> None:
    assert get_gpu(name).name == name


def test_the_cells_we_fill_beyond_the_reference_are_empty_there() -> None:
    rows = {CSV_ROWS[row["gpu"]]: row for row in reference_rows()}
    for name, cells in BEYOND_REFERENCE.items():
        for column, ours in cells.items():
            theirs = rows[name][column]
            assert theirs != ours, (name, column)
            assert column == "sources" or not theirs, (name, column, theirs)  # we only fill gaps
            if column == "sources":
                assert ours.split(";")[: len(theirs.split(";"))] == theirs.split(";")  # and only add sources


def test_a_runtime_total_is_what_its_report_says_and_a_little_under_the_vendors_figure() -> None:
    measured = json.loads((DEVICE_RUNS / "h200_2026-12-04.json").read_text())["meta"]
    assert measured["gpu"] == "NVIDIA H200" and measured["memory_bytes"] == RUNTIME_TOTALS["h200"]
    assert {g.name for g in list_gpus() if g.memory_is_runtime} == set(RUNTIME_TOTALS)
    for name, total in RUNTIME_TOTALS.items():
        gpu = get_gpu(name)
        assert gpu.memory_bytes == total and gpu.memory_runtime_sources, name
        assert gpu.memory_nominal_bytes is not None
        # the driver keeps back about 1 % (HBM) and up to 9 % with ECC on GDDR6 (L40S 44.52 of 48, L4 21.95 of 24)
        assert 0.9 * gpu.memory_nominal_bytes < total < gpu.memory_nominal_bytes, name
    for gpu in list_gpus():
        if not gpu.memory_is_runtime:  # no sourced runtime total: the vendor's usable figure, as before
            assert gpu.memory_nominal_bytes is None and not gpu.memory_runtime_sources


# The totals nvidia-smi --query-gpu=memory.total reports (rocminfo's GPU pool on AMD), MiB: what SGLang sizes its
# tiers and mem_fraction_static by (gpus.toml memory_smi_sources names each report)
SMI_TOTALS_MIB: dict[str, int] = {
    "h100-sxm": 81_559,  # nvidia-smi on 8 x H100 80GB HBM3 (thamada/nvidia-smi nvsim/H100SXMx8_smi.py)
    "a100-80gb-sxm": 81_920,  # 4 x A100-SXM4-80GB (thamada/nvidia-smi gls/A100SXMx4_smi.py)
    "h200": 143_771,  # our run, benchmarks/device/h200_2026-12-04.json
    "b200": 183_359,  # 8 x B200 (modal-labs/gpu-glossary nvidia-smi.md)
    "l40s": 46_068,  # one L40S (thamada/nvidia-smi nvsim/L40S_smi.py)
    "mi300x": 196_592,  # rocminfo Pool 1, 201,310,208 KB (thamada/nvidia-smi nvsim/MI300X_x4_rocminfo.py)
    "l4": 23_034,  # one L4 (thamada/nvidia-smi gls/L4_smi.py)
    "h100-nvl": 95_830,  # 2 x H100 NVL (thamada/nvidia-smi nvsim/H100NVLx2_smi.py)
    "rtx-4090": 24_564,  # 8 x RTX 4090 (thamada/nvidia-smi package/RTX4090_smi.py)
    "rtx-5090": 32_607,  # one RTX 5090, driver 610.88 (nibor1896/Crow#105)
    "a100-40gb-sxm": 40_960,  # A100-SXM4-40GB, driver 580.126.09 (bottlerocket-os/bottlerocket-core-kit#834)
    "rtx-pro-6000": 97_887,  # '93128MiB on my 97887MiB' (antirez/ds4#431)
    "mi325x": 262_128,  # rocminfo GPU pool 268,419,072 KB (ROCm/rocm-systems#8263)
    "mi355x": 294_896,  # rocminfo GPU pool 301,973,504 KB (ROCm/rocm-libraries#9055)
    "a10g": 23_028,  # NVIDIA A10G, driver 535.247.01 (NVIDIA/DCGM#232)
}


def test_a_tool_total_is_what_its_report_says_and_at_least_the_runtime_total() -> None:
    measured = json.loads((DEVICE_RUNS / "h200_2026-12-04.json").read_text())["meta"]
    assert f"{SMI_TOTALS_MIB['h200']} MiB" in measured["nvidia_smi"]
    assert {g.name for g in list_gpus() if g.memory_smi_mib is not None} == set(SMI_TOTALS_MIB)
    for name, mib in SMI_TOTALS_MIB.items():
        gpu = get_gpu(name)
        assert gpu.memory_smi_mib == mib and gpu.memory_smi_sources, name
        # nvidia-smi counts what the driver keeps back from CUDA (H100: 81,559 MiB vs 81,079; L4 with ECC on: 23,034
        # vs 22,478, its 'Reserved 556 MiB' in the same report); ROCm reports the pool
        assert gpu.memory_bytes <= mib * 2**20 <= gpu.memory_bytes * 1.03, name


def test_no_sourced_total_is_above_the_vendor_figure_and_no_tool_total_is_below_the_runtime_total() -> None:
    # Every shipped GPU, not only the tables above: a runtime total is what the driver leaves of the vendor's usable
    # figure, so it is at most that figure (and the physical memory); nvidia-smi / rocminfo count what the driver
    # keeps back, so their total is at least the runtime total and at most the physical memory.
    runtime_gpus = [gpu for gpu in list_gpus() if gpu.memory_is_runtime]
    # the six of stop 45, L4, H100 NVL, RTX 4090, RTX 5090, B300, then A100 40GB, H100 PCIe, GB200, GB300, RTX PRO 6000,
    # MI325X, MI355X, A10G, H20; only H800 and MI250X keep the vendor's figure
    assert len(runtime_gpus) >= 20
    assert {gpu.name for gpu in list_gpus() if not gpu.memory_is_runtime} <= {"h800", "mi250x"}
    for gpu in runtime_gpus:
        assert gpu.memory_nominal_bytes is not None, gpu.name
        assert gpu.memory_bytes <= gpu.memory_nominal_bytes <= gpu.memory_physical_bytes, gpu.name
    for gpu in list_gpus():
        if gpu.memory_smi_mib is None:
            continue
        assert gpu.memory_is_runtime, f"{gpu.name}: an nvidia-smi total without the runtime total it sits above"
        assert gpu.memory_bytes <= gpu.memory_smi_mib * 2**20 <= gpu.memory_physical_bytes, gpu.name


def test_every_reference_row_is_shipped_under_a_known_name() -> None:
    labels = {row["gpu"] for row in reference_rows()}
    assert labels == set(CSV_ROWS)
    assert {g.name for g in list_gpus()} >= set(CSV_ROWS.values())


@pytest.mark.parametrize("row", reference_rows(), ids=lambda row: CSV_ROWS[row["gpu"]])
def test_every_figure_matches_the_reference_table_cell_by_cell(row: dict[str, str]) -> None:
    gpu = get_gpu(CSV_ROWS[row["gpu"]])
    row = {**row, **BEYOND_REFERENCE.get(gpu.name, {})}
    # memory: headline (physical) and platform/usable figures, read as GiB; the planner's budget is the runtime's
    # total where one is sourced (RUNTIME_TOTALS), the usable figure elsewhere
    assert gpu.memory_physical_bytes == cell(row["memory_gb_headline"])[0] * GIB  # type: ignore[operator]
    usable = round(cell(row["memory_gb_platform_or_usable"])[0] * GIB)  # type: ignore[operator]
    assert (gpu.memory_nominal_bytes or gpu.memory_bytes) == usable
    assert gpu.memory_bytes == RUNTIME_TOTALS.get(gpu.name, usable)
    assert gpu.memory_headline == f"{row['memory_gb_headline']} GB"
    assert gpu.memory_type == row["memory_type"]
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(float(row["mem_bw_TBps"]) * 1e12)
    for column, key in CSV_PEAK_COLUMNS.items():
        value, uncertain = cell(row[column])
        peak = gpu.peaks[key]
        if value is None:
            assert peak.status in ("absent", "unknown"), (column, peak)
            assert peak.flops_per_s is None
        else:
            assert peak.status == "known", (column, peak)
            assert peak.flops_per_s == pytest.approx(value * 1e12), column
            assert peak.uncertain is uncertain, column
    assert gpu.fp8_hardware is row["fp8_hw_support"].startswith("yes")
    assert gpu.fp4_hardware is row["fp4_hw_support"].startswith("yes")
    link, link_uncertain = cell(row["scaleup_bw_per_gpu_GBps_bidir"])
    if link is None:
        assert gpu.interconnect_bandwidth_bytes_per_s is None
    else:
        assert gpu.interconnect_bandwidth_bytes_per_s == pytest.approx(link * 1e9)
        assert ("interconnect_bandwidth_gb_per_s" in gpu.uncertain_fields) is link_uncertain
    tdp, _ = cell(row["tdp_w"])
    assert gpu.tdp_w == (None if tdp is None else int(tdp))
    pcie, _ = cell(row["pcie_bw_GBps_bidir"])
    assert gpu.pcie_bandwidth_bytes_per_s == (None if pcie is None else pytest.approx(pcie * 1e9))
    assert gpu.pcie_gen == row["pcie_gen"].rstrip("?")
    assert gpu.compute_capability == (row["cuda_compute_capability"].rstrip("?") or None)
    assert gpu.rocm_gfx_target == (row["rocm_gfx_target"] or None)
    assert gpu.partitioning == row["mig_or_partitioning"]
    assert gpu.vendor == row["vendor"]
    assert gpu.architecture == row["architecture"]
    assert gpu.form_factor == row["form_factor"]
    assert gpu.interconnect.startswith(row["scaleup_interconnect"])  # "none" may say why: "none (PCIe only)"
    assert list(gpu.sources) == row["sources"].split(";")
    low, _ = cell(row["price_usd_per_gpu_hr_low"])
    high, _ = cell(row["price_usd_per_gpu_hr_high"])
    if low is None:
        assert gpu.indicative_price_usd_per_gpu_hour is None
    else:
        assert gpu.indicative_price_usd_per_gpu_hour is not None
        assert [float(p) for p in gpu.indicative_price_usd_per_gpu_hour] == [low, high]


@pytest.mark.parametrize(
    ("name", "precision", "tflops"),
    [
        ("h100-sxm", "bf16", 989),  # S2: NVIDIA H100 table 1,979 sparse -> 989 dense; S16 MAMF arithmetic 989.4
        ("h100-sxm", "fp8", 1979),  # S2: 3,958 sparse -> 1,979 dense
        ("h200", "bf16", 989),  # S4: same compute as H100 SXM
        ("a100-80gb-sxm", "bf16", 312),  # S1: A100 datasheet 312 | 624 sparse
        ("b200", "fp4", 9000),  # S5/S6: HGX B200 144 | 72 PF dense per 8 GPUs -> 9,000 per GPU
        ("b300", "bf16", 2250),  # S5: Blackwell Ultra datasheet BF16 4.5 PF sparse -> 2,250 dense
        ("gb200", "bf16", 2500),  # S7: GB200 NVL72 per-GPU BF16 5 PF sparse
        ("l40s", "bf16", 362),  # S8: L40S datasheet 362.05 | 733 sparse
        ("mi300x", "bf16", 1307.4),  # S14: AMD dense figure
        ("mi355x", "fp8", 5000),  # S14/S18: OCP-FP8 5 PF dense (10.1 PF is with sparsity)
        ("mi355x", "fp4", 10100),  # S14: MXFP4 10.1 PF (no sparsity line)
        ("l4", "fp8", 242.5),  # S9: L4 datasheet 485 sparse
        ("rtx-4090", "int8", 660.6),  # S12: Ada whitepaper values
    ],
)
def test_anchor_peaks_match_their_published_sources(name: str, precision: str, tflops: float) -> None:
    assert get_gpu(name).peak_flops_per_s(precision) == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize(
    ("name", "tb_per_s"),
    [
        ("h100-sxm", 3.35),  # S2: NVIDIA H100 SXM 3.35 TB/s
        ("h200", 4.8),  # S4: NVIDIA H200 4.8 TB/s
        ("b200", 8.0),  # S6: DGX B200 64 TB/s over 8 GPUs (the HGX sheet says 7.7)
        ("mi300x", 5.3),  # S14: AMD MI300X 5.3 TB/s
        ("rtx-pro-6000", 1.597),  # S13: Server Edition 1,597 GB/s (1,792 is the Workstation Edition)
    ],
)
def test_anchor_bandwidths_match_their_published_sources(name: str, tb_per_s: float) -> None:
    assert get_gpu(name).memory_bandwidth_bytes_per_s == pytest.approx(tb_per_s * 1e12)


@pytest.mark.parametrize(
    ("name", "budget_gib", "usable_gib", "headline"),
    [
        ("mi300x", 191.98, 192, "192 GB"),  # S14/S15: AMD 192 GB, ROCm table 192 GiB; HIP reports 196,592 MiB
        ("mi325x", 255.98, 256, "256 GB"),  # S15: 256 GiB (a catalog's 288 is wrong); rocminfo 262,128 MiB (rocm-systems#8263)
        ("h100-sxm", 79.18, 80, "80 GB"),  # S2: 80 GB; CUDA reports 79.18 GiB (prime-rl's H100 baselines)
        ("h200", 139.80, 141, "141 GB"),  # S4: 141 GB; CUDA 139.80 GiB (measured: benchmarks/device/h200_2026-12-04.json)
        ("b200", 178.35, 180, "192 GB"),  # S5/S6: 180 GB on the platform, 192 physical; CUDA 178.35 (prime-rl)
        ("b300", 267.65, 270, "288 GB"),  # S5: 270 GB HGX, 288 physical; torch 267.7 GiB (sgl-project/sglang#25225)
        ("gb200", 184.31, 186, "192 GB"),  # S7/S11: 186 GB per GPU; CUDA 184.31 GiB (XLA's gb200.txtpb)
        ("h800", 80, 80, "80 GB"),  # S25: 80 GB; no runtime total sourced, so the budget is the vendor's figure
    ],
)
def test_memory_budgets_on_the_runtime_total_and_keeps_the_usable_figure_and_headline(
    name: str, budget_gib: float, usable_gib: float, headline: str
) -> None:
    gpu = get_gpu(name)
    assert gpu.memory_bytes / GIB == pytest.approx(budget_gib, abs=0.005)
    assert (gpu.memory_nominal_bytes or gpu.memory_bytes) == round(usable_gib * GIB)
    assert gpu.memory_headline == headline
    assert gpu.memory_unit == "GiB"
    assert gpu.memory_physical_bytes is not None and gpu.memory_physical_bytes >= gpu.memory_bytes


def test_absent_in_hardware_is_not_the_same_as_unknown() -> None:
    assert get_gpu("a100").peaks["fp8"].status == "absent"  # Ampere has no FP8 tensor cores (S1, gpu_specs.md)
    assert get_gpu("h100").peaks["fp4"].status == "absent"  # FP4 arrived with Blackwell
    assert get_gpu("mi300x").peaks["fp4"].status == "absent"  # FP4 arrived with CDNA4
    assert get_gpu("l40s").peaks["fp64_tensor"].status == "absent"  # gpu_specs.md table 2: n/a
    assert get_gpu("rtx-pro-6000").peaks["fp64"].status == "unknown"  # no usable source (empty cell)
    assert get_gpu("mi355x").peaks["tf32"].status == "unknown"  # "not published" by AMD
    assert get_gpu("l4").peaks["fp64"].status == "unknown"


def test_values_the_reference_marks_with_a_question_mark_stay_uncertain() -> None:
    b300 = get_gpu("b300")
    assert b300.peaks["fp4"].uncertain and b300.peaks["fp4"].flops_per_s == pytest.approx(14000e12)
    assert b300.peaks["int8"].uncertain and not b300.peaks["bf16"].uncertain
    assert get_gpu("rtx-pro-6000").peaks["bf16"].uncertain
    assert "interconnect_bandwidth_gb_per_s" in get_gpu("mi300x").uncertain_fields  # 896? GB/s
    a10g = get_gpu("a10g")
    assert {"compute_capability", "pcie_gen"} <= set(a10g.uncertain_fields)  # 8.6? and Gen4 x16?
    assert a10g.compute_capability == "8.6" and a10g.is_uncertain
    assert not get_gpu("h100-sxm").is_uncertain


def test_fp64_headline_is_the_tensor_figure_or_else_the_vector_one() -> None:
    assert get_gpu("h100").peaks["fp64"].flops_per_s == pytest.approx(67e12)  # tensor 67 > vector 34
    l40s = get_gpu("l40s").peaks["fp64"]  # no FP64 tensor cores: the (uncertain) vector figure
    assert l40s.status == "known" and l40s.uncertain and l40s.flops_per_s == pytest.approx(1.43e12)


def test_every_gpu_has_every_precision_and_a_consistent_hardware_flag() -> None:
    for gpu in list_gpus():
        assert set(PRECISIONS) <= set(gpu.peaks), gpu.name
        assert (gpu.peaks["fp8"].status == "absent") is (not gpu.fp8_hardware), gpu.name
        assert (gpu.peaks["fp4"].status == "absent") is (not gpu.fp4_hardware), gpu.name
        for peak in gpu.peaks.values():
            assert (peak.flops_per_s is not None) is (peak.status == "known")


def test_software_stack_follows_the_vendor_with_its_target() -> None:
    assert get_gpu("mi355x").software_stack == "rocm" and get_gpu("mi355x").rocm_gfx_target == "gfx950"  # S15
    assert get_gpu("b300").software_stack == "cuda" and get_gpu("b300").compute_capability == "10.3"  # S10


def test_every_source_key_is_described() -> None:
    for gpu in list_gpus():
        for key, text in source_descriptions(gpu.sources).items():
            assert text != "(unknown source key)", (gpu.name, key)


def test_the_gpu_list_is_cached() -> None:
    assert list_gpus() is list_gpus()
