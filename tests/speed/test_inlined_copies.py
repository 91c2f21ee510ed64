"""The serving call's hot path restates small functions inline (perfserve5, stop 58: each copy commented with the
function it stands for). Each test here drives the code that holds a copy and the original it stands for over the
same inputs and asserts the same result to the last bit, so a change to one and not the other fails CI (before,
only the out-of-CI ``benchmarks/equivalence.py`` caught it). The inventory is ``benchmarks/hardening/
stop58_driftguard.md``; the soft roofline, all-reduce and stage transfer in the lean step are held by
``test_serving_tick.py``."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner import serving_handoff as sh
from anchorgpu.planner.engine_limits import block_size_of
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS
from anchorgpu.planner.media import request_within
from anchorgpu.planner.memory.kv import _kv_shape
from anchorgpu.planner.result import Plan
from anchorgpu.planner.speed import batching, estimate, figures, handed_memos
from anchorgpu.planner.speed.attention_rate import prompt_extra_pairs_factor, timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.batching_rules import (
    little_ttft_s,
    others_output_tokens,
    prefill_chunk_share,
    prompt_bound_output_tokens,
)
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Band
from anchorgpu.planner.speed.estimate import performance_calibration, plan_performance, request_tokens
from anchorgpu.planner.speed.flops import _ATTENTION_CACHE, decode_attention_flops_per_token, unsampled_prompt_share
from anchorgpu.planner.speed.moe_backend import trtllm_moe_backend, vllm_moe_backend
from anchorgpu.planner.speed.request_cycle import request_step_s
from anchorgpu.planner.speed.serving_capacity import full_length_concurrency, kv_bytes_per_gpu
from anchorgpu.planner.speed.serving_plan import context_of, serving_saturation
from anchorgpu.planner.speed.serving_setup import serving_setup
from anchorgpu.planner.speed.step_constants import _pair
from anchorgpu.units import at_least, clamp

# dense, MoE, MLA (and MoE), sliding window, local/global windows, hybrid with recurrent state (no hand-over)
MODELS = ("llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v2-lite", "mistral-7b-v0.1", "gemma-3-1b", "granite-4.0-h-tiny")
ENGINES = ("vllm", "sglang", "trtllm")
LAYOUTS = ((1, 1, 1), (2, 2, 1), (2, 1, 1), (2, 1, 2))  # (gpus, tp, pp): one GPU, TP, two replicas, two stages
GPU = get_gpu("h100")
FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)

prompts = st.one_of(st.integers(1, 4096), st.integers(4096, 30000))  # long prompts: past the token budget
outputs = st.one_of(st.just(1), st.integers(1, 2048))  # one-token outputs


@functools.cache
def _model(name: str) -> Any:
    """One model object a name, as a caller that plans many requests holds it (the engine memory, and the
    hand-over's memos keyed on it, are one object a layout of that model)."""
    return load_model(name)


def _plan(
    name: str,
    engine: str,
    layout: tuple[int, int, int],
    concurrency: int,
    prompt: int,
    output: int,
    block: int | None = None,
    kv: str | None = None,
) -> Plan:
    gpus, tp, pp = layout
    try:
        return plan(
            _model(name),
            Workload(
                task="inference",
                engine=engine,
                concurrency=concurrency,
                prompt_tokens=prompt,
                output_tokens=output,
                context_tokens=prompt + output,
                block_size_tokens=block,
            ),
            layout=Layout(gpus=gpus, tp=tp, pp=pp, dp=gpus // (tp * pp)),
            gpu=GPU,
            precision=PrecisionPlan(weights="bf16") if kv is None else PrecisionPlan(weights="bf16", kv_cache=kv),
        )
    except InvalidWorkload:
        assume(False)
        raise


plans = st.builds(
    _plan,
    st.sampled_from(MODELS),
    st.sampled_from(ENGINES),
    st.sampled_from(LAYOUTS),
    st.integers(1, 1000),
    prompts,
    outputs,
    st.none(),
    st.sampled_from([None, "fp8"]),
)


# --- figures.put_serving_figures: put_time's and put_rate's operations, keys and order --------------------------

times = st.floats(1e-6, 1e3)
# a ceiling drawn on its own, or at a band edge's boundary: equal to the figure, or to its band's far edge
ties = st.sampled_from([None, "figure", "edge"])


def _ceiling(value: float, drawn: float, tie: str | None, edge: float) -> float:
    return drawn if tie is None else value if tie == "figure" else edge


@FAST
@given(
    values=st.tuples(times, times, times, times, st.one_of(st.none(), times)),
    drawn=st.tuples(times, times, times, times, times),
    tied=st.tuples(ties, ties, ties, ties, ties),
    low=st.floats(0.3, 1.0),
    high=st.floats(1.0, 3.0),
)
def test_put_serving_figures_is_put_time_and_put_rate(
    values: tuple[float, float, float, float, float | None],
    drawn: tuple[float, ...],
    tied: tuple[str | None, ...],
    low: float,
    high: float,
) -> None:
    band = Band(low=low, high=high)
    ttft, tpot, rate, user, top = values
    # put_time's lower edge is the figure over ``high``; put_rate's upper edge the figure times ``high``
    ttft_top = _ceiling(ttft, drawn[0], tied[0], ttft / high)
    tpot_top = _ceiling(tpot, drawn[1], tied[1], tpot / high)
    rate_top = _ceiling(rate, drawn[2], tied[2], rate * high)
    user_top = _ceiling(user, drawn[3], tied[3], user * high)
    top_ceiling = drawn[4] if top is None else _ceiling(top, drawn[4], tied[4], top * high)
    one: dict[str, Any] = {}
    figures.put_serving_figures(
        one, band, ttft, ttft_top, tpot, tpot_top, rate, rate_top, user, user_top, top, top_ceiling
    )
    each: dict[str, Any] = {}
    figures.put_time(each, "ttft_s", ttft, ttft_top, band)
    figures.put_time(each, "tpot_s", tpot, tpot_top, band)
    figures.put_rate(each, "output_tokens_per_s", rate, rate_top, band)
    figures.put_rate(each, "decode_tokens_per_s_per_user", user, user_top, band)
    if top is None:
        each["max_output_tokens_per_s"] = None
    else:
        figures.put_rate(each, "max_output_tokens_per_s", top, top_ceiling, band)
    assert list(one.items()) == list(each.items())  # the same keys, values and order


# --- media.request_within: its two clamps ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.one_of(st.none(), st.just(0), st.integers(1, 40000)),
    output=st.one_of(st.none(), st.just(0), st.integers(1, 40000)),
    text=st.integers(-10, 300000),
)
def test_request_within_is_its_clamps(prompt: int | None, output: int | None, text: int) -> None:
    room = text - prompt if prompt else text // 2
    out = output or clamp(room, 1, DEFAULT_OUTPUT_TOKENS)
    assert request_within(prompt, output, text) == (prompt or clamp(text - out, 1, DEFAULT_PROMPT_TOKENS), out)


# --- the KV sizes formed from the handed shape: shaped_kv_bytes, kv_cache_bytes_and_shape ------------------------


@FAST
@given(
    name=st.sampled_from(MODELS),
    tokens=st.integers(1, 200000),
    bpv=st.sampled_from([0.5, 1, 2]),
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 3]),
    block=st.sampled_from([1, 16, 32, 64]),
    adp=st.booleans(),
    sequences=st.integers(1, 1024),
)
def test_kv_sizes_from_the_shape_are_kv_cache_bytes(
    name: str, tokens: int, bpv: float, tp: int, pp: int, block: int, adp: bool, sequences: int
) -> None:
    model = load_model(name)
    shape = _kv_shape(model, tp, pp, adp)
    one = mm.kv_cache_bytes(
        model, context_tokens=tokens, sequences=1, bytes_per_value=bpv, tp=tp, pp=pp, block_size=block, attention_dp=adp
    )
    every = mm.kv_cache_bytes(
        model,
        context_tokens=tokens,
        sequences=sequences,
        bytes_per_value=bpv,
        tp=tp,
        pp=pp,
        block_size=block,
        attention_dp=adp,
    )
    assert (
        sh.shaped_kv_bytes(shape, tokens, bpv, block)
        == mm.kv_sequence_bytes(model, tokens, bpv, tp, pp, block, adp)
        == one
    )
    assert mm.kv_cache_bytes_and_shape(model, tokens, sequences, bpv, tp, pp, block, adp) == (
        *mm.kv_cache_bytes_one_and_all(
            model,
            context_tokens=tokens,
            sequences=sequences,
            bytes_per_value=bpv,
            tp=tp,
            pp=pp,
            block_size=block,
            attention_dp=adp,
        ),
        shape,
    )
    assert mm.kv_cache_bytes_and_shape(model, tokens, sequences, bpv, tp, pp, block, adp)[:2] == (one, every)


