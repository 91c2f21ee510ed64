"""AnchorGPU benchmarks (not timed tests). Run from the repository root:

    .venv/bin/python benchmarks/run.py

Prints, measured in the same run:

(a) configurations evaluated per second by our vectorized sweep vs llm-analysis evaluating the same kind
    of configuration one by one (llm-analysis runs unmodified in its own venv, ``.bench-venv``; set it up
    with ``python3 -m venv .bench-venv && .bench-venv/bin/pip install --no-deps llm-analysis fire termcolor``);
    and the wall time of the full-catalog sweep for a 70B serving workload (goal: < 0.5 s);
(b) ``anchorgpu plan`` cold start (process start to answer) minus ``python -c pass`` (goal: < 0.5 s),
    and the same for the ``anchorgpu recommend`` done-when command (goal: answer < 1 s).

Timings are the median of several repetitions; the machine's load is printed with them.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PY = ROOT / ".venv" / "bin" / "python"
BENCH_PY = ROOT / ".bench-venv" / "bin" / "python"
ANCHORGPU = ROOT / ".venv" / "bin" / "anchorgpu"

# our catalog GPU id -> llm-analysis gpu config (the GPUs both know); our weight format -> its dtype config
LLM_ANALYSIS_GPUS = {"a100-80gb-sxm": "a100-sxm-80gb", "h100-sxm": "h100-sxm-80gb", "h100-pcie": "h100-pcie-80gb"}
LLM_ANALYSIS_DTYPES = {"bf16": "w16a16e16", "fp8": "w8a8e16", "int4-awq": "w4a16e16"}


def _median_s(fn, repeat: int) -> float:
    """Median wall time of ``fn``; the matching median CPU time is kept in ``_median_s.cpu``."""
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    _median_s.cpu = statistics.median(cpu)  # type: ignore[attr-defined]
    return statistics.median(times)


def _process_s(argv: list[str], repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of the child) for running ``argv`` to completion.

    CPU time (user + system of the child) is what the command costs when it has a core to itself; on a
    busy machine the wall time also includes waiting for a core. The child runs with its bytecode cached, as
    an installed package does.
    """
    walls, cpus = [], []
    # as an installed package runs: with its bytecode cached (pip compiles a wheel's modules when it installs
    # them). A machine that sets PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every start;
    # the cache goes to a folder of its own, outside the tree
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "anchorgpu-bench-pycache")
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)  # warm caches
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


def sweep_benchmark(repeat: int) -> dict[str, object]:
    from anchorgpu.architectures import load_model
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner import Workload
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    model = load_model("llama-3.1-70b")
    shapes = shapes_from_catalog(load_catalog().offerings)
    done_when = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))
    ladder = SweepSpec(workload=Workload(task="inference", context_tokens=8192))  # the batch ladder as well
    result = sweep(model, shapes, done_when)
    ladder_result = sweep(model, shapes, ladder)
    t_done = _median_s(lambda: sweep(model, shapes, done_when), repeat)
    cpu_done = _median_s.cpu  # type: ignore[attr-defined]
    t_ladder = _median_s(lambda: sweep(model, shapes, ladder), repeat)
    cpu_ladder = _median_s.cpu  # type: ignore[attr-defined]
    return {"model": model, "result": result, "ladder": ladder_result, "t_done": t_done, "t_ladder": t_ladder,
            "cpu_done": cpu_done, "cpu_ladder": cpu_ladder}


