"""GPU data of issue 11 (item 7): every multi-GPU module has a scale-up link, and the GPUs added then
(H800, H20, A100 40GB SXM, GB300, MI250X) load with their published figures and resolve by their aliases.

Source keys (S#) are explained in ``hardware/data/sources.toml``; each expected figure names its source.
A value marked ``?`` in ``gpus.toml`` (secondary source only, or sources conflict) must stay uncertain.
"""

from __future__ import annotations

import pytest

from anchorgpu.hardware import get_gpu, list_gpus
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.units import GIB

MODULE_FORM_FACTORS = ("SXM", "OAM", "Superchip")  # SXM4/SXM5/HGX boards, OCP accelerator modules, Grace superchips
NEW_GPUS = ("h800", "h20", "a100-40gb-sxm", "gb300", "mi250x")


def _is_module(gpu: GpuSpec) -> bool:
    return any(kind in gpu.form_factor for kind in MODULE_FORM_FACTORS)


def test_every_module_part_and_every_multi_gpu_domain_has_a_scale_up_link() -> None:
    """Tensor parallelism on an SXM/OAM part must never fall back to PCIe for want of a figure."""
    checked = [gpu for gpu in list_gpus() if _is_module(gpu) or gpu.scaleup_domain_gpus > 2]
    assert {"mi300x", "mi325x", "mi355x", "mi250x", "h800", "h20", "gb200", "gb300"} <= {g.name for g in checked}
    for gpu in checked:
        link = gpu.interconnect_bandwidth_bytes_per_s
        assert link is not None and link > 0, gpu.name
        assert gpu.scaleup_domain_gpus > 1, gpu.name
        if gpu.pcie_bandwidth_bytes_per_s is not None:
            assert link > gpu.pcie_bandwidth_bytes_per_s, gpu.name  # the stated link is not the PCIe one


def test_a_pcie_card_without_a_link_has_no_scale_up_bandwidth() -> None:
    for gpu in list_gpus():
        if gpu.scaleup_domain_gpus == 1:
            assert gpu.interconnect_bandwidth_bytes_per_s is None, gpu.name
            assert not _is_module(gpu), gpu.name


def test_mi325x_has_the_same_infinity_fabric_as_mi300x_not_pcie() -> None:
    mi325x, mi300x = get_gpu("mi325x"), get_gpu("mi300x")
    # S23/S24: AMD lists 128 GB/s peak per Infinity Fabric link for both; 7 links to the 7 peers of the mesh.
    assert mi325x.interconnect_bandwidth_bytes_per_s == mi300x.interconnect_bandwidth_bytes_per_s == pytest.approx(896e9)
    assert mi325x.scaleup_domain_gpus == mi300x.scaleup_domain_gpus == 8
    assert "interconnect_bandwidth_gb_per_s" in mi325x.uncertain_fields  # 7 x 128 is our arithmetic, as for MI300X
    assert {"S23", "S24"} <= set(mi325x.sources)


