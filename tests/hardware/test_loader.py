"""The loader refuses bad data with one line naming the file and the row, and accepts a minimal good file."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.errors import DataFileError
from anchorgpu.hardware import parse_gpus, parse_sources
from anchorgpu.units import GB, GIB

SOURCES = {"S1": "a datasheet", "P1": "a price page"}

GOOD_ROW = """
[[gpu]]
name = "test-gpu"
display_name = "Test GPU 80GB"
aliases = ["tg", "Test-GPU-80GB"]
vendor = "NVIDIA"
architecture = "Testwell"
form_factor = "SXM"
memory_headline = "80 GB"
memory_physical = 80
memory_usable = 76
memory_unit = "GiB"
memory_type = "HBM3"
memory_bandwidth_tb_per_s = 3.35
fp8_hardware = true
fp4_hardware = false
fp4_formats = []
interconnect = "NVLink 4"
interconnect_bandwidth_gb_per_s = "900?"
scaleup_domain_gpus = 8
tdp_w = 700
pcie_gen = "Gen5 x16"
pcie_bandwidth_gb_per_s = 128
compute_capability = "9.0"
partitioning = "MIG up to 7"
indicative_price_usd_per_gpu_hour = ["2.50", "3.10?"]
indicative_price_observed = "2026-09-25"
sources = ["S1", "P1"]
notes = "made up for a test"
[gpu.peaks_tflops]
fp64_vector = 34
fp64_tensor = 67
fp32 = 67
tf32 = 494.5
bf16 = 989
fp8 = "1979?"
int8 = "unknown"
fp4 = "absent"
"""


def good_file(row: str = GOOD_ROW, *, rows: int = 1) -> str:
    return "schema_version = 1\n" + row * rows


def broken(old: str, new: str) -> str:
    assert old in GOOD_ROW, old
    return good_file(GOOD_ROW.replace(old, new, 1))


def test_a_minimal_good_file_loads_with_units_converted() -> None:
    (gpu,) = parse_gpus(good_file(), file="test.toml", sources=SOURCES)
    assert gpu.name == "test-gpu"
    assert gpu.memory_bytes == 76 * GIB and gpu.memory_physical_bytes == 80 * GIB
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert gpu.interconnect_bandwidth_bytes_per_s == pytest.approx(900 * GB)
    assert gpu.peaks["bf16"].status == "known" and gpu.peaks["bf16"].flops_per_s == pytest.approx(989e12)
    assert gpu.peaks["fp8"].uncertain and gpu.peaks["int8"].status == "unknown" and gpu.peaks["fp4"].status == "absent"
    assert set(gpu.uncertain_fields) == {"interconnect_bandwidth_gb_per_s", "indicative_price_usd_per_gpu_hour"}
    assert [str(p) for p in gpu.indicative_price_usd_per_gpu_hour or ()] == ["2.50", "3.10"]


def test_memory_in_decimal_gb_is_read_as_decimal() -> None:
    (gpu,) = parse_gpus(broken('memory_unit = "GiB"', 'memory_unit = "GB"'), file="t.toml", sources=SOURCES)
    assert gpu.memory_bytes == 76 * GB


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ('memory_bandwidth_tb_per_s = 3.35', 'memory_bandwidth_tb_per_s = -3.35', "memory_bandwidth_tb_per_s must be a positive number"),
        ('memory_bandwidth_tb_per_s = 3.35', 'memory_bandwidth_tb_per_s = 0', "memory_bandwidth_tb_per_s must be a positive number"),
        ('memory_bandwidth_tb_per_s = 3.35', 'memory_bandwidth_tb_per_s = "fast"', "memory_bandwidth_tb_per_s must be a number"),
        ('memory_bandwidth_tb_per_s = 3.35\n', '', "missing required field 'memory_bandwidth_tb_per_s'"),
        ('memory_unit = "GiB"', 'memory_unit = "MB"', "memory_unit must be 'GB' or 'GiB'"),
        ('memory_usable = 76', 'memory_usable = 96', "memory_usable is larger than memory_physical"),
        ('vendor = "NVIDIA"', 'vendor = "Intel"', "vendor must be 'NVIDIA' or 'AMD'"),
        ('name = "test-gpu"', 'name = "Test GPU"', "must be lower-case letters and digits"),
        ('bf16 = 989', 'bf16 = "lots"', "peaks_tflops.bf16 must be a number, 'N?', 'absent' or 'unknown'"),
        ('bf16 = 989\n', '', "peaks_tflops is missing bf16"),
        ('bf16 = 989', 'bf16 = 989\nbf17 = 1', "peaks_tflops has unknown keys bf17"),
        ('fp4 = "absent"', 'fp4 = 10', "fp4_hardware is false, so peaks_tflops.fp4 must be 'absent'"),
        ('fp8 = "1979?"', 'fp8 = "absent"', "fp8_hardware is true but peaks_tflops.fp8 is 'absent'"),
        ('fp4_formats = []', 'fp4_formats = ["NVFP4"]', "fp4_formats must list the FP4 formats exactly when"),
        ('compute_capability = "9.0"', 'compute_capability = "nine"', "compute_capability must look like '9.0'"),
        ('compute_capability = "9.0"\n', '', "an NVIDIA GPU needs compute_capability"),
        ('compute_capability = "9.0"', 'compute_capability = "9.0"\nrocm_gfx_target = "gfx942"', "an NVIDIA GPU needs compute_capability and no rocm_gfx_target"),
        ('sources = ["S1", "P1"]', 'sources = ["S1", "S99"]', "unknown source key(s) S99"),
        ('sources = ["S1", "P1"]', 'sources = []', "sources must name at least one source"),
        ('tdp_w = 700', 'tdp_w = 700.5', "tdp_w must be whole watts"),
        ('tdp_w = 700', 'tdp_w = true', "tdp_w must be a number"),
        ('scaleup_domain_gpus = 8', 'scaleup_domain_gpus = 0', "scaleup_domain_gpus must be at least 1"),
        ('interconnect_bandwidth_gb_per_s = "900?"', 'interconnect_bandwidth_gb_per_s = "900 maybe"', "must be a number or a string like '12.5?'"),
        ('indicative_price_usd_per_gpu_hour = ["2.50", "3.10?"]', 'indicative_price_usd_per_gpu_hour = [2.5, 3.1]', "must be a list of two strings"),
        ('indicative_price_usd_per_gpu_hour = ["2.50", "3.10?"]', 'indicative_price_usd_per_gpu_hour = ["4.00", "3.10"]', "low 4.00 is above high 3.10"),
        ('indicative_price_usd_per_gpu_hour = ["2.50", "3.10?"]', 'indicative_price_usd_per_gpu_hour = ["free", "3.10"]', "must hold decimal USD amounts"),
        ('notes = "made up for a test"', 'notes = "x"\nspeed = "fast"', "unknown field(s) speed"),
        ('aliases = ["tg", "Test-GPU-80GB"]', 'aliases = ["tg", ""]', "aliases must be a list of non-empty strings"),
    ],
)
def test_a_broken_field_names_the_file_the_row_and_the_reason(old: str, new: str, reason: str) -> None:
    with pytest.raises(DataFileError) as info:
        parse_gpus(broken(old, new), file="gpus-under-test.toml", sources=SOURCES)
    message = info.value.message
    assert message.startswith("gpus-under-test.toml, row 1"), message
    assert reason in message, message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_the_row_number_points_at_the_bad_row_not_the_first() -> None:
    second = GOOD_ROW.replace('name = "test-gpu"', 'name = "second-gpu"').replace('aliases = ["tg", "Test-GPU-80GB"]', "aliases = []")
    second = second.replace('display_name = "Test GPU 80GB"', 'display_name = "Second"').replace("tdp_w = 700", "tdp_w = -1")
    with pytest.raises(DataFileError) as info:
        parse_gpus(good_file() + second, file="g.toml", sources=SOURCES)
    assert info.value.row == "2 (second-gpu)"
    assert info.value.file == "g.toml"


def test_an_alias_that_names_two_gpus_is_refused() -> None:
    second = GOOD_ROW.replace('name = "test-gpu"', 'name = "other-gpu"').replace('display_name = "Test GPU 80GB"', 'display_name = "Other"')
    second = second.replace('aliases = ["tg", "Test-GPU-80GB"]', 'aliases = ["T G"]')  # normalizes to "tg"
    with pytest.raises(DataFileError, match=re.escape("g.toml, row 2 (other-gpu): name or alias 'T G' already names GPU 'test-gpu'")):
        parse_gpus(good_file() + second, file="g.toml", sources=SOURCES)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("schema_version = 1\n[[gpu]\nname = 1", "g.toml, row ?: not valid TOML"),
        ("schema_version = 2\n", "g.toml, row header: schema_version must be 1"),
        ("schema_version = 1\n", "g.toml, row header: no [[gpu]] tables found"),
    ],
)
def test_a_broken_file_is_refused_as_a_whole(text: str, where: str) -> None:
    with pytest.raises(DataFileError) as info:
        parse_gpus(text, file="g.toml", sources=SOURCES)
    assert info.value.message.startswith(where), info.value.message


def test_the_source_table_is_validated_too() -> None:
    with pytest.raises(DataFileError, match=r"s\.toml, row X1: source keys are S<n>"):
        parse_sources('schema_version = 1\n[sources]\nX1 = "what"\n', file="s.toml")
    with pytest.raises(DataFileError, match=r"s\.toml, row S1: the description must be a non-empty string"):
        parse_sources('schema_version = 1\n[sources]\nS1 = ""\n', file="s.toml")


@settings(max_examples=60, deadline=None)
@given(
    tflops=st.floats(min_value=0.01, max_value=1e6, allow_nan=False, allow_infinity=False),
    uncertain=st.booleans(),
    bandwidth=st.floats(min_value=0.01, max_value=100, allow_nan=False, allow_infinity=False),
    memory=st.integers(min_value=1, max_value=4096),
)
def test_any_positive_figure_round_trips_with_its_unit_and_uncertainty(tflops: float, uncertain: bool, bandwidth: float, memory: int) -> None:
    bf16 = f'"{tflops!r}?"' if uncertain else repr(tflops)
    text = (
        broken("bf16 = 989", f"bf16 = {bf16}")
        .replace("memory_bandwidth_tb_per_s = 3.35", f"memory_bandwidth_tb_per_s = {bandwidth!r}")
        .replace("memory_physical = 80", f"memory_physical = {memory}")
        .replace("memory_usable = 76", f"memory_usable = {memory}")
    )
    (gpu,) = parse_gpus(text, file="t.toml", sources=SOURCES)
    assert gpu.peaks["bf16"].flops_per_s == pytest.approx(tflops * 1e12)
    assert gpu.peaks["bf16"].uncertain is uncertain
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth * 1e12)
    assert gpu.memory_bytes == memory * GIB


RUNTIME = 'memory_usable = 76\nmemory_runtime_bytes = 81000000000\nmemory_runtime_sources = ["a run"]'


def test_a_runtime_total_becomes_the_budget_and_the_usable_figure_stays_nominal() -> None:
    (gpu,) = parse_gpus(broken("memory_usable = 76", RUNTIME), file="t.toml", sources=SOURCES)
    assert gpu.memory_bytes == 81_000_000_000 and gpu.memory_nominal_bytes == 76 * GIB
    assert gpu.memory_is_runtime and gpu.memory_runtime_sources == ("a run",)
    (plain,) = parse_gpus(good_file(), file="t.toml", sources=SOURCES)
    assert not plain.memory_is_runtime and plain.memory_nominal_bytes is None and plain.memory_bytes == 76 * GIB


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ('memory_usable = 76\nmemory_runtime_bytes = 81000000000', "go together"),
        ('memory_usable = 76\nmemory_runtime_sources = ["a run"]', "go together"),
        (RUNTIME.replace("81000000000", "82000000000.5"), "whole number of bytes"),
        (RUNTIME.replace("81000000000", "90000000000"), "larger than memory_usable"),
        (RUNTIME.replace('["a run"]', "[]"), "must name where"),
    ],
)
def test_a_runtime_total_is_refused_with_the_reason(new: str, reason: str) -> None:
    with pytest.raises(DataFileError, match=reason):
        parse_gpus(broken("memory_usable = 76", new), file="t.toml", sources=SOURCES)


SMI = RUNTIME + '\nmemory_smi_mib = 77500\nmemory_smi_sources = ["nvidia-smi"]'


def test_a_tool_total_is_kept_in_mib_with_its_sources_and_is_optional() -> None:
    (gpu,) = parse_gpus(broken("memory_usable = 76", SMI), file="t.toml", sources=SOURCES)
    assert gpu.memory_smi_mib == 77_500 and gpu.memory_smi_sources == ("nvidia-smi",)
    assert gpu.memory_bytes == 81_000_000_000  # the runtime total stays the budget
    (plain,) = parse_gpus(good_file(), file="t.toml", sources=SOURCES)
    assert plain.memory_smi_mib is None and plain.memory_smi_sources == ()


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (RUNTIME + "\nmemory_smi_mib = 77500", "go together"),
        (RUNTIME + '\nmemory_smi_sources = ["nvidia-smi"]', "go together"),
        (SMI.replace("77500", "77500.5"), "whole number of MiB"),
        (SMI.replace("= 77500", "= 0"), "whole number of MiB"),
        (SMI.replace("77500", "90000"), "larger than memory_physical"),  # 87.9 GiB > the 80 GiB physical
        (SMI.replace("77500", "77000"), "smaller than memory_runtime_bytes"),  # 80,740 MB < 81,000 MB
        (SMI.replace('["nvidia-smi"]', "[]"), "must name where"),
    ],
)
def test_a_tool_total_is_refused_with_the_reason(new: str, reason: str) -> None:
    with pytest.raises(DataFileError, match=reason):
        parse_gpus(broken("memory_usable = 76", new), file="t.toml", sources=SOURCES)
