"""Request and response schemas of the HTTP API (pydantic), separate from domain and database classes.

Every field says what it means and its unit. Money is a decimal string in USD (exact, as the CLI's
JSON); in requests a JSON number or a plain decimal string (:func:`Money`); bytes are integers; times are ISO
8601 UTC.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from anchorgpu.errors import InvalidInput
from anchorgpu.planner.speed.calibration import MIN_EFFICIENCY
from anchorgpu.validation import ID_MAX_LENGTH, ID_PATTERN, LIMITS, MONEY, MONEY_TEXT_PATTERN, usd_amount

__all__ = ["GpuList", "GpuOut", "Health", "Money", "OfferingList", "OfferingOut", "OptionOut", "PeakOut", "PricesOut", "Problem", "problems"]


class _Schema(BaseModel):
    """Responses: keys other areas add to their JSON later pass through (the JSON contract grows freely)."""

    model_config = ConfigDict(extra="allow")


class _Request(BaseModel):
    """Requests: unknown fields are refused (a typo in an option must not be silently ignored), and types are
    strict: ``true`` or ``"3"`` is not a number, ``1`` is not a boolean (pydantic's strict mode; the page, whose
    form values are all text, validates the same models with ``strict=False``)."""

    model_config = ConfigDict(extra="forbid", strict=True)


TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""Request text: no control characters (NUL included). Lengths are bounded field by field."""


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number here")
    return value


StrictChoice = BeforeValidator(_no_bool)
"""For ``Literal[0, 1, …]`` fields, where pydantic would otherwise take ``true`` as 1 even in strict mode."""


def Money(field: str) -> Any:  # noqa: N802  (a type, as pydantic's constrained types are spelt)
    """The type of a money field of a request: a JSON number or a plain decimal string, read exactly by the one
    rule every face uses (:func:`anchorgpu.validation.usd_amount`, bounds in ``MONEY[field]``); anything else
    (``" 100 "``, ``"1e3"``, ``"+5"``, ``"1,5"``, non-ASCII digits, a boolean) is a 422 naming the field."""
    rule = MONEY[field]

    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            return usd_amount(value, field=field, flag="")
        except InvalidInput as exc:
            raise PydanticCustomError("money", "{reason}", {"reason": exc.message}) from None

    number: dict[str, Any] = {"type": "number", "maximum": float(rule.high)}
    number["exclusiveMinimum" if rule.low_exclusive else "minimum"] = float(rule.low)
    text = {"type": "string", "maxLength": 31,
            "pattern": MONEY_TEXT_PATTERN if rule.low < 0 else MONEY_TEXT_PATTERN.replace("^-?", "^")}
    return Annotated[Decimal, BeforeValidator(check), WithJsonSchema({"anyOf": [number, text]})]


class Problem(BaseModel):
    """An error (RFC 9457 problem+json). ``code`` is stable; ``detail`` is one line for people."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="URI reference naming the problem type")
    title: str = Field(description="HTTP reason phrase")
    status: int = Field(description="HTTP status code")
    detail: str = Field(description="One-line reason, naming the offending field or value")
    code: str = Field(description="Stable machine-readable code, e.g. 'unknown_gpu', 'idempotency_key_reused'")


_PROBLEM_TEXT = {
    400: "Malformed request (e.g. a missing or invalid Idempotency-Key header)",
    401: "Missing or invalid API key",
    404: "Not found (or not visible to this account)",
    409: "Conflict with the current state (expired quote, no capacity, request in progress …)",
    422: "Invalid input, or an idempotency key reused with a different request",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries for the problem+json answers a route can give."""
    return {s: {"model": Problem, "description": _PROBLEM_TEXT.get(s, "Error"), "content": {"application/problem+json": {}}} for s in statuses}


class Health(_Schema):
    status: Literal["ok"] = Field(description="Always 'ok' when the service and its database answer")
    version: str = Field(description="AnchorGPU version")
    database: str = Field(description="Database dialect in use: 'sqlite' (embedded default) or 'postgresql'")


class PeakOut(_Schema):
    status: Literal["known", "absent", "unknown"] = Field(description="'known' with a figure; 'absent' = the hardware lacks this precision; 'unknown' = no published figure")
    flops_per_s: float | None = Field(description="Dense peak throughput, FLOP/s (OP/s for int8); null unless status is 'known'")
    uncertain: bool = Field(description="True when the source flags the figure as doubtful")


