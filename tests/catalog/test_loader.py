"""The shipped catalog loads and obeys the domain rules; broken data fails naming file and row."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from anchorgpu.catalog import UNPRICED, Catalog, load_catalog
from anchorgpu.errors import DataFileError, UnknownEntity
from anchorgpu.hardware import get_gpu
from anchorgpu.units import GB, GIB

# The GPUs of the hardware data that the catalog sells (DESIGN.md 2 / issue 5). The A10G is an
# AWS-only part and is not offered here.
SOLD_GPUS = ("a100-80gb-sxm", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "b300", "gb200", "l40s",
             "l4", "rtx-pro-6000", "rtx-5090", "rtx-4090", "mi300x", "mi325x", "mi355x")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_the_shipped_catalog_loads_with_a_version(catalog: Catalog) -> None:
    assert catalog.version.strip() and catalog.currency == "USD"
    assert len(catalog.offerings) >= len(SOLD_GPUS)
    assert {o.id for o in catalog.options} >= {"nvme-tb", "ipv4"}


def test_the_shipped_catalog_is_loaded_once_and_cached() -> None:
    assert load_catalog() is load_catalog()


def test_every_offering_names_a_canonical_gpu_of_the_hardware_data(catalog: Catalog) -> None:
    for offering in catalog.offerings:
        assert get_gpu(offering.gpu).name == offering.gpu, offering.id


def test_every_gpu_sold_has_at_least_one_offering(catalog: Catalog) -> None:
    assert {o.gpu for o in catalog.offerings} == set(SOLD_GPUS)


def test_single_gpu_offerings_are_dedicated_vms_and_multi_gpu_ones_bare_metal(catalog: Catalog) -> None:
    for offering in catalog.offerings:
        assert (offering.kind == "vm") == (offering.gpus == 1), offering.id
        assert offering.gpus in (1, 4, 8), offering.id


def test_one_h100_for_a_month_lists_at_2190_usd(catalog: Catalog) -> None:
    # DESIGN.md section 2: "H100 at $2,190/month ≈ $3.00 per GPU-hour".
    h100 = catalog.offering("h100-sxm-1x-vm")
    assert h100.prices_usd.month == Decimal("2190.00")
    assert h100.per_gpu_hour_usd == Decimal("3.00")


def test_included_egress_is_20_tb_on_single_gpu_and_50_tb_on_multi_gpu_servers(catalog: Catalog) -> None:
    for offering in catalog.offerings:
        assert offering.egress_tb_per_month == (20 if offering.gpus == 1 else 50), offering.id
        assert offering.ddos_protection is True


def test_longer_units_never_cost_more_per_hour_in_the_shipped_data(catalog: Catalog) -> None:
    for offering in catalog.offerings:
        p = offering.prices_usd
        if p.hour is not None and p.week is not None:
            assert p.week / 168 < p.hour, offering.id
        if p.week is not None and p.month is not None:
            assert p.month / 720 < p.week / 168, offering.id


def test_no_shipped_price_is_zero_and_gb200_is_sold_by_the_month_only(catalog: Catalog) -> None:
    for offering in catalog.offerings:
        assert all(v is None or v > 0 for _, v in offering.prices_usd.items()), offering.id
    gb200 = catalog.offering("gb200-4x-bm")
    assert (gb200.prices_usd.hour, gb200.prices_usd.week) == (None, None)
    assert gb200.prices_usd.month == Decimal("30660.00")  # CoreWeave 4-GPU node $42.00/h = $10.50/GPU-h x 4 x 730


def test_sizes_are_integer_bytes(catalog: Catalog) -> None:
    vm = catalog.offering("h100-sxm-1x-vm")
    assert vm.ram_bytes == 225 * GIB and vm.nvme_bytes == 3840 * GB
    assert "25 Gb/s public" in vm.network


def test_initial_stock_names_regions_of_the_catalog(catalog: Catalog) -> None:
    region_ids = {r.id for r in catalog.regions}
    for offering in catalog.offerings:
        assert offering.regions and set(offering.regions) <= region_ids
        assert set(offering.initial_stock) == set(offering.regions)
        assert all(n >= 0 for n in offering.initial_stock.values())
    assert catalog.offering("h100-sxm-8x-bm").initial_stock["us-east"] == 12


def test_looking_up_an_unknown_offering_suggests_close_ids(catalog: Catalog) -> None:
    with pytest.raises(UnknownEntity) as caught:
        catalog.offering("h100-sxm-1x")
    assert caught.value.code == "unknown_offering" and caught.value.exit_code == 3
    assert "h100-sxm-1x-vm" in caught.value.suggestions
    assert catalog.offering("H100-SXM-1X-VM").id == "h100-sxm-1x-vm"


def test_a_copy_of_the_shipped_files_loads_to_the_same_catalog(data_dir: Path, catalog: Catalog) -> None:
    assert load_catalog(data_dir) == catalog


# Each case breaks one cell of a copy of the shipped data: (file, row key, column, value, expected reason).
BROKEN_CELLS = [
    ("offerings.csv", "h100-sxm-1x-vm", "price_month_usd", "0", "must be positive"),  # 0 is never a price
    ("offerings.csv", "h100-sxm-1x-vm", "price_month_usd", "0.00", "must be positive"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_hour_usd", "", f"write '{UNPRICED}'"),  # empty is not unpriced
    ("offerings.csv", "h100-sxm-1x-vm", "price_hour_usd", "-3.49", "must be positive"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_hour_usd", "3.499", "whole cents"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_hour_usd", "cheap", "not an amount"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_week_usd", "600.00", "costs more per hour than price_hour_usd"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_month_usd", "2400.00", "costs more per hour than price_week_usd"),
    ("offerings.csv", "h100-sxm-1x-vm", "gpu", "h1000", "unknown GPU 'h1000'"),
    ("offerings.csv", "h100-sxm-1x-vm", "gpus", "8", "a vm offering is one dedicated GPU"),
    ("offerings.csv", "h100-sxm-8x-bm", "gpus", "1", "multi-GPU server"),
    ("offerings.csv", "h100-sxm-1x-vm", "gpus", "0.5", "not a whole number"),
    ("offerings.csv", "h100-sxm-1x-vm", "kind", "container", "expected 'vm' or 'bare-metal'"),
    ("offerings.csv", "h100-sxm-1x-vm", "vcpus", "0", "vcpus=0 must be at least 1"),
    ("offerings.csv", "h100-sxm-1x-vm", "id", "H100 VM", "lower-case"),
    ("offerings.csv", "h100-sxm-8x-bm", "id", "h100-sxm-1x-vm", "duplicate id 'h100-sxm-1x-vm'"),
    ("offerings.csv", "h100-sxm-1x-vm", "price_basis", "", "price_basis is empty"),
    ("options.csv", "ipv4", "kinds", "vm container", "unknown kind(s) container"),
    ("options.csv", "ipv4", "price_hour_usd", "0", "must be positive"),
    ("options.csv", "ipv4", "max_per_server", "0", "at least 1"),
    ("stock.csv", "b300-8x-bm", "region", "mars-1", "region 'mars-1' is not in catalog.toml"),
    ("stock.csv", "b300-8x-bm", "servers", "-1", "at least 0"),
]


@pytest.mark.parametrize(("file", "key", "column", "value", "reason"), BROKEN_CELLS)
def test_a_broken_cell_is_refused_naming_the_file_and_the_row(
    data_dir: Path, edit_row: Callable[[str, str, str, str], int], file: str, key: str, column: str, value: str,
    reason: str,
) -> None:
    row = edit_row(file, key, column, value)
    with pytest.raises(DataFileError) as caught:
        load_catalog(data_dir)
    error = caught.value
    assert (error.file, error.row) == (file, row)
    assert str(error).startswith(f"{file}, row {row}: ")
    assert reason in str(error)
    assert error.exit_code == 2 and "\n" not in str(error)


def test_an_offering_without_stock_rows_is_refused(data_dir: Path) -> None:
    stock = data_dir / "stock.csv"
    stock.write_text("".join(line for line in stock.read_text().splitlines(keepends=True)
                             if not line.startswith("b300-8x-bm,")))
    with pytest.raises(DataFileError, match=r"offerings\.csv, row \d+: offering 'b300-8x-bm' has no row in stock\.csv"):
        load_catalog(data_dir)


def test_stock_for_an_unknown_offering_is_refused(data_dir: Path) -> None:
    path = data_dir / "stock.csv"
    rows = path.read_text().count("\n")
    path.write_text(path.read_text() + "b300-9x-bm,us-east,2\n")
    with pytest.raises(DataFileError, match=rf"stock\.csv, row {rows + 1}: offering 'b300-9x-bm' is not in offerings\.csv"):
        load_catalog(data_dir)


def test_a_row_with_a_missing_cell_is_refused(data_dir: Path) -> None:
    path = data_dir / "options.csv"
    path.write_text(path.read_text() + "backup,Backups,1 snapshot\n")
    with pytest.raises(DataFileError, match=r"options\.csv, row 5: expected 9 cells"):
        load_catalog(data_dir)


def test_a_missing_header_column_is_refused_on_row_1(data_dir: Path) -> None:
    path = data_dir / "offerings.csv"
    path.write_text(path.read_text().replace(",fabric,", ",fabrik,", 1))
    with pytest.raises(DataFileError, match=r"offerings\.csv, row 1: header lacks column\(s\) fabric"):
        load_catalog(data_dir)


def test_a_missing_catalog_version_is_refused(data_dir: Path) -> None:
    path = data_dir / "catalog.toml"
    path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("catalog_version")))
    with pytest.raises(DataFileError, match=r"catalog\.toml, row catalog_version: a non-empty string is required"):
        load_catalog(data_dir)


def test_a_missing_file_is_named(data_dir: Path) -> None:
    (data_dir / "stock.csv").unlink()
    with pytest.raises(DataFileError, match=r"stock\.csv, row -: file is missing"):
        load_catalog(data_dir)


def test_unpriced_is_an_explicit_state_that_loads_as_none(data_dir: Path, edit_row: Callable[[str, str, str, str], int]) -> None:
    for column in ("price_hour_usd", "price_week_usd", "price_month_usd"):
        edit_row("offerings.csv", "l4-1x-vm", column, "unpriced")
    l4 = load_catalog(data_dir).offering("l4-1x-vm")
    assert not l4.is_priced and l4.per_gpu_hour_usd is None


def test_a_gpu_alias_in_the_data_is_stored_as_the_canonical_id(data_dir: Path, edit_row: Callable[[str, str, str, str], int]) -> None:
    edit_row("offerings.csv", "h100-sxm-1x-vm", "gpu", "NVIDIA H100 SXM 80GB")
    assert load_catalog(data_dir).offering("h100-sxm-1x-vm").gpu == "h100-sxm"


def test_offering_ids_follow_the_shape_convention(catalog: Catalog) -> None:
    # <gpu>-1x-vm for a dedicated single-GPU VM, <gpu>-<n>x-bm for an n-GPU bare-metal server.
    for offering in catalog.offerings:
        suffix = "vm" if offering.kind == "vm" else "bm"
        assert offering.id == f"{offering.gpu}-{offering.gpus}x-{suffix}"


def test_catalog_records_are_hashable_so_callers_can_cache_on_them(catalog: Catalog) -> None:
    assert hash(catalog) == hash(load_catalog())
    assert len({*catalog.offerings, *catalog.offerings}) == len(catalog.offerings)


def test_list_prices_sit_in_the_observed_market_range_or_say_how_they_were_derived(catalog: Catalog) -> None:
    # Market ranges: the hardware data's indicative_price_usd_per_gpu_hour, taken from
    # /work/shared/reference/gpu_specs.csv (price_usd_per_gpu_hr_low/high). A monthly commitment may sit up to
    # 10 % under the lowest observed on-demand price; never above the highest.
    for offering in catalog.offerings:
        observed = get_gpu(offering.gpu).indicative_price_usd_per_gpu_hour
        rate = offering.per_gpu_hour_usd
        assert rate is not None, offering.id
        if observed is None:
            assert offering.price_basis.startswith("derived:"), offering.id
        else:
            low, high = observed
            assert low * Decimal("0.90") <= rate <= high, (offering.id, rate, observed)