# --- batching._attention_flops: flops' memo read in place, prompt_extra_pairs_factor inline -----------------------


@FAST
@given(
    name=st.sampled_from(MODELS),
    prompt=prompts,
    output=outputs,
    extra=st.sampled_from([0.0, 0.5, 128.0]),
    warm=st.booleans(),
)
def test_attention_flops_are_the_functions(name: str, prompt: int, output: int, extra: float, warm: bool) -> None:
    model, cal = load_model(name), calibration()
    c = dataclasses.replace(_pair(model, GPU, _setup_of(model), cal)[0], prompt_extra_pairs=extra)
    if not warm:
        _ATTENTION_CACHE.clear()
    cached, window_extra = prompt + output // 2, cal.window_attention_extra_tokens
    expected = (
        decode_attention_flops_per_token(model, cached),
        timed_prefill_attention_flops_per_token(model, prompt, window_extra) * prompt_extra_pairs_factor(extra, prompt),
    )
    if not warm:
        _ATTENTION_CACHE.clear()
    assert batching._attention_flops(model, c, prompt, output, cal) == expected


def _setup_of(model: Any) -> batching.ServingSetup:
    return batching.ServingSetup(
        weights_bytes_per_gpu=2e10, kv_bytes_per_sequence_per_gpu=1e8, tp=1, max_num_batched_tokens=8192
    )