class GpuOut(_Schema):
    """One GPU, with the same keys as ``anchorgpu gpus --json`` (built by ``anchorgpu.hardware.gpu_to_json``)."""

    name: str = Field(description="Canonical GPU id, e.g. 'h100-sxm'")
    display_name: str = Field(description="Vendor name, e.g. 'NVIDIA H100 SXM 80GB'")
    aliases: list[str] = Field(description="Other names accepted for this GPU (case-insensitive)")
    vendor: str = Field(description="'NVIDIA' or 'AMD'")
    architecture: str = Field(description="GPU architecture, e.g. 'Hopper'")
    form_factor: str = Field(description="SXM, PCIe, OAM …")
    memory_bytes: int = Field(description="Memory the planner budgets against, bytes")
    memory_headline: str = Field(description="The vendor's memory figure as written, e.g. '80 GB'")
    memory_type: str = Field(description="HBM3, HBM3e, GDDR7 …")
    memory_bandwidth_bytes_per_s: float = Field(description="Peak memory bandwidth, bytes per second")
    peaks: dict[str, PeakOut] = Field(description="Dense peak throughput per precision (fp64, fp32, tf32, bf16, fp8, int8, fp4)")
    fp8_hardware: bool = Field(description="FP8 computed natively in hardware")
    fp4_hardware: bool = Field(description="FP4 computed natively in hardware (Blackwell, MI355X)")
    interconnect: str = Field(description="Scale-up link; 'none (PCIe only)' without one")
    interconnect_bandwidth_bytes_per_s: float | None = Field(description="Scale-up bandwidth per GPU, bidirectional, bytes per second")
    scaleup_domain_gpus: int = Field(description="GPUs reachable over the scale-up link (8 in an HGX server, 1 without)")
    tdp_w: int | None = Field(description="Board power, watts")
    software_stack: Literal["cuda", "rocm"] = Field(description="Software stack the GPU needs")
    partitioning: str = Field(description="What the hardware could partition into; AnchorGPU always rents whole GPUs")
    sources: list[str] = Field(description="Keys of the sources the figures come from (see source_details)")

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