def llm_analysis_job(model, result, sample: int, passes: int = 1) -> dict[str, object]:
    """A sample of our own configurations, restricted to the GPUs llm-analysis knows, in its vocabulary."""
    c = result.columns
    candidates = [i for i in range(result.evaluated)  # configurations that fit, on GPUs llm-analysis knows
                  if c["fits"][i] and result.shapes[int(c["shape"][i])].gpu.name in LLM_ANALYSIS_GPUS]
    rng = random.Random(42)
    picked = rng.sample(candidates, min(sample, len(candidates)))
    configs = []
    for i in picked:
        row = result.row(i)
        configs.append({
            "gpu_name": LLM_ANALYSIS_GPUS[row["gpu"]], "dtype_name": LLM_ANALYSIS_DTYPES[row["weights"]],
            "tp": row["tp"], "pp": row["pp"], "dp": row["dp"], "batch": -(-row["concurrency"] // row["dp"]),
            "seq_len": result.prompt_tokens, "tokens": result.output_tokens,
            "kv_bytes": 2 if row["kv_cache"] == "bf16" else 1,
        })
    model_config = {
        "name": model.name, "num_layers": model.num_layers, "n_head": model.num_attention_heads,
        "hidden_dim": model.hidden_size, "vocab_size": model.vocab_size, "max_seq_len": model.max_context_tokens,
        "num_key_value_heads": model.num_kv_heads, "model_type": "llama",
        # llm-analysis refuses an MLP width that is not a whole multiple of the hidden size (28,672 / 8,192 =
        # 3.5); its own Llama-2-70B config uses 4 x hidden, so we do too. The timing does not depend on it.
        "ffn_embed_dim": -(-model.intermediate_size // model.hidden_size) * model.hidden_size,
    }
    return {"model_config": model_config, "configs": configs, "passes": passes}


def run_llm_analysis(job: dict[str, object]) -> dict[str, float] | None:
    if not BENCH_PY.exists():
        return None
    worker = ROOT / "benchmarks" / "_llm_analysis_worker.py"
    out = subprocess.run([str(BENCH_PY), str(worker)], input=json.dumps(job), capture_output=True, text=True,
                         check=True, cwd=ROOT)
    data: dict[str, float] = json.loads(out.stdout)
    return data


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    repeat = int(os.environ.get("BENCH_REPEAT", "7"))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min)")

    s = sweep_benchmark(repeat)
    result, ladder = s["result"], s["ladder"]
    ours_rate = ladder.evaluated / s["t_ladder"]
    ours_cpu_rate = ladder.evaluated / s["cpu_ladder"]
    done_rate = result.evaluated / s["t_done"]
    done_cpu_rate = result.evaluated / s["cpu_done"]
    print("\n(a) sweep throughput (wall time; CPU time in brackets)")
    print(f"  full-catalog 70B serving sweep (context 8192, concurrency 32): {result.evaluated:,} configurations "
          f"in {s['t_done'] * 1e3:.1f} ms [{s['cpu_done'] * 1e3:.1f} ms CPU] (goal < 500 ms) -> "
          f"{done_rate:,.0f} configurations/s [{done_cpu_rate:,.0f}]")
    top = max(c for c, _ in ladder.concurrency_contexts)  # 512, or past it where a layout runs more (sweep_ladder)
    print(f"  same sweep over batch 1..{top:,}: {ladder.evaluated:,} configurations in {s['t_ladder'] * 1e3:.1f} ms "
          f"[{s['cpu_ladder'] * 1e3:.1f} ms CPU] -> {ours_rate:,.0f} configurations/s [{ours_cpu_rate:,.0f}]")
    job = llm_analysis_job(s["model"], ladder, int(os.environ.get("BENCH_LLM_ANALYSIS_SAMPLE", "300")), passes=repeat)
    theirs = run_llm_analysis(job)
    if theirs is None:
        print(f"  llm-analysis: not installed in {BENCH_PY.parent.parent} (see the module docstring)")
    else:
        their_rate = theirs["evaluated"] / theirs["seconds"]
        their_cpu_rate = theirs["evaluated"] / theirs["cpu_seconds"]
        refused = sum(1 for x in theirs["decode_tokens_per_sec"] if x is None)
        print(f"  llm-analysis, {theirs['evaluated']} of the same configurations one by one: {theirs['seconds']:.2f} s "
              f"[{theirs['cpu_seconds']:.2f} s CPU] -> {their_rate:,.0f} configurations/s [{their_cpu_rate:,.0f}] "
              f"({theirs['seconds'] / theirs['evaluated'] * 1e3:.2f} ms each; it refused {refused} as not fitting)")
        print(f"  RATIO per configuration, ours / llm-analysis: {ours_rate / their_rate:,.0f}x wall, "
              f"{ours_cpu_rate / their_cpu_rate:,.0f}x CPU (done-when grid alone: {done_rate / their_rate:,.0f}x wall, "
              f"{done_cpu_rate / their_cpu_rate:,.0f}x CPU; goal >= 1000x)")

    recommend_benchmark(repeat, None if theirs is None else theirs["cpu_seconds"] / theirs["evaluated"])

    print("\n(b) cold start (process start to answer; child CPU time in brackets)")
    base, base_cpu = _process_s([str(VENV_PY), "-c", "pass"], repeat)
    plan_s, plan_cpu = _process_s([str(ANCHORGPU), "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--context",
                                   "8k", "--concurrency", "32", "--json"], repeat)
    rec_s, rec_cpu = _process_s([str(ANCHORGPU), "recommend", "llama-3.1-70b", "--task", "inference", "--context", "8192",
                                 "--concurrency", "32", "--term", "1month"], max(3, repeat // 2))
    print(f"  python -c pass:                  {base * 1e3:6.0f} ms [{base_cpu * 1e3:4.0f} ms CPU]")
    print(f"  anchorgpu plan ... --json:       {plan_s * 1e3:6.0f} ms [{plan_cpu * 1e3:4.0f} ms CPU] -> over python: "
          f"{(plan_s - base) * 1e3:.0f} ms wall, {(plan_cpu - base_cpu) * 1e3:.0f} ms CPU (goal < 500 ms); "
          f"RATIO {plan_s / base:.1f}x python -c pass")
    print(f"  anchorgpu recommend (done-when): {rec_s * 1e3:6.0f} ms [{rec_cpu * 1e3:4.0f} ms CPU] (goal < 1000 ms)")
    speed_benchmark(repeat, job)
    if os.environ.get("BENCH_AIC", "1") != "0":  # about 3 minutes: AIConfigurator takes ~2 s per estimate
        import aiconfigurator_compare

        aiconfigurator_compare.main()
    print(f"\nload average after the run: {os.getloadavg()[0]:.2f}")
    return 0


def recommend_benchmark(repeat: int, their_cpu_s: float | None) -> None:
    """``recommend`` end to end in process (sweep, pricing of every offering and server count, ranking, Pareto
    front, JSON), per configuration it evaluated, against one llm-analysis evaluation from (a)."""
    from datetime import UTC, datetime

    from anchorgpu.architectures import load_model
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner import Workload
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import recommend, recommendation_to_json

    model, catalog = load_model("llama-3.1-70b"), load_catalog()
    now = datetime(2026, 12, 1, tzinfo=UTC)
    done_when = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))
    ladder = SweepSpec(workload=Workload(task="inference", context_tokens=8192))
    print("  recommend end to end, in process (sweep, pricing, ranking, JSON; CPU time per configuration evaluated):")
    for label, spec, lower, floor, ttft in (
            ("done-when, the shipped precision (the CLI's default)", done_when, False, None, None),
            ("done-when, lower precisions allowed", done_when, True, None, None),
            ("the batch ladder, lower precisions allowed", ladder, True, None, None),
            # each layout also at the most users it serves at the floor (planner.sweep_floor)
            ("the batch ladder under 33.3 tok/s a user, lower precisions allowed", ladder, True, 33.3, None),
            # and within a first-token limit too (recommend.limits; the floor rung's search times the TTFT as well)
            ("the batch ladder under 20 tok/s a user and a 2 s first token, lower precisions allowed", ladder, True,
             20.0, 2.0)):
        rec = recommend(model, spec, catalog, "1month", now, lower_precision=lower, min_tokens_per_s_per_user=floor,
                        max_ttft_s=ttft)
        recommendation_to_json(rec)
        _median_s(lambda spec=spec, lower=lower, floor=floor, ttft=ttft: recommendation_to_json(
            recommend(model, spec, catalog, "1month", now, lower_precision=lower, min_tokens_per_s_per_user=floor,
                      max_ttft_s=ttft)), repeat)
        cpu = _median_s.cpu  # type: ignore[attr-defined]
        each = cpu / rec.evaluated
        ratio = "" if their_cpu_s is None else f" -> RATIO {their_cpu_s / each:,.0f}x (goal >= 1000x)"
        print(f"    {label}: {rec.evaluated:,} configurations in {cpu * 1e3:.1f} ms CPU, {each * 1e6:.2f} us "
              f"each{ratio}")


class _Interleaved:
    """llm-analysis in its venv, kept running: each :meth:`pass_cpu_s` is one pass over the job's configurations,
    so the benchmark can alternate its own timings with llm-analysis's under the same load."""

    def __init__(self, job: dict[str, object]) -> None:
        worker = ROOT / "benchmarks" / "_llm_analysis_worker.py"
        self.proc = subprocess.Popen([str(BENCH_PY), str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=ROOT)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({**job, "interactive": True}) + "\n")
        self.proc.stdin.flush()

    def pass_cpu_s(self) -> float:
        """CPU seconds per configuration of one pass."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("pass\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        return float(answer["cpu_seconds"]) / int(answer["evaluated"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def speed_benchmark(repeat: int, job: dict[str, object] | None) -> None:
    """(c) the calibrated speed model: one plan with its speed estimate, a layout chosen for the user, and a
    70B training ``recommend`` as a process; the first two each against one llm-analysis evaluation of (a)'s
    configurations, the two sides timed in turn (at least 15 rounds of one llm-analysis pass, then 1,000 of our
    calls each, a round about as long as a pass), with the median of the per-round ratios and the ratio of each
    side's fastest round (a shared machine only ever slows a round down)."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")

    # each call builds its inputs afresh, as a caller with a new question would (and as llm-analysis takes its
    # arguments): nothing memoised on the identity of a workload or layout can answer a repeated call
    def one() -> None:
        plan_performance(plan(model, Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="full",
                                              global_batch_tokens=2**22),
                              layout=Layout(gpus=64, tp=8, pp=4, zero=1, virtual_stages=5), gpu=gpu))

    def serve() -> None:  # one of the configurations llm-analysis evaluates in (a)
        plan_performance(plan(model, Workload(task="inference", context_tokens=8192, concurrency=32),
                              layout=Layout(gpus=4, tp=4, pp=1, dp=1), gpu=gpu, precision=PrecisionPlan(weights="fp8")))

    def chosen() -> None:
        plan_performance(plan(model, Workload(task="train", seq_tokens=4096), layout=Layout(gpus=512), gpu=gpu))

    moe = load_model("qwen3-235b-a22b")

    def chosen_moe() -> None:  # EP sizes and the MoE recompute level widen a mixture of experts' search
        plan_performance(plan(moe, Workload(task="train", seq_tokens=4096), layout=Layout(gpus=256), gpu=gpu))

    def chosen_count() -> None:  # no GPU count: the fewest GPUs that hold the job, and the layout on them
        plan_performance(plan(model, Workload(task="train"), gpu=gpu))

    def ours_cpu_s(fn, n: int = 1000) -> float:  # a round about as long as an llm-analysis pass
        fn()
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n

    peer = _Interleaved(job) if job is not None and BENCH_PY.exists() else None
    theirs: list[float] = []
    mine: dict[str, list[float]] = {"train": [], "serve": []}
    try:
        for _ in range(max(15, 2 * repeat)):
            if peer is not None:
                theirs.append(peer.pass_cpu_s())
            mine["train"].append(ours_cpu_s(one))
            mine["serve"].append(ours_cpu_s(serve))
    finally:
        if peer is not None:
            peer.close()
    t_chosen = _median_s(chosen, repeat)
    c_chosen = _median_s.cpu  # type: ignore[attr-defined]
    t_moe = _median_s(chosen_moe, repeat)
    c_moe = _median_s.cpu  # type: ignore[attr-defined]
    t_count = _median_s(chosen_count, repeat)
    c_count = _median_s.cpu  # type: ignore[attr-defined]
    print("\n(c) speed model (in process, CPU time; each round times one llm-analysis pass over (a)'s configurations, "
          "then 1,000 of our calls)")
    if theirs:
        print(f"  llm-analysis, one configuration: median {statistics.median(theirs) * 1e3:.3f} ms CPU "
              f"(rounds {min(theirs) * 1e3:.3f}-{max(theirs) * 1e3:.3f})")
    for label, key in (("explicit 70B training layout (TP8 PP4 v5 ZeRO-1, 64 H100)", "train"),
                       ("explicit 70B serving layout (TP4 FP8, 8k context, 32 users)", "serve")):
        cpu = mine[key]
        ratio = ""
        if theirs:
            ratios = [t / m for t, m in zip(theirs, cpu, strict=True)]
            ratio = (f" -> RATIO median {statistics.median(ratios):,.1f}x (rounds {min(ratios):,.1f}-{max(ratios):,.1f}x), "
                     f"fastest round of each {min(theirs) / min(cpu):,.1f}x (goal >= 5x)")
        print(f"  plan() + speed estimate, {label}: median {statistics.median(cpu) * 1e3:.3f} ms CPU, fastest "
              f"{min(cpu) * 1e3:.3f}{ratio}")
    print(f"  plan() with the layout chosen for the user (70B, 512 H100): {t_chosen * 1e3:.1f} ms "
          f"[{c_chosen * 1e3:.1f} ms CPU] (goal < 20 ms)")
    print(f"  plan() with the layout chosen for the user (Qwen3-235B-A22B, 256 H100): {t_moe * 1e3:.1f} ms "
          f"[{c_moe * 1e3:.1f} ms CPU] (goal < 20 ms)")
    print(f"  plan() with the GPU count and layout chosen for the user (70B training on H100: 16 GPUs): "
          f"{t_count * 1e3:.1f} ms [{c_count * 1e3:.1f} ms CPU]")
    try:
        rec_s, rec_cpu = _process_s([str(ANCHORGPU), "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e11",
                                     "--term", "1month", "--json"], max(3, repeat // 2))
    except subprocess.CalledProcessError as exc:
        print(f"  anchorgpu recommend llama-3.1-70b --task train: exited {exc.returncode} (run it by hand to see why)")
        return
    print(f"  anchorgpu recommend llama-3.1-70b --task train (process): {rec_s * 1e3:.0f} ms [{rec_cpu * 1e3:.0f} ms CPU]"
          " (goal < 1000 ms)")


if __name__ == "__main__":
    raise SystemExit(main())