# --- batching._dense_steady_between: _mixed_steps' two steps inline ----------------------------------------------


@FAST
@given(
    name=st.sampled_from(("llama-3.1-8b", "mistral-7b-v0.1", "gemma-3-1b")),
    engine=st.sampled_from(ENGINES),
    batch=st.integers(1, 1024),
    prompt=prompts,
    output=outputs,
    more=st.floats(1.0, 50.0),
    budget=st.sampled_from([512, 2048, 8192]),
    graphs=st.sampled_from([(), (1, 2, 4, 8, 16, 32, 64, 128, 256)]),
)
def test_dense_steady_between_is_two_dense_steadies(
    name: str, engine: str, batch: int, prompt: int, output: int, more: float, budget: int, graphs: tuple[int, ...]
) -> None:
    model, cal = load_model(name), calibration()
    setup = dataclasses.replace(
        _setup_of(model), max_num_batched_tokens=budget, graph_batch_sizes=graphs, engine=engine
    )
    c, ci = _pair(model, GPU, setup, cal)
    attn = batching._attention_flops(model, c, prompt, output, cal)
    skip = unsampled_prompt_share(prompt)
    between = output * more
    prefills: list[float] = []  # the prompt tokens of every lean step the two steady states time
    real = batching._dense_step

    def spy(*args: Any) -> Any:
        prefills.append(args[3])
        return real(*args)

    batching._dense_step = spy  # type: ignore[assignment]
    try:
        step, bound, top = batching._dense_steady(setup, c, ci, batch, prompt, output, attn, skip)
        tpot, _, tpot_top = batching._dense_steady(setup, c, ci, batch, prompt, between, attn, skip, False)
        together = batching._dense_steady_between(setup, c, ci, batch, prompt, output, between, attn, skip)
    finally:
        batching._dense_step = real  # type: ignore[assignment]
    assert together == (step, bound, top, tpot, tpot_top)
    # a step carries prefill_chunk_share's chunk (its clamp, inline in both), or every step its share of the prompts
    chunk = prefill_chunk_share(batch, prompt, output, budget)[0]
    assert set(prefills) <= {0.0, chunk, batch * prompt / output, batch * prompt / between}
    assert (step, bound, top) == batching._steady(setup, c, ci, batch, prompt, output, attn)


# --- batching.serving_estimate: the request rules inline ----------------------------------------------------------

_SPIED = ("_dense_steady_between", "_steady", "_ttft", "_dense_steady")