class QuoteCreate(_Request):
    offering: str = Field(min_length=1, max_length=100, pattern=TEXT_PATTERN, description="Offering id from /v1/offerings, e.g. 'h100-sxm-1x-vm'")
    quantity: int = Field(default=1, ge=1, le=10_000, description="Whole servers of the offering (a JSON integer: not true, not \"3\")")
    term: str = Field(default="1month", min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Fixed term: 'Nh' hours, 'Nw' weeks (168 h), 'Nmonth' months (720 h); ASCII digits (parsed by the same rule as the CLI's --term)", examples=["1month", "2w", "12h"])
    options: dict[Annotated[str, Field(max_length=100, pattern=TEXT_PATTERN)], Annotated[int, Field(ge=0, le=10_000)]] = Field(
        default_factory=dict, description="Option id → units per server, e.g. {'nvme-tb': 2}", max_length=50
    )
    region: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="Region id; default: the offering's first region")


class QuoteLineOut(_Schema):
    kind: Literal["servers", "option"] = Field(description="'servers' for the GPU servers, 'option' for an option")
    item: str = Field(description="Offering id or option id")
    description: str = Field(description="What the line is")
    quantity: int = Field(description="Servers, or option units over all servers")
    billed_unit: str = Field(description="Term unit billed: hour, week or month")
    billed_count: int = Field(description="How many billed units")
    unit_price_usd: str = Field(description="List price of one billed unit per server (or option unit), USD")
    amount_usd: str = Field(description="Line amount, USD, rounded once to the cent")
    note: str = Field(description="How the term was billed when a longer unit was cheaper")


class TermOut(_Schema):
    unit: str = Field(description="hour, week or month")
    count: int = Field(description="Number of units")
    hours: int = Field(description="Length of the term in hours (week = 168 h, month = 720 h)")


class QuoteOut(_Schema):
    """A quote, with the same keys as ``anchorgpu quote --json``; its prices hold until ``valid_until``."""

    id: str | None = Field(description="Quote id, to buy it with POST /v1/allocations")
    offering: str = Field(description="Offering id")
    region: str = Field(description="Region id")
    quantity: int = Field(description="Servers")
    gpus: int = Field(description="GPUs in total (servers × GPUs per server)")
    term: TermOut = Field(description="The fixed term")
    lines: list[QuoteLineOut] = Field(description="Itemized lines; their sum is the total")
    total_usd: str = Field(description="The whole price for the term, USD; nothing else is billed")
    per_gpu_hour_usd: str | None = Field(description="Comparison rate: monthly list price / GPUs / 730 h, USD per GPU-hour")
    effective_per_gpu_hour_usd: str = Field(description="What this term really costs: total / GPU-hours, USD per GPU-hour")
    gpu_hours: int = Field(description="GPUs × term hours")
    egress_included_tb: str = Field(description="Egress included over the term, TB (pro-rated from the monthly allowance)")
    valid_until: str = Field(description="Buy before this instant (ISO 8601 UTC)")
    catalog_version: str = Field(description="Catalog version the prices come from")


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


class ModelOut(_Schema):
    """A model as the planner sees it (same core keys as ``anchorgpu model MODEL --json``)."""

    name: str = Field(description="Model name")
    kind: str = Field(description="'language' or 'diffusion'")
    family: str = Field(description="Model family")
    params_total: int = Field(description="Parameters in total (every expert of a MoE), exact count")
    params_active: int | None = Field(description="Parameters one token passes through (MoE: active experts only); null for diffusion")
    kv_bytes_per_token: int | None = Field(description="KV-cache bytes per token for the whole model at bf16, before sliding-window caps; attention layers only (a hybrid's Mamba/linear-attention layers cache none); null for diffusion")
    state_bytes_per_sequence: int | None = Field(default=None, description="Recurrent (Mamba/SSM, linear-attention) state one sequence holds at any length, bytes (16-bit; a float32 SSM state where the model pins it); 0 for a transformer, null for diffusion")
    max_context_tokens: int | None = Field(default=None, description="Longest context the config allows, tokens")


class QuoteStored(QuoteOut):
    used: bool = Field(description="True once the quote was bought (a quote buys one allocation)")


class AllocationCreate(_Request):
    quote_id: str = Field(min_length=1, max_length=ID_MAX_LENGTH, pattern=ID_PATTERN, description="Id of one of your quotes, still valid and not yet bought")


class AllocationExtend(_Request):
    term: str = Field(min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Added paid term: 'Nh', 'Nw' (168 h) or 'Nmonth' (720 h); priced by a new quote. Required: an extension is never charged for a default term", examples=["1month", "1w"])
    dry_run: bool = Field(default=False, description="true: answer the price of this extension (ExtensionQuote) and charge nothing; nothing is recorded under the Idempotency-Key")
    expected_total_usd: Money("expected_total_usd") | None = Field(  # type: ignore[valid-type]
        default=None, strict=False,
        description="The price you confirmed (a dry run's total_usd; a JSON number or a plain decimal string, at most 2 "
                    "places): if today's price differs, 409 price_changed and nothing is charged")


class ExtensionQuote(_Schema):
    """What an extension would cost and change; nothing is charged (``dry_run: true``)."""

    dry_run: Literal[True] = Field(description="Always true: this is a price, not a purchase")
    charged: Literal[False] = Field(description="Always false: nothing was charged")
    allocation_id: str = Field(description="Allocation id")
    term: str = Field(description="The term that would be added")
    added_hours: int = Field(description="Hours that would be added after ends_at")
    total_usd: str = Field(description="What extending would charge now, USD (today's list price); send it back as expected_total_usd")
    effective_per_gpu_hour_usd: str = Field(description="That price per GPU-hour of the added term")
    current_ends_at: str = Field(description="The end of the paid term now (ISO 8601 UTC)")
    ends_at: str = Field(description="The end after extending")
    amount_usd_after: str = Field(description="Amount paid in all after extending")
    capacity_available: bool = Field(description="Whether the stock holds the servers for the added period now")
    servers_free: int = Field(description="Servers of this offering and region free for the whole added period")
    servers_in_stock: int = Field(description="Servers of this offering and region in stock")
    capacity: str = Field(description="The capacity check in words")
    quote: dict[str, Any] = Field(description="The priced lines, as a quote (not stored)")
    statement: str = Field(description="One sentence: what would be charged, and that nothing was")


class AllocationEventOut(_Schema):
    seq: int = Field(description="Order of the event within the allocation")
    kind: str = Field(description="created, activated, stopped, started, extended, terminated or expired")
    at: str = Field(description="When it happened (ISO 8601 UTC)")
    from_state: str | None = Field(description="State before")
    to_state: str = Field(description="State after")


class AllocationOut(_Schema):
    """An allocation, with the same keys as ``anchorgpu allocations --json``."""

    id: str = Field(description="Allocation id")
    quote_id: str = Field(description="The quote it was bought from")
    offering: str = Field(description="Offering id")
    region: str = Field(description="Region id")
    quantity: int = Field(description="Servers")
    gpus: int = Field(description="GPUs in total")
    state: Literal["scheduled", "active", "stopped", "expired", "terminated"] = Field(description="State now")
    starts_at: str = Field(description="Start of the paid term (ISO 8601 UTC)")
    ends_at: str = Field(description="End of the paid term = starts_at + term (+ extensions); stopping never moves it")
    term: TermOut = Field(description="The term first bought")
    paid_hours: int = Field(description="Hours paid for, from starts_at to ends_at")
    amount_usd: str = Field(description="Amount paid, USD (quote total plus extensions); stopping never changes it")
    events: list[AllocationEventOut] = Field(description="Every change, oldest first")
    notice: str | None = Field(default=None, description="Present when stopped: stopping does not pause the paid term")


class AllocationList(_Schema):
    data: list[AllocationOut] = Field(description="Your allocations, oldest first")
    count: int = Field(description="Number of allocations in data")


Task = Literal["inference", "train", "lora", "qlora", "diffusion"]
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
_ALL_LORA_TARGETS: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")


class PlanRequest(_Request):
    """The options of ``anchorgpu plan`` as JSON (same names without dashes, same defaults)."""

    model: str = Field(min_length=1, max_length=200, pattern=TEXT_PATTERN, description="Registry name (see /v1/models) or the Hub id of one; other Hub ids only where the server fetches them (ANCHORGPU_HUB_FETCH=1)", examples=["llama-3.1-70b"])
    task: Task = Field(default="inference", description="inference, train (full fine-tune / pretrain), lora, qlora or diffusion")
    gpu: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="GPU name or alias; without one there is no fit verdict", examples=["h100"])
    gpus: int | None = Field(default=None, ge=LIMITS["gpus"].low, le=LIMITS["gpus"].high, description="Whole GPUs in total (default, with a GPU named: the fewest that hold the job, with the layout chosen on them; tp × pp × dp when all three are given)")
    tp: int | None = Field(default=None, ge=1, le=1024, description="Tensor-parallel ranks")
    pp: int | None = Field(default=None, ge=1, le=1024, description="Pipeline-parallel stages")
    dp: int | None = Field(default=None, ge=1, le=65_536, description="Data-parallel replicas (memories do not pool)")
    ep: int | None = Field(default=None, ge=1, le=1024, description="Expert-parallel ranks (MoE)")
    zero: Annotated[Literal[0, 1, 2, 3] | None, StrictChoice] = Field(default=None, description="ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also parameters (training: chosen with the layout when not given)")
    cp: int | None = Field(default=None, ge=1, le=1024, description="Training: context-parallel ranks (ring attention)")
    virtual_stages: int | None = Field(default=None, ge=1, le=1024, description="Training: interleaved pipeline chunks per GPU (chosen when not given)")
    pipeline_layout: str | None = Field(default=None, min_length=1, max_length=1000, pattern=TEXT_PATTERN, description="Training, with pp: which layers each pipeline chunk holds, in Megatron-Core's --pipeline-model-parallel-layout syntax (E embedding, t layer, L loss, | chunk end, (...)*N repeat); virtual_stages follows from its chunks when not given", examples=["Et|(tt|)*30L"])
    tp_overlap: bool = Field(default=False, description="Training: overlap tensor-parallel traffic with the products (Transformer Engine / AsyncTP)")
    sequence_parallel: bool | None = Field(default=None, description="Training: Megatron's sequence parallelism, the norms, dropout and residual adds split over the TP ranks (null: on with tp > 1; true needs tp > 1)")
    ep_overlap: bool = Field(default=False, description="Training a MoE under EP: overlap the all-to-alls with another micro-batch's computation (Megatron-Core --overlap-moe-expert-parallel-comm, DeepSeek's DualPipe)")
    global_batch: int | None = Field(default=None, ge=LIMITS["global_batch"].low, le=LIMITS["global_batch"].high, description="Training: tokens per optimizer step (default 4,194,304); gradient accumulation follows")
    fsdp: bool = Field(default=False, description="FSDP full shard (the memory of ZeRO-3)")
    offload: Literal["none", "optimizer", "params"] = Field(default="none", description="Move optimizer state (or also parameters) to CPU RAM")
    offload_activation_layers: int = Field(default=0, ge=0, le=100_000, description="Training: layers whose activations wait in host memory between the forward and backward pass (Megatron-Core's CPU activation offloading, --cpu-offloading-num-layers: full training, one pipeline stage, no recompute)")
    weights: str | None = Field(default=None, max_length=40, pattern=TEXT_PATTERN, description="Weight format: bf16, fp16, fp8, int8, int4-gptq, int4-awq, nf4, nf4-dq, mxfp4, nvfp4, fp8-block128x128, gguf-q4_k_m, …, or shipped (default: the format the checkpoint ships in, per its quantization_config; bf16 for full training and LoRA; nf4-dq for qlora)")
    kv_cache: Literal["bf16", "fp16", "fp8"] = Field(default="bf16", description="KV-cache precision")
    recipe: Literal["vllm", "sglang", "trtllm", "torchrun-fsdp", "deepspeed", "accelerate", "skypilot", "k8s"] | None = Field(default=None, description="Also return the launch that realises the plan (command, files, assumptions, what it cannot set) under 'recipe'; one that cannot express the plan is a 422")
    context: int | None = Field(default=None, ge=LIMITS["context"].low, le=LIMITS["context"].high, description="Tokens per sequence (prompt + output); default prompt + output when given, else the model's context length for one sequence and 1,024 + 256 tokens each for more")
    concurrency: int | None = Field(default=None, ge=LIMITS["concurrency"].low, le=LIMITS["concurrency"].high, description="Sequences served at once; default: check one and report max_concurrency")
    allow_long_context: bool = Field(default=False, description="Allow a context beyond the model's configured limit")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1, description="Fraction of GPU memory the serving engine may use (vLLM); with engine trtllm the fraction of the memory free after the weights and profiling that the KV cache takes")
    engine: Literal["vllm", "trtllm"] | None = Field(default=None, description="Serving engine the memory and admission are sized for: 'vllm' (gpu_memory_utilization is the engine's share of each GPU; pages filled as tokens arrive) or 'trtllm' (trtllm-serve: gpu_memory_utilization is the share of the memory left free after the weights and its profiling pass that the KV cache takes; 8,192 tokens and 2,048 sequences by default; a request is admitted only when its prompt + output fit); default 'trtllm' with recipe 'trtllm', else 'vllm'")
    micro_batch: int | None = Field(default=None, ge=LIMITS["micro_batch"].low, le=LIMITS["micro_batch"].high, description="Training: sequences per GPU step (chosen with the layout when not given)")
    seq: int | None = Field(default=None, ge=LIMITS["seq"].low, le=LIMITS["seq"].high, description="Training: tokens per sequence")
    recompute: Literal["none", "selective", "moe", "full"] | None = Field(default=None, description="Activation recomputation (default none for train, full for lora/qlora; selective: the attention core, or with train_stack pytorch torchtitan's op-level policy, every other product run again; moe: a mixture of experts' MoE blocks, Megatron-Core's --recompute-modules moe)")
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "lion", "adafactor"] = Field(default="adamw", description="Optimizer whose state is kept")
    lora_rank: int = Field(default=16, ge=LIMITS["lora_rank"].low, le=LIMITS["lora_rank"].high, description="LoRA rank r")
    lora_targets: list[LoraTarget] = Field(
        default_factory=lambda: list(_ALL_LORA_TARGETS), min_length=1, max_length=7, description="Modules that get adapters"
    )
    resolution: str | None = Field(default=None, pattern=r"^[0-9]{2,5}x[0-9]{2,5}$", description="Diffusion: output WIDTHxHEIGHT in pixels", examples=["1024x1024"])
    images: int = Field(default=1, ge=LIMITS["images"].low, le=LIMITS["images"].high, description="Diffusion: images per batch")
    vae_tiling: bool = Field(default=False, description="Diffusion: decode the VAE in tiles (bounds the decode peak)")
    images_per_request: int | None = Field(default=None, ge=0, le=1024, description="Serving a vision-language model: images in each request (default 1 for a model that takes images; refused for a text-only model)")
    image_resolution: str | None = Field(default=None, pattern=r"^[0-9]{1,5}x[0-9]{1,5}$", description="Serving a vision-language model: image WIDTHxHEIGHT in pixels (default the model's native resolution)", examples=["1024x1024"])
    train_precision: Literal["mixed", "bf16-true", "fp8", "fp4"] = Field(default="mixed", description="Training: 'mixed' keeps fp32 master weights and moments; 'bf16-true' keeps neither; 'fp8'/'fp4' compute the products in FP8/FP4 (Transformer Engine style) with mixed-precision state")
    optimizer_state: Literal["fp32", "bf16-moments", "bf16"] = Field(default="fp32", description="Full training: AdamW's master weights and moments under mixed/fp8/fp4 precision: 'fp32' (12 bytes a parameter), 'bf16-moments' (fp32 master, bf16 moments, 8: Megatron-Core's precision-aware optimizer) or 'bf16' (bf16 master and moments, 6: Apex distributed_fused_adam with dtype bf16, NeMo's SFT); refused with train_precision 'bf16-true', another optimizer or task")
    train_stack: Literal["megatron", "pytorch"] | None = Field(default=None, description="Training software the plan is for (its speed and what it holds: with pytorch, torchtitan-style selective recompute and an fp32 loss): 'megatron' (Megatron-Core with Transformer Engine, NeMo: fused kernels) or 'pytorch' (torchtitan, FSDP scripts, OLMo-core, llm-foundry: more memory traffic around the products, SDPA's FlashAttention-2 on Hopper); default 'pytorch' with task 'qlora' or recipe 'torchrun-fsdp', 'deepspeed' or 'accelerate', else 'megatron'")
    cross_entropy: Literal["unfused", "native", "te", "eager"] | None = Field(default=None, description="Full training's loss, for its memory: 'unfused' (Megatron-Core's default, 6 bytes a logit), 'native' (its fused loss, 6), 'te' (Transformer Engine's fused kernel, 2) or 'eager' (PyTorch's fp32 cross_entropy, 12); default unfused with train_stack megatron, eager with pytorch")
    max_num_batched_tokens: int | None = Field(default=None, ge=LIMITS["max_num_batched_tokens"].low, le=LIMITS["max_num_batched_tokens"].high, description="Serving engine's prefill budget, tokens (vLLM's max_num_batched_tokens)")
    max_num_seqs: int | None = Field(default=None, ge=LIMITS["max_num_seqs"].low, le=LIMITS["max_num_seqs"].high, description="Serving engine's sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but the A100, else 256): a replica runs at most this many at once")
    prompt: int | None = Field(default=None, ge=LIMITS["prompt"].low, le=LIMITS["prompt"].high, description="Prompt tokens per request; without 'context' each sequence is sized at prompt + output")
    output_tokens: int | None = Field(default=None, ge=LIMITS["output_tokens"].low, le=LIMITS["output_tokens"].high, description="Output tokens per request")
    tokens: int | None = Field(default=None, ge=LIMITS["tokens"].low, le=LIMITS["tokens"].high, description="Performance: training tokens, for the training time")
    mfu: float | None = Field(default=None, ge=MIN_EFFICIENCY, le=1, description=f"Performance: model FLOPs utilization ({MIN_EFFICIENCY:g}-1)")
    mbu: float | None = Field(default=None, ge=MIN_EFFICIENCY, le=1, description=f"Performance: memory-bandwidth utilization for decode ({MIN_EFFICIENCY:g}-1)")
    cuda_context_mib: int | None = Field(default=None, ge=0, le=65_536, description="Override the CUDA/ROCm context size, MiB")
    fragmentation: float | None = Field(default=None, ge=0, le=0.5, description="Override the allocator fragmentation margin (0-0.5)")