@pytest.mark.parametrize(
    ("name", "precision", "tflops", "uncertain"),
    [
        # H800 SXM (S25: reseller transcriptions of NVIDIA's H800 table and the Ant Group/LMSYS table agree):
        # the H100 SXM's tensor throughput (sparse 1,979 / 3,958 -> dense 989 / 1,979), FP64 cut to about 1.
        ("h800", "bf16", 989, False),
        ("h800", "fp8", 1979, False),
        ("h800", "int8", 1979, False),
        ("h800", "fp32", 67, False),
        ("h800", "fp64", 1, True),
        # H20 (S25/S26; no NVIDIA datasheet, so uncertain): 148 BF16, 296 FP8/INT8, 74 TF32, 44 FP32, all dense.
        ("h20", "bf16", 148, True),
        ("h20", "fp8", 296, True),
        ("h20", "int8", 296, True),
        ("h20", "tf32", 74, True),
        ("h20", "fp32", 44, True),
        # A100 40GB SXM (S1: A100 datasheet, 40GB column): same compute as the 80GB part.
        ("a100-40gb-sxm", "bf16", 312, False),
        ("a100-40gb-sxm", "tf32", 156, False),
        ("a100-40gb-sxm", "int8", 624, False),
        ("a100-40gb-sxm", "fp64", 19.5, False),
        # GB300 (S5/S7 Blackwell Ultra datasheet GB300 column, S17 per-GPU dense table): FP4 20|15 PF,
        # BF16 5 PF sparse -> 2,500, FP8 10 PF sparse -> 5,000, INT8 330 TOPS sparse -> 165, FP64 1.3.
        ("gb300", "fp4", 15000, False),
        ("gb300", "bf16", 2500, False),
        ("gb300", "fp8", 5000, False),
        ("gb300", "int8", 165, False),
        ("gb300", "fp64", 1.3, False),
        ("gb300", "tf32", 1250, True),  # S17 only
        # MI250X (S27: AMD's table; dense, CDNA2 has no sparsity): FP16/BF16 383, INT8 383 TOPS,
        # FP64 vector 47.9, FP64 matrix 95.7, FP32 vector 47.9.
        ("mi250x", "bf16", 383, False),
        ("mi250x", "int8", 383, False),
        ("mi250x", "fp64", 95.7, False),
        ("mi250x", "fp32", 47.9, False),
    ],
)
def test_new_gpus_carry_their_published_peaks(name: str, precision: str, tflops: float, uncertain: bool) -> None:
    peak = get_gpu(name).peaks[precision]
    assert peak.status == "known"
    assert peak.flops_per_s == pytest.approx(tflops * 1e12)
    assert peak.uncertain is uncertain


@pytest.mark.parametrize(
    ("name", "memory_gib", "physical_gib", "tb_per_s", "link_gb_per_s", "domain", "tdp_w"),
    [
        ("h800", 80, 80, 3.35, 400, 8, 700),  # S25: 80 GB HBM3, 3.35 TB/s, NVLink cut to 400 GB/s, 700 W
        ("h20", 96, 96, 4.0, 900, 8, 400),  # S25/S26: 96 GB HBM3, 4.0 TB/s, full 900 GB/s NVLink, 400 W
        ("a100-40gb-sxm", 40, 40, 1.555, 600, 8, 400),  # S1: 40 GB HBM2, 1,555 GB/s, NVLink 600 GB/s, 400 W
        ("gb300", 279, 288, 8.0, 1800, 72, 1400),  # S5/S7: 279 GB of 288 physical, 8 TB/s, NVLink 5 in NVL72
        ("mi250x", 128, 128, 3.2, 800, 4, 560),  # S27: 128 GB HBM2e, 3.2 TB/s, 8 IF links x 100 GB/s, 560 W
    ],
)
def test_new_gpus_carry_their_published_memory_links_and_power(
    name: str, memory_gib: int, physical_gib: int, tb_per_s: float, link_gb_per_s: int, domain: int, tdp_w: int
) -> None:
    gpu = get_gpu(name)
    # the vendor's figure; where a runtime total is sourced (A100 40GB, GB300, H20) the budget is that, a little under it
    assert (gpu.memory_nominal_bytes or gpu.memory_bytes) == memory_gib * GIB
    assert gpu.memory_bytes <= memory_gib * GIB
    assert gpu.memory_physical_bytes == physical_gib * GIB
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(tb_per_s * 1e12)
    assert gpu.interconnect_bandwidth_bytes_per_s == pytest.approx(link_gb_per_s * 1e9)
    assert gpu.scaleup_domain_gpus == domain
    assert gpu.tdp_w == tdp_w