@contextmanager
def _spied() -> Iterator[list[tuple[str, tuple[Any, ...], Any]]]:
    """Record serving_estimate's own calls of the steps it combines (not their calls of one another)."""
    calls: list[tuple[str, tuple[Any, ...], Any]] = []
    originals = {name: getattr(batching, name) for name in _SPIED}
    depth = [0]

    def spy(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any) -> Any:
            depth[0] += 1
            try:
                result = fn(*args)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                calls.append((name, args, result))
            return result

        return wrapped

    try:
        for name, fn in originals.items():
            setattr(batching, name, spy(name, fn))
        yield calls
    finally:
        for name, fn in originals.items():
            setattr(batching, name, fn)


@FAST
@given(p=plans, concurrency=st.integers(1, 1000), small=st.one_of(st.none(), st.integers(1, 5)))
def test_serving_estimate_rules_are_the_functions(p: Plan, concurrency: int, small: int | None) -> None:
    """others_output_tokens, prompt_bound_output_tokens, unsampled_prompt_share, little_ttft_s, request_step_s,
    _saturated_rates and at_least(sat_replica, 1): the estimate's figures are theirs of the steps it combines."""
    assume(p.fits and p.gpu is not None)
    model, cal = p.model, calibration()
    prompt, output = request_tokens(p, None, None)
    setup, _, sat = serving_saturation(p, prompt, output, cal)
    sat = sat if small is None else small  # a saturation of a sequence or a few, below the replicas too
    with _spied() as calls:
        est = batching.serving_estimate(model, GPU, setup, prompt, output, concurrency, sat if sat > 1 else 1, cal)
    sat_replica = at_least((sat if sat > 1 else 1) // setup.replicas, 1)
    assert est.saturation_concurrency == setup.replicas * sat_replica
    per, budget = est.per_replica, setup.max_num_batched_tokens
    bound_output = prompt_bound_output_tokens(per, prompt, output, budget)
    assert est.prompts_queue == (bound_output is not None)
    between = bound_output if bound_output is not None else others_output_tokens(per, output)
    at = next(i for i, call in enumerate(calls) if call[0] == "_ttft")
    before, ttft_call, after = calls[:at], calls[at], calls[at + 1 :]
    assert ttft_call[1][7] == unsampled_prompt_share(prompt)  # skip
    if before[0][0] == "_dense_steady_between":
        assert before[0][1][6] == between and before[0][1][8] == unsampled_prompt_share(prompt)
        step, _, step_top, tpot, tpot_top = before[0][2]
    else:
        step, _, step_top = before[0][2]
        tpot, tpot_top = step, step_top
        if len(before) > 1:
            assert before[1][1][5] == between
            tpot, _, tpot_top = before[1][2]
        else:
            assert between == output
    ttft, ttft_top = ttft_call[2]
    if per > 1:
        ttft, ttft_top = little_ttft_s(ttft, output, step, tpot), little_ttft_s(ttft_top, output, step_top, tpot_top)
    assert (est.ttft_s, est.ttft_s_ceiling) == (ttft, ttft_top)
    step, step_top = request_step_s(step, ttft, tpot, output), request_step_s(step_top, ttft_top, tpot_top, output)
    if output == 1:
        tpot, tpot_top = step, step_top
    assert (est.tpot_s, est.tpot_s_ceiling) == (tpot, tpot_top)
    queued = concurrency > (sat if sat > 1 else 1)
    busy = setup.replicas if queued else concurrency - setup.replicas * (per - 1)
    if busy == setup.replicas:  # every replica at the busiest pace
        assert (est.output_tokens_per_s, est.output_tokens_per_s_ceiling) == (busy * per / step, busy * per / step_top)
    sat_s, sat_top = (after[0][2][0], after[0][2][2]) if after and after[0][1][3] == sat_replica else (step, step_top)
    assert (est.max_output_tokens_per_s, est.max_output_tokens_per_s_ceiling) == batching._saturated_rates(
        setup.replicas * sat_replica, sat_s, sat_top
    )


# --- plan_inference's page (block_size_of), the dense MoE kernel, the hand-over's set and read -------------------


@FAST
@given(name=st.sampled_from(MODELS), engine=st.sampled_from(ENGINES), block=st.sampled_from([None, 1, 16, 32, 64]))
def test_planned_page_is_block_size_of(name: str, engine: str, block: int | None) -> None:
    p = _plan(name, engine, (1, 1, 1), 8, 1000, 100, block)
    asked = Workload(task="inference", engine=engine, block_size_tokens=block)
    assert p.workload.block_size_tokens == block_size_of(asked)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "mistral-7b-v0.1", "gemma-3-1b"])