class PlanOut(_Schema):
    """A plan with the keys of ``anchorgpu plan --json`` (DESIGN.md section 5)."""

    model: dict[str, Any] = Field(description="The model: name, params_total, params_active, kv_bytes_per_token …")
    gpu: dict[str, Any] | None = Field(description="{name, memory_bytes} of the GPU planned for; null without one")
    gpus: int = Field(description="GPUs in total")
    per_gpu: dict[str, int] = Field(description="Bytes per GPU: weights_bytes, kv_cache_bytes, activations_bytes, gradients_bytes, optimizer_bytes, overhead_bytes, total_bytes")
    fits: bool | None = Field(description="Whether the per-GPU total fits the GPU's memory (serving: its engine budget); null without a GPU")
    max_concurrency: int | None = Field(description="Inference: sequences of the context that fit at once; null otherwise")
    warnings: list[dict[str, Any]] = Field(description="[{code, message, concept}]: what to watch; concept names a glossary entry")
    assumptions: list[str] = Field(default_factory=list, description="Every default the planner chose")
    checks: list[str] = Field(default_factory=list, description="What you must still check yourself")


class RecommendRequest(_Request):
    """The options of ``anchorgpu recommend`` as JSON: a workload, a term, and limits on price and speed."""

    model: str = Field(min_length=1, max_length=200, pattern=TEXT_PATTERN, description="Registry name (see /v1/models) or the Hub id of one (other Hub ids only where ANCHORGPU_HUB_FETCH=1; language models and diffusion pipelines)", examples=["llama-3.1-8b"])
    task: Literal["inference", "train", "lora", "qlora", "diffusion"] = Field(default="inference", description="inference, train, lora or qlora; a diffusion pipeline is always planned as diffusion")
    term: str = Field(default="1month", min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Rental term to price: 'Nh', 'Nw' (168 h) or 'Nmonth' (720 h)")
    gpu: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="Only offerings of this GPU (name or alias)")
    context: int | None = Field(default=None, ge=1, le=10_000_000, description="Tokens per sequence (prompt + output)")
    prompt: int | None = Field(default=None, ge=LIMITS["prompt"].low, le=LIMITS["prompt"].high, description="Inference: prompt tokens per request; without 'context' each sequence is sized at prompt + output")
    concurrency: int | None = Field(default=None, ge=LIMITS["concurrency"].low, le=LIMITS["concurrency"].high, description="Sequences served at once")
    max_num_seqs: int | None = Field(default=None, ge=LIMITS["max_num_seqs"].low, le=LIMITS["max_num_seqs"].high, description="Serving engine's sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but the A100, else 256): a replica runs at most this many at once")
    engine: Literal["vllm", "trtllm"] | None = Field(default=None, description="Serving engine the memory and admission are sized for: 'vllm' (gpu_memory_utilization is the engine's share of each GPU; pages filled as tokens arrive) or 'trtllm' (trtllm-serve: gpu_memory_utilization is the share of the memory left free after the weights and its profiling pass that the KV cache takes; 8,192 tokens and 2,048 sequences by default; a request is admitted only when its prompt + output fit); default 'trtllm' with recipe 'trtllm', else 'vllm'")
    weights: str | None = Field(default=None, max_length=120, pattern=TEXT_PATTERN, description="Weight format, or a comma list to compare ('bf16,fp8'); default: the plan's (the checkpoint's shipped format; training bf16). Rows below it carry lower_precision", examples=["bf16"])
    kv_cache: Literal["bf16", "fp16", "fp8"] | None = Field(default=None, description="KV-cache precision; default bf16, as the plan")
    lower_precision: bool = Field(default=False, description="Also consider fp8/int4-awq weights and an fp8 KV cache below the checkpoint's precision; such rows say outputs change and evaluations should be rerun")
    recipe: Literal["vllm", "sglang", "trtllm", "torchrun-fsdp", "deepspeed", "accelerate", "skypilot", "k8s"] | None = Field(default=None, description="Also write each result's launch under its 'recipe' (null with 'recipe_refused' where it cannot express that result's plan)")
    micro_batch: int = Field(default=1, ge=LIMITS["micro_batch"].low, le=LIMITS["micro_batch"].high, description="Training: sequences per GPU step")
    seq: int | None = Field(default=None, ge=1, le=10_000_000, description="Training: tokens per sequence")
    train_tokens: int | None = Field(default=None, ge=LIMITS["train_tokens"].low, le=LIMITS["train_tokens"].high, description="Training: tokens to train on (gives run time and run cost)")
    train_precision: Literal["mixed", "bf16-true", "fp8", "fp4"] = Field(default="mixed", description="Training: 'mixed' keeps fp32 master weights and moments; 'bf16-true' keeps neither; 'fp8'/'fp4' compute the products in FP8/FP4 (Transformer Engine style): offerings whose GPU lacks those tensor cores are rejected")
    optimizer_state: Literal["fp32", "bf16-moments", "bf16"] = Field(default="fp32", description="Full training: AdamW's master weights and moments under mixed/fp8/fp4 precision: 'fp32' (12 bytes a parameter), 'bf16-moments' (fp32 master, bf16 moments, 8) or 'bf16' (bf16 master and moments, 6)")
    cross_entropy: Literal["unfused", "native", "te", "eager"] | None = Field(default=None, description="Full training's loss, for its memory: 'unfused' (Megatron-Core's default, 6 bytes a logit), 'native' (its fused loss, 6), 'te' (Transformer Engine's fused kernel, 2) or 'eager' (PyTorch's fp32 cross_entropy, 12); default unfused with train_stack megatron, eager with pytorch")
    train_stack: Literal["megatron", "pytorch"] | None = Field(default=None, description="Training software the speeds and memory are for: 'megatron' (Megatron-Core with Transformer Engine, NeMo: fused kernels) or 'pytorch' (torchtitan, FSDP scripts, OLMo-core, llm-foundry); default 'pytorch' with task 'qlora' or recipe 'torchrun-fsdp', 'deepspeed' or 'accelerate', else 'megatron'")
    output_tokens: int = Field(default=256, ge=LIMITS["output_tokens"].low, le=LIMITS["output_tokens"].high, description="Inference: tokens generated per request")
    resolution: str | None = Field(default=None, pattern=r"^[0-9]{2,5}x[0-9]{2,5}$", description="Diffusion pipeline: output WIDTHxHEIGHT in pixels", examples=["1024x1024"])
    images: int = Field(default=1, ge=LIMITS["images"].low, le=LIMITS["images"].high, description="Diffusion pipeline: images per batch")
    vae_tiling: bool = Field(default=False, description="Diffusion pipeline: decode the VAE in tiles")
    max_usd: Money("max_usd") | None = Field(  # type: ignore[valid-type]
        default=None, strict=False,
        description="At most this total for the term, USD (a JSON number or a plain decimal string such as \"20000.50\")")
    min_tokens_per_s_per_user: float | None = Field(default=None, ge=LIMITS["min_tokens_per_s_per_user"].low, le=LIMITS["min_tokens_per_s_per_user"].high, allow_inf_nan=False, description="Inference: at least this decode speed per user, tokens/s")
    top: int = Field(default=10, ge=1, le=100, description="How many results")
    max_servers: int = Field(default=4, ge=1, le=16, description="Most servers of one offering to consider")


class RecommendOut(_Schema):
    """Recommendations with the keys of ``anchorgpu recommend --json``, cheapest first."""

    model: Any = Field(description="The model planned")
    term: str = Field(description="The term priced")
    results: list[dict[str, Any]] = Field(description="Offerings that fit, cheapest first: offering, servers, gpus, layout, per_gpu bytes, speed (tokens/s), total_usd …")
    pareto: list[dict[str, Any]] = Field(description="The cost/speed Pareto front among the results")
    rejected: list[dict[str, Any]] = Field(description="Cheaper options that were rejected, with the reason")
    assumptions: list[str] = Field(description="Every default chosen")
    warnings: list[dict[str, Any]] = Field(description="[{code, message}]")