def test_new_gpus_have_the_hardware_flags_and_targets_of_their_generation() -> None:
    for name in ("h800", "h20"):  # Hopper: FP8, no FP4, CUDA 9.0
        gpu = get_gpu(name)
        assert gpu.fp8_hardware and not gpu.fp4_hardware and gpu.compute_capability == "9.0", name
        assert gpu.peaks["fp4"].status == "absent"
    a100 = get_gpu("a100-40gb-sxm")  # Ampere: no FP8 (S1), CUDA 8.0 (S10)
    assert not a100.fp8_hardware and a100.peaks["fp8"].status == "absent" and a100.compute_capability == "8.0"
    gb300 = get_gpu("gb300")  # Blackwell Ultra: NVFP4/MXFP4, CUDA 10.3 (S10)
    assert gb300.fp4_hardware and gb300.fp4_formats == ("NVFP4", "MXFP4") and gb300.compute_capability == "10.3"
    mi250x = get_gpu("mi250x")  # CDNA2: no TF32, FP8 or FP4; gfx90a (S15); ROCm
    assert mi250x.software_stack == "rocm" and mi250x.rocm_gfx_target == "gfx90a"
    assert not mi250x.fp8_hardware and not mi250x.fp4_hardware
    assert {mi250x.peaks[p].status for p in ("tf32", "fp8", "fp4")} == {"absent"}


def test_h20_figures_without_a_vendor_datasheet_stay_uncertain() -> None:
    h20 = get_gpu("h20")
    assert {"memory_bandwidth_tb_per_s", "interconnect_bandwidth_gb_per_s", "tdp_w"} <= set(h20.uncertain_fields)
    assert h20.peaks["fp64_tensor"].status == "unknown"  # not published
    assert h20.is_uncertain


def test_mi250x_is_counted_as_one_package_of_two_gcds() -> None:
    gpu = get_gpu("mi250x")
    assert gpu.memory_bytes == 128 * GIB  # the datasheet's figure for the package, not 64 GB per GCD
    assert "2 GCDs" in gpu.architecture and "GCD" in gpu.partitioning and "two devices" in gpu.notes


def test_the_gb300_is_a_separate_row_from_the_hgx_b300() -> None:
    gb300, b300 = get_gpu("gb300"), get_gpu("b300")
    assert gb300 is not b300 and gb300.name == "gb300"
    gb300_fp4, b300_fp4 = gb300.peak_flops_per_s("fp4"), b300.peak_flops_per_s("fp4")
    assert gb300_fp4 is not None and b300_fp4 is not None and gb300_fp4 > b300_fp4  # 15 vs 14? PF dense
    assert gb300.memory_bytes > b300.memory_bytes and gb300.tdp_w == 1400


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("h800", "h800"),
        ("H800 SXM", "h800"),
        ("h800-sxm5", "h800"),
        ("NVIDIA H800", "h800"),
        ("h20", "h20"),
        ("HGX H20", "h20"),
        ("NVIDIA H20", "h20"),
        ("a100-40gb", "a100-40gb-sxm"),
        ("a100 40gb", "a100-40gb-sxm"),
        ("A100-SXM4-40GB", "a100-40gb-sxm"),  # nvidia-smi's name
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("gb300", "gb300"),
        ("GB300 NVL72", "gb300"),
        ("mi250x", "mi250x"),
        ("AMD Instinct MI250X", "mi250x"),
    ],
)
def test_aliases_of_the_new_gpus_resolve(typed: str, canonical: str) -> None:
    assert get_gpu(typed).name == canonical


def test_existing_names_still_mean_what_they_meant() -> None:
    assert get_gpu("a100").name == "a100-80gb-sxm"  # the bare A100 stays the 80 GB part
    assert get_gpu("h200").name == "h200" and get_gpu("b300").name == "b300"
    assert get_gpu("Blackwell Ultra").name == "b300"  # not the GB300


def test_every_new_gpu_names_known_sources() -> None:
    from anchorgpu.hardware import source_descriptions

    for name in NEW_GPUS:
        gpu = get_gpu(name)
        assert gpu.sources, name
        assert "(unknown source key)" not in source_descriptions(gpu.sources).values(), name