@pytest.mark.parametrize("weights", [None, "bf16", "fp8"])
def test_a_dense_model_has_no_moe_kernel(name: str, weights: str | None) -> None:
    model = load_model(name)
    assert model.moe is None
    assert trtllm_moe_backend(model, GPU, weights) == vllm_moe_backend(model, weights, None, GPU) == ""


def _performance(p: Plan) -> str:
    return json.dumps(plan_performance(p))  # keys in order: the JSON as written


@FAST
@given(p=plans)
def test_handed_estimate_is_the_derived_one(p: Plan) -> None:
    """Through the hand-over (plan()'s slot, read in place by plan_performance) and through the fallback (a copy
    of the plan: dataclasses.replace) the estimate is the same JSON; the hand-over's parts are each the original's."""
    terms = sh.handed(p)  # plan.py's inline hand_over, read by the function
    # every model sampled is a text model: handed over where the plan has a budget and no recurrent state
    assert (terms is not None) == (p.budget_bytes is not None and p.model.recurrent is None)
    used: list[object] = []
    real = estimate.handed_context

    def spy(plan_: Plan, cal: Any, terms_: Any) -> Any:
        used.append(terms_)
        return real(plan_, cal, terms_)

    estimate.handed_context = spy  # type: ignore[assignment]
    try:
        through = _performance(p)
    finally:
        estimate.handed_context = real  # type: ignore[assignment]
    timed = p.gpu is not None and p.fits
    assert used == ([terms] if terms is not None and timed else [])  # estimate.py's inline read
    copy = dataclasses.replace(p)
    assert sh.handed(copy) is None
    assert through == _performance(copy)
    if not timed:
        return
    cal = calibration()
    prompt, output = request_tokens(p, None, None)
    performance = json.loads(through)
    assert (performance["prompt_tokens"], performance["output_tokens"]) == (prompt, output)  # inline request_tokens
    out: dict[str, Any] = {}
    lines: list[str] = []
    figures.put_evidence(context_of(p, cal).evidence, out, lines)  # what serving_performance writes with it
    assert performance.get("evidence") == out.get("evidence")
    assert all(line in performance["assumptions"] for line in lines)
    if terms is None:
        return
    prompt, output = request_tokens(p, None, None)
    assert handed_memos.handed_context(p, cal, terms) == context_of(p, cal)
    setup = serving_setup(p, prompt, output, handed=terms)
    assert setup == serving_setup(p, prompt, output)  # the KV size in one-token pages: kv_bytes_per_gpu's
    assert handed_memos.handed_pair(terms, p.model, p.gpu, setup, cal) == _pair(p.model, p.gpu, setup, cal)
    limits = (terms.max_num_batched_tokens, terms.max_num_seqs)
    assert serving_saturation(p, prompt, output, cal, handed=terms) == serving_saturation(p, prompt, output, cal)
    assert full_length_concurrency(p, setup, prompt + output, limits, terms) == full_length_concurrency(
        p, setup, prompt + output, limits
    )
    # serving_setup's MoE kernel: a dense model's is "" without asking the engines' functions, which answer the same
    w, weights = p.workload, p.precision.weights
    assert setup.moe_backend == (
        trtllm_moe_backend(p.model, p.gpu, weights, w.moe_backend)
        if w.engine == "trtllm"
        else vllm_moe_backend(p.model, weights, w.moe_backend, p.gpu)
        if w.engine == "vllm"
        else ""
    )


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-30b-a3b"])
@pytest.mark.parametrize("engine", ENGINES)
def test_handed_memos_tell_apart_what_their_keys_hold(name: str, engine: str) -> None:
    """handed_context and handed_pair find the context and step constants by the engine memory's identity: one
    layout planned with a BF16 then an FP8 KV cache (the same engine memory), each estimated with the calibration
    and with the user's efficiencies, gets through the hand-over what the fallback derives."""
    for kv in (None, "fp8", None):
        for efficiencies in ({}, {"mfu": 0.4, "mbu": 0.7}, {}):
            p = _plan(name, engine, (2, 2, 1), 64, 3000, 300, None, kv)
            assert sh.handed(p) is not None
            through = json.dumps(plan_performance(p, **efficiencies))
            assert through == json.dumps(plan_performance(dataclasses.replace(p), **efficiencies))
            # performance_calibration, inline in plan_performance
            given = performance_calibration(None, efficiencies.get("mfu"), efficiencies.get("mbu"))
            figures_of = {k: v for k, v in json.loads(through).items() if k != "assumptions"}  # those name the mfu
            assert figures_of == {k: v for k, v in plan_performance(p, cal=given).items() if k != "assumptions"}
    p = _plan(name, engine, (2, 2, 1), 64, 3000, 300)
    sized = plan_performance(p, prompt_tokens=5000, output_tokens=7)  # request_tokens, inline in plan_performance
    assert (sized["prompt_tokens"], sized["output_tokens"]) == request_tokens(p, 5000, 7)


