"""Response schemas of the HTTP API's read-only catalog: health, GPUs, offerings and their prices and options,
models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from anchorgpu.api.schemas_base import _Schema

__all__ = ["GpuList", "GpuOut", "Health", "IndicativePriceOut", "ModelList", "ModelSummary", "OfferingList", "OfferingOut",
           "OptionOut", "PeakOut", "PricesOut", "Usd"]


class Health(_Schema):
    status: Literal["ok"] = Field(description="Always 'ok' when the service and its database answer")
    version: str = Field(description="AnchorGPU version")
    database: str = Field(description="Database dialect in use: 'sqlite' (embedded default) or 'postgresql'")


class PeakOut(_Schema):
    status: Literal["known", "absent", "unknown"] = Field(description="'known' with a figure; 'absent' = the hardware lacks this precision; 'unknown' = no published figure")
    flops_per_s: float | None = Field(description="Dense peak throughput, FLOP/s (OP/s for int8); null unless status is 'known'")
    uncertain: bool = Field(description="True when the source flags the figure as doubtful")


class IndicativePriceOut(_Schema):
    low: str = Field(description="Lowest market price seen, USD per GPU-hour (decimal string)")
    high: str = Field(description="Highest market price seen, USD per GPU-hour (decimal string)")
    observed: str = Field(description="When those market prices were seen")


class GpuOut(_Schema):
    """One GPU, with the same keys as ``anchorgpu gpus --json`` (built by ``anchorgpu.hardware.gpu_to_json``)."""

    name: str = Field(description="Canonical GPU id, e.g. 'h100-sxm'")
    display_name: str = Field(description="Vendor name, e.g. 'NVIDIA H100 SXM 80GB'")
    aliases: list[str] = Field(description="Other names accepted for this GPU (case-insensitive)")
    vendor: str = Field(description="'NVIDIA' or 'AMD'")
    architecture: str = Field(description="GPU architecture, e.g. 'Hopper'")
    form_factor: str = Field(description="SXM, PCIe, OAM …")
    memory_bytes: int = Field(description="Memory the planner budgets against, bytes: the total the CUDA/ROCm runtime "
                              "reports where memory_runtime_sources names a report of it, else the vendor's usable figure")
    memory_physical_bytes: int | None = Field(default=None, description="Physical capacity, bytes, where the platform "
                                              "exposes less than it (B200: 192 GB physical, 180 GB usable); null otherwise")
    memory_nominal_bytes: int | None = Field(default=None, description="The vendor's usable/platform figure (80 GiB for "
                                             "an '80 GB' H100) when memory_bytes is the runtime total; null otherwise")
    memory_runtime_sources: list[str] = Field(default_factory=list, description="Where the runtime total in "
                                              "memory_bytes was reported (repo@commit path, or our device run)")
    memory_smi_mib: int | None = Field(default=None, description="The total the management tool reports, MiB "
                                       "(nvidia-smi memory.total; rocminfo on AMD): what SGLang sizes "
                                       "mem_fraction_static by; null where no report is sourced")
    memory_smi_sources: list[str] = Field(default_factory=list, description="Where memory_smi_mib was reported")
    memory_headline: str = Field(description="The vendor's memory figure as written, e.g. '80 GB'")
    memory_unit: Literal["GB", "GiB"] = Field(description="Which unit the vendor's memory headline means ('80 GB' is "
                                              "80 GiB on an H100)")
    memory_type: str = Field(description="HBM3, HBM3e, GDDR7 …")
    memory_bandwidth_bytes_per_s: float = Field(description="Peak memory bandwidth, bytes per second")
    peaks: dict[str, PeakOut] = Field(description="Dense peak throughput per precision (fp64, fp32, tf32, bf16, fp8, int8, fp4)")
    fp8_hardware: bool = Field(description="FP8 computed natively in hardware")
    fp4_hardware: bool = Field(description="FP4 computed natively in hardware (Blackwell, MI355X)")
    fp4_formats: list[str] = Field(default_factory=list, description="FP4 formats the tensor cores run (NVFP4, MXFP4; "
                                   "MXFP6 on MI355X); empty without FP4 hardware")
    training_stacks: dict[str, str | None] = Field(
        default_factory=dict, description="The framework that trains in fp8 and in fp4 on this GPU, as plan and "
        "recommend read it; null where none does or the GPU has no such tensor cores (keys of training_sources)")
    training_sources: list[str] = Field(default_factory=list, description="Keys of the sources of training_stacks")
    interconnect: str = Field(description="Scale-up link; 'none (PCIe only)' without one")
    interconnect_bandwidth_bytes_per_s: float | None = Field(description="Scale-up bandwidth per GPU, bidirectional, bytes per second")
    scaleup_domain_gpus: int = Field(description="GPUs reachable over the scale-up link (8 in an HGX server, 1 without)")
    tdp_w: int | None = Field(description="Board power, watts")
    pcie_gen: str = Field(description="Host link, e.g. 'Gen5 x16' (or why there is none)")
    pcie_bandwidth_bytes_per_s: float | None = Field(description="Host link bandwidth, bytes per second; null where not a PCIe link")
    compute_capability: str | None = Field(description="CUDA compute capability, e.g. '9.0'; null on AMD")
    rocm_gfx_target: str | None = Field(description="ROCm gfx target, e.g. 'gfx942'; null on NVIDIA")
    software_stack: Literal["cuda", "rocm"] = Field(description="Software stack the GPU needs")
    partitioning: str = Field(description="What the hardware could partition into; AnchorGPU always rents whole GPUs")
    uncertain_fields: list[str] = Field(default_factory=list, description="Fields whose figure is secondary or conflicting")
    indicative_price_usd_per_gpu_hour: IndicativePriceOut | None = Field(
        default=None, description="Market prices seen elsewhere (not AnchorGPU's price; see /v1/offerings); null where none was seen")
    sources: list[str] = Field(description="Keys of the sources the figures come from (see source_details)")
    source_details: dict[str, str] = Field(default_factory=dict, description="Each key of sources and training_sources described")
    notes: str = Field(default="", description="Anything else worth knowing about the figures")

    @classmethod
    def from_domain(cls, gpu: Any) -> GpuOut:
        from anchorgpu.hardware import gpu_to_json

        return cls.model_validate(gpu_to_json(gpu))


class GpuList(_Schema):
    data: list[GpuOut] = Field(description="GPUs AnchorGPU knows, in the hardware data's order")
    count: int = Field(description="Number of GPUs in data")


Usd = Annotated[str, Field(description="Exact amount in USD as a decimal string, e.g. '2190.00'", examples=["2190.00"])]


class PricesOut(_Schema):
    hour: str | None = Field(description="List price for one hour, USD (decimal string); null = unpriced")
    week: str | None = Field(description="List price for one week (168 h), USD; null = unpriced")
    month: str | None = Field(description="List price for one month (720 h), USD; null = unpriced")


class OptionOut(_Schema):
    id: str = Field(description="Option key used in a quote's `options`, e.g. 'nvme-tb'")
    name: str = Field(description="Human name")
    unit: str = Field(description="What one unit is, e.g. '1 TB local NVMe'")
    kinds: list[str] = Field(description="Offering kinds it applies to ('vm', 'bare-metal')")
    max_per_server: int = Field(description="Most units per server")
    prices_usd: PricesOut = Field(description="Price per unit per server for each term unit, USD")
    description: str = Field(description="What the option gives")


class OfferingOut(_Schema):
    id: str = Field(description="Offering id, e.g. '1x-h100-sxm'")
    gpu: str = Field(description="Canonical GPU name (see /v1/gpus)")
    gpus: int = Field(description="Whole GPUs per server")
    kind: str = Field(description="'vm' (one GPU passed through to a dedicated VM) or 'bare-metal' (8-GPU server)")
    region: str = Field(description="Region of this row (stock is per region)")
    regions: list[str] = Field(description="Every region the offering is listed in")
    prices_usd: PricesOut = Field(description="List prices per server per term unit, USD")
    priced: bool = Field(description="False when no term has a list price (price on request)")
    per_gpu_hour_usd: str | None = Field(description="Comparison rate: monthly price / GPUs / 730 h, USD per GPU-hour")
    egress_tb_per_month: int = Field(description="Egress included per server, TB per month (fair use)")
    ddos_protection: bool = Field(description="DDoS protection included on public IPs")
    stock: int | None = Field(description="Servers in stock in this region (total, before bookings); null when unknown")
    available_now: int | None = Field(default=None, description="Servers free right now in this region (stock minus booked)")
    vcpus: int = Field(description="vCPUs per server")
    ram_bytes: int = Field(description="RAM per server, bytes")
    nvme_bytes: int = Field(description="Local NVMe per server, bytes")
    network: str = Field(description="Public uplink and scale-out fabric")
    network_gbps: int = Field(description="Public uplink per server, Gbit/s")
    interconnect: str = Field(description="GPU-to-GPU link inside the server")
    fabric: str = Field(description="Server-to-server network for multi-node jobs")
    options: list[OptionOut] = Field(description="Options that can be added to a quote for this offering")
    price_basis: str = Field(description="Where the list price comes from")
    notes: str = Field(description="Anything else worth knowing")


class OfferingList(_Schema):
    data: list[OfferingOut] = Field(description="Matching offerings, one row per region, sorted as asked (cheapest first by default)")
    count: int = Field(description="Number of rows in data")
    catalog_version: str = Field(description="Version of the catalog data these prices come from")


class ModelSummary(_Schema):
    name: str = Field(description="Canonical registry name, e.g. 'llama-3.1-70b'")
    kind: Literal["llm", "diffusion"] = Field(description="'llm' (language model) or 'diffusion' (image pipeline)")
    display_name: str = Field(description="Human name")
    family: str = Field(description="Model family")
    hub_id: str = Field(description="Hugging Face repository the config was published in ('' if none)")
    aliases: list[str] = Field(description="Other accepted names")


class ModelList(_Schema):
    data: list[ModelSummary] = Field(description="Built-in registry models; other Hub ids (org/name) only where the operator set ANCHORGPU_HUB_FETCH=1")
    count: int = Field(description="Number of models in data")