requests = st.tuples(
    st.sampled_from(MODELS),
    st.sampled_from(ENGINES),
    st.sampled_from(LAYOUTS),
    st.integers(1, 1000),
    prompts,
    outputs,
    st.none(),
    st.sampled_from([None, "fp8"]),
)


@settings(max_examples=20, deadline=None)
@given(a=requests, b=requests)
def test_an_older_plan_gets_its_own_figures(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    """After plan A then plan B (the slot holds B), A's estimate is A's (the fallback, never B's terms): the same
    JSON as A's estimate made while the slot held A."""
    older = _plan(*a)
    first = _performance(older)  # through the hand-over
    newer = _plan(*b)
    # the slot holds B's hand-over (or still A's where B, a hybrid with recurrent state, hands none over)
    assert (sh.handed(older) is None) != (sh.handed(newer) is None) or sh.handed(older) is None
    _performance(newer)
    assert _performance(older) == first


def test_two_threads_planning_at_once_get_their_own_figures() -> None:
    """Threads planning and estimating at once (the interpreter switching between them as often as it can) each
    get their own plan's figures: a thread never reads another plan's hand-over as its own."""
    import sys
    import threading

    requests = [
        ("llama-3.1-8b", "vllm", (1, 1, 1), 32, 4000, 200),
        ("qwen3-30b-a3b", "trtllm", (2, 2, 1), 300, 500, 1),
        ("mistral-7b-v0.1", "sglang", (2, 1, 1), 7, 20000, 50),
        ("gemma-3-1b", "vllm", (1, 1, 1), 900, 100, 900),
    ]
    alone = [_performance(_plan(*r)) for r in requests]  # each planned and estimated with no other thread
    failures: list[str] = []
    barrier = threading.Barrier(len(requests))

    def run(i: int) -> None:
        barrier.wait()
        for _ in range(40):
            if _performance(_plan(*requests[i])) != alone[i]:
                failures.append(f"{requests[i][0]}: figures of another plan")
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures


# --- the capacity's clamps: plan_inference's at_least, saturation_concurrency's and full_length_concurrency's ------


@FAST
@given(p=plans)
def test_capacity_clamps_are_the_functions(p: Plan) -> None:
    """A text model's concurrency figures are clamp and at_least of the plan's own KV sizes: the sequences its cache
    holds (plan_inference), the saturation at the average length and at the full length (serving_capacity)."""
    assume(p.budget_bytes is not None and p.model.recurrent is None)
    b, lay = p.breakdown, p.layout
    capacity = b["kv_cache_capacity_bytes"]
    assert capacity >= 0
    assert p.max_concurrency == capacity // at_least(b["kv_per_sequence_bytes"], 1) * lay.dp
    if not p.fits:
        return
    prompt, output = request_tokens(p, None, None)
    performance = plan_performance(dataclasses.replace(p))  # the fallback: serving_capacity's own arithmetic
    assume(performance["kv_reservation"] == "average")  # a paged cache (SGLang's admission and reservations aside)
    setup = serving_setup(p, prompt, output)
    cap = p.workload.max_num_seqs or 0  # the engine's sequence cap as planned
    average = clamp(int(capacity // at_least(setup.kv_bytes_per_sequence_per_gpu, 1.0)), 0, cap) * setup.replicas
    assert performance["saturation_concurrency"] == average
    if average >= 1:
        full = kv_bytes_per_gpu(p, prompt + output, block_size_of(p.workload))
        held = clamp(int(capacity // at_least(float(full), 1.0)), 0, cap) * setup.replicas
        assert performance["saturation_full_length_concurrency"] == min(average, held)
