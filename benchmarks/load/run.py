"""Load, race and fault harness: AnchorGPU's exactly-once booking under concurrent clients and faults.

    .venv/bin/python benchmarks/load/run.py                 # full run: 64 clients, 30 s of load, faults
    .venv/bin/python benchmarks/load/run.py --reduced       # the CI size: 16 clients, 6 s of load (under a minute in all)
    .venv/bin/python benchmarks/load/run.py --hostile       # booking p99 without, then with, unauthenticated attackers

What it does (loopback only; bounded in time and requests; stops every process it started):

1. creates a fresh PostgreSQL database on 127.0.0.1:5432 (user postgres, trust auth), starts
   ``anchorgpu serve --workers 2`` on it on a free port, and sets the race offering's stock low with
   ``anchorgpu stock set`` (the bulk offering's high);
2. creates one account per client (the accounts service, as ``anchorgpu accounts create`` does);
3. measures the stack's own ceiling: the same number of clients on ``GET /v1/healthz``;
4. runs the booking load (see :mod:`load_clients` for the roles) and, while it runs, injects faults:
   ``kill -9`` of one API worker (the uvicorn supervisor must replace it: checked), every PostgreSQL
   connection of the database terminated (``pg_terminate_backend``, also those mid-transaction), and
   clients hanging up before their answers; every client retries with the same key;
5. replays every purchase-like request once more, probes every account's view of another's data, and
   checks the database against the clients' record (:mod:`load_checks`).

Prints bookings/s and p50/p99 latency beside GET /healthz under the same load, the faults, and each
check; exit status 0 only when every check holds. ``--json-out FILE`` writes the same as JSON.

``--hostile`` (no faults): the booking load runs twice for ``--seconds`` each, first alone (baseline), then
while the unauthenticated clients of :mod:`load_hostile` send every pattern an attacker without a key can
send; it reports the quote and booking p99 of each phase and their ratio, and fails when a ratio is over
``--max-ratio`` (2 by default: issue 13's target).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import load_checks
import load_hostile
import load_server
from load_clients import (
    BULK,
    BULK_STOCK,
    RACE,
    RACE_STOCK,
    Budget,
    Caller,
    Clients,
    Record,
    cross_account_probe,
    hammer_healthz,
)


@dataclass
class Options:
    clients: int = 64
    seconds: float = 30.0
    requests: int = 50_000
    healthz_seconds: float = 8.0
    grace_s: float = 45.0
    faults: bool = True
    admin_url: str = load_server.DEFAULT_ADMIN_URL
    keep_db: bool = False
    json_out: Path | None = None
    seed: int = 8
    hostile: bool = False
    hostile_tasks: int = 4
    held_connections: int = 200
    max_ratio: float = 2.0
    hostile_patterns: tuple[str, ...] = load_hostile.PATTERNS


@dataclass
class Fault:
    name: str
    at_s: float
    detail: dict[str, Any] = field(default_factory=dict)


def parse(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--clients", type=int, help="concurrent clients (default 64; 16 with --reduced)")
    p.add_argument("--seconds", type=float, help="seconds of booking load (default 30; 6 with --reduced)")
    p.add_argument("--requests", type=int, help="at most this many requests in each load phase (default 50000)")
    p.add_argument("--reduced", action="store_true", help="the CI size: 16 clients, 6 s of load, 2 s of healthz")
    p.add_argument("--no-faults", action="store_true", help="load only, no injected faults")
    p.add_argument("--postgres", default=load_server.DEFAULT_ADMIN_URL, help="admin URL of the PostgreSQL server")
    p.add_argument("--keep-db", action="store_true", help="keep the database afterwards (its name is printed)")
    p.add_argument("--json-out", type=Path, help="write the figures and the checks as JSON to this file")
    p.add_argument("--hostile", action="store_true",
                   help="baseline phase, then the same load with unauthenticated attackers; implies --no-faults")
    p.add_argument("--hostile-tasks", type=int, default=4, help="concurrent tasks per hostile pattern (default 4)")
    p.add_argument("--held-connections", type=int, default=200, help="connections the held_open pattern keeps open")
    p.add_argument("--hostile-patterns", default=",".join(load_hostile.PATTERNS),
                   help="comma-separated patterns to send (default all: " + ", ".join(load_hostile.PATTERNS) + ")")
    p.add_argument("--max-ratio", type=float, default=2.0, help="largest hostile/baseline p99 ratio that passes (default 2)")
    a = p.parse_args(argv)
    o = Options(clients=16, seconds=6.0, requests=6_000, healthz_seconds=2.0, grace_s=30.0) if a.reduced else Options()
    o.clients = a.clients or o.clients
    o.seconds = a.seconds or o.seconds
    o.requests = a.requests or o.requests
    if o.clients < 5 or o.seconds <= 0 or o.requests <= 0:
        p.error("--clients must be at least 5 (one per role); --seconds and --requests positive")
    if o.clients > 512 or o.seconds > 600:
        p.error("--clients at most 512 and --seconds at most 600 (the harness is bounded)")
    o.faults = not a.no_faults and not a.hostile
    o.hostile = a.hostile
    if not 1 <= a.hostile_tasks <= 64 or not 0 <= a.held_connections <= 2000:
        p.error("--hostile-tasks 1-64 and --held-connections 0-2000 (the harness is bounded)")
    o.hostile_tasks, o.held_connections, o.max_ratio = a.hostile_tasks, a.held_connections, a.max_ratio
    o.hostile_patterns = tuple(x.strip() for x in a.hostile_patterns.split(",") if x.strip())
    unknown = sorted(set(o.hostile_patterns) - set(load_hostile.PATTERNS))
    if unknown or not o.hostile_patterns:
        p.error(f"--hostile-patterns: unknown {unknown}; choose among {', '.join(load_hostile.PATTERNS)}")
    o.admin_url = a.postgres
    o.keep_db = a.keep_db
    o.json_out = a.json_out
    return o


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _create_callers(database_url: str, n: int) -> list[Caller]:
    from anchorgpu.accounts import create_account
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings

    store = bootstrap(Settings(database_url=database_url), migrate=False, seed=False, purge_keys=False)
    try:
        return [Caller(*create_account(store.uow_factory(), f"load client {i}", clock=store.clock)) for i in range(n)]
    finally:
        store.dispose()


async def _inject_faults(server: load_server.Server, options: Options, database: str, began: float,
                         faults: list[Fault]) -> None:
    """kill -9 one worker at 25 % of the load, drop every database connection at 55 % (three times)."""
    await asyncio.sleep(options.seconds * 0.25)
    victim = server.kill_one_worker()
    at = time.monotonic() - began
    recovery_s, pids = await asyncio.to_thread(server.wait_replaced, victim)
    faults.append(Fault("kill -9 one API worker", at, {"victim_pid": victim, "workers_after": pids,
                                                       "recovered_in_s": round(recovery_s, 2), "recovered_by": "uvicorn supervisor"}))
    await asyncio.sleep(max(0.0, options.seconds * 0.55 - (time.monotonic() - began)))
    terminated = in_tx = 0
    at = time.monotonic() - began
    for _ in range(3):
        t, x = await asyncio.to_thread(load_server.terminate_backends, options.admin_url, database)
        terminated, in_tx = terminated + t, in_tx + x
        await asyncio.sleep(0.25)
    faults.append(Fault("pg_terminate_backend on every connection", at,
                        {"connections_terminated": terminated, "of_which_in_transaction": in_tx}))


async def _load(server: load_server.Server, options: Options, callers: list[Caller], database: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=options.clients * 2, max_keepalive_connections=options.clients * 2)
    async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=60) as http:
        health = Record()
        budget = Budget(options.healthz_seconds, options.requests, grace_s=5)
        began = time.monotonic()
        await hammer_healthz(http, options.clients, budget, health)
        healthz_s = time.monotonic() - began

        phases: list[dict[str, Any]] = []
        if options.hostile:  # the baseline phase: the same load alone, measured on its own
            baseline = Record()
            budget = Budget(options.seconds, options.requests, grace_s=options.grace_s)
            began = time.monotonic()
            await Clients(http, callers, budget, baseline, seed=options.seed).run()
            phases.append(_phase("baseline", baseline, time.monotonic() - began))

        record = Record()
        budget = Budget(options.seconds, options.requests, grace_s=options.grace_s)
        clients = Clients(http, callers, budget, record, seed=options.seed + 1 if options.hostile else options.seed)
        faults: list[Fault] = []
        hostile_record = load_hostile.HostileRecord()
        began = time.monotonic()
        work = [clients.run()]
        if options.faults:
            work.append(_inject_faults(server, options, database, began, faults))
        if options.hostile:
            work.append(_attack(server.base_url, options, hostile_record))
        await asyncio.gather(*work)
        load_s = time.monotonic() - began
        sent_in_load = record.requests
        if options.hostile:
            phases.append(_phase("hostile", record, load_s))
            _merge_into(record, baseline)
            sent_in_load = record.requests
            load_s += phases[0]["seconds"]

        # Replay every purchase-like request once more: each must answer exactly as before.
        final_replays = [r for r in record.keyed if r.resolved]
        sem = asyncio.Semaphore(options.clients)
        by_id = {c.account_id: c for c in callers}

        async def replay(r: Any) -> None:
            async with sem:
                again = type(r)(**{**r.__dict__, "answers": []})
                await clients.keyed(by_id[r.account_id], again, allow_hang_up=False)
                r.answers.extend(again.answers)
                if not (again.answers and again.answers[-1].replayed):
                    record.violations.append(f"{r.operation} key {r.key}: a late retry was not answered as a replay")

        budget.grace_deadline = time.monotonic() + options.grace_s
        await asyncio.gather(*(replay(r) for r in final_replays))
    return {"health": health, "healthz_s": healthz_s, "record": record, "load_s": load_s, "faults": faults,
            "sent_in_load": sent_in_load, "phases": phases, "hostile": hostile_record}


async def _attack(base_url: str, options: Options, record: load_hostile.HostileRecord) -> None:
    """The attackers, in a process of their own (as on another machine, but sharing these cores), for the phase."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(load_hostile.__file__)), base_url, str(options.seconds), str(options.hostile_tasks),
        str(options.held_connections), ",".join(options.hostile_patterns), stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), options.seconds + 60)
    got = json.loads(out.decode().strip().splitlines()[-1])
    for status, n in got["statuses"].items():
        record.statuses[status] += n
    record.requests, record.held_peak, record.cpu_s = got["requests"], got["held_peak"], got["cpu_s"]


def _phase(name: str, record: Record, seconds: float) -> dict[str, Any]:
    """Latency figures of one phase: the quote and the booking (POST /v1/allocations) of authenticated buyers."""
    quote, buy = record.latencies["quote"], record.latencies["buy"]
    return {"phase": name, "seconds": round(seconds, 2), "quotes": len(quote), "buys": len(buy),
            "quote_p50_ms": round(_pct(quote, 0.5) * 1000, 1), "quote_p99_ms": round(_pct(quote, 0.99) * 1000, 1),
            "buy_p50_ms": round(_pct(buy, 0.5) * 1000, 1), "buy_p99_ms": round(_pct(buy, 0.99) * 1000, 1)}


def _merge_into(record: Record, other: Record) -> None:
    """Add the baseline phase's record to the hostile phase's, so the checks cover every request of the run."""
    record.keyed[:0] = other.keyed
    record.quotes.update(other.quotes)
    record.reuse_checks.extend(other.reuse_checks)
    record.violations.extend(other.violations)
    for kind, values in other.latencies.items():
        record.latencies[kind].extend(values)
    for status, n in other.statuses.items():
        record.statuses[status] += n
    record.requests += other.requests
    record.race_wins += other.race_wins
    record.race_refusals += other.race_refusals


def _hostile_report(out: dict[str, Any], max_ratio: float) -> tuple[dict[str, Any], list[str]]:
    """The baseline and hostile phases, their p99 ratios, the attackers' answers; and the target's breaches."""
    base, hostile = out["phases"]
    ratios = {kind: round(hostile[f"{kind}_p99_ms"] / base[f"{kind}_p99_ms"], 2) if base[f"{kind}_p99_ms"] else None
              for kind in ("quote", "buy")}
    rec: load_hostile.HostileRecord = out["hostile"]
    breaches = [f"{kind} p99 {hostile[f'{kind}_p99_ms']} ms under attack vs {base[f'{kind}_p99_ms']} ms alone "
                f"(x{ratio} > x{max_ratio:g})" for kind, ratio in ratios.items() if ratio is None or ratio > max_ratio]
    p50 = {kind: round(hostile[f"{kind}_p50_ms"] / base[f"{kind}_p50_ms"], 2) if base[f"{kind}_p50_ms"] else None
           for kind in ("quote", "buy")}
    rate = round((hostile["buys"] / hostile["seconds"]) / (base["buys"] / base["seconds"]), 2) if base["buys"] else None
    return {"phases": out["phases"], "p99_ratio": ratios, "p50_ratio": p50, "booking_rate_ratio": rate, "max_ratio": max_ratio,
            "attacker_requests": rec.requests, "attacker_requests_per_s": round(rec.requests / hostile["seconds"], 1),
            "held_open_peak": rec.held_peak, "attacker_cpu_s": rec.cpu_s, "attacker_statuses": dict(sorted(rec.statuses.items()))}, breaches


async def _probe(server: load_server.Server, callers: list[Caller], owned: dict[str, list[tuple[str, str]]]) -> list[str]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        return await cross_account_probe(http, callers, owned)


def run(options: Options) -> dict[str, Any]:
    """The whole run; returns the report (figures, faults, checks)."""
    from anchorgpu.store.engine import make_engine

    unreachable = load_server.postgres_reachable(options.admin_url)
    if unreachable:
        raise SystemExit(f"error: {unreachable}")
    database = load_server.create_database(options.admin_url)
    url = load_server.url_for(options.admin_url, database)
    log = Path(tempfile.gettempdir()) / f"{database}-serve.log"
    server = load_server.Server(database_url=url, workers=2, log_path=log)
    engine = None
    phases: dict[str, float] = {}
    try:
        started = time.monotonic()
        server.start()
        startup_s = time.monotonic() - started
        phases["server start"] = startup_s
        with ThreadPoolExecutor(3) as pool:  # the operator's commands, while the accounts are made
            stock_cli = [pool.submit(load_server.run_cli, ["stock", "set", o, str(n), "--region", r], server.env)
                         for (o, r), n in ((RACE, RACE_STOCK), (BULK, BULK_STOCK))]
            callers = _create_callers(url, options.clients)
            for done in stock_cli:
                done.result()
        phases["stock set + accounts"] = time.monotonic() - started - startup_s
        mark = time.monotonic()
        out = asyncio.run(_load(server, options, callers, database))
        phases["healthz + load + replays"] = time.monotonic() - mark
        record: Record = out["record"]

        engine = make_engine(url)
        snap = load_checks.snapshot(engine)
        accounts = {c.account_id for c in callers}
        owned: dict[str, list[tuple[str, str]]] = {}
        for row in snap.allocations.values():
            owned.setdefault(row.account_id, []).append((row.id, row.quote_id))
        mark = time.monotonic()
        leaks = asyncio.run(_probe(server, callers, owned))
        phases["cross-account probes"] = time.monotonic() - mark
        oversold, peaks = load_checks.check_no_overselling(snap)
        checks = {
            "every request got its final answer": load_checks.check_resolved(record),
            "every acknowledged booking present exactly once, nothing half-written": load_checks.check_bookings_exactly_once(record, snap, accounts),
            "every replay identical to its original (and to the stored outcome)": load_checks.check_replays_identical(record, snap),
            "each stop/start/extend/terminate applied once": load_checks.check_actions_once(record, snap),
            "no booking beyond stock at any instant": oversold,
            "same key, different request refused": load_checks.check_reuse_refused(record),
            "no allocation or quote readable by another account": leaks,
            "answers kept their promises (stop keeps term and price)": record.violations,
            "no 500 for any request (a dropped database connection answers 503)": [
                f"{n} x {k}" for k, n in {**record.statuses, **out["health"].statuses, **out["hostile"].statuses}.items()
                if k.endswith(" 500")],
            "server alive with its workers at the end": [] if server.healthy() and len(server.worker_pids()) == 2 else ["server not healthy"],
        }
        hostile = None
        if options.hostile:
            hostile, breaches = _hostile_report(out, options.max_ratio)
            checks[f"booking p99 under attack at most {options.max_ratio:g} x the baseline's"] = breaches
        report = _report(options, out, snap, peaks, checks, startup_s, database)
        if hostile is not None:
            report["hostile"] = hostile
        report["phases_s"] = {k: round(v, 1) for k, v in phases.items()}
        return report
    finally:
        if engine is not None:
            engine.dispose()
        server.stop()
        if not options.keep_db:
            load_server.drop_database(options.admin_url, database)


def _report(options: Options, out: dict[str, Any], snap: Any, peaks: dict[str, int], checks: dict[str, list[str]],
            startup_s: float, database: str) -> dict[str, Any]:
    record: Record = out["record"]
    health: Record = out["health"]
    buys = [r for r in record.keyed if r.operation == "buy"]
    booked = sum(1 for r in buys if r.succeeded)
    keyed_answers = [a for r in record.keyed for a in r.answers]
    healthz_rps = len(health.latencies["healthz"]) / out["healthz_s"]
    load_rps = out["sent_in_load"] / out["load_s"]
    buy_lat = record.latencies["buy"]
    hz_lat = health.latencies["healthz"]
    return {
        "options": {"clients": options.clients, "seconds": options.seconds, "requests": options.requests,
                    "faults": options.faults, "hostile": options.hostile, "database": database},
        "startup_s": round(startup_s, 2),
        "healthz": {"requests": len(hz_lat), "requests_per_s": round(healthz_rps, 1),
                    "p50_ms": round(_pct(hz_lat, 0.5) * 1000, 1), "p99_ms": round(_pct(hz_lat, 0.99) * 1000, 1)},
        "load": {
            "seconds": round(out["load_s"], 2), "requests": out["sent_in_load"], "requests_per_s": round(load_rps, 1),
            "bookings": booked, "bookings_per_s": round(booked / out["load_s"], 1),
            "buy_p50_ms": round(_pct(buy_lat, 0.5) * 1000, 1), "buy_p99_ms": round(_pct(buy_lat, 0.99) * 1000, 1),
            "quote_p50_ms": round(_pct(record.latencies["quote"], 0.5) * 1000, 1),
            "requests_per_s_vs_healthz": round(load_rps / healthz_rps, 3) if healthz_rps else None,
            "buy_p50_vs_healthz_p50": round(_pct(buy_lat, 0.5) / _pct(hz_lat, 0.5), 1) if hz_lat and buy_lat else None,
        },
        "traffic": {
            "purchase_like_requests": len(record.keyed), "answers": len(keyed_answers),
            "replayed_answers": sum(1 for a in keyed_answers if a.replayed),
            "hung_up_before_answer": sum(r.hung_up for r in record.keyed),
            "transport_errors_retried": sum(r.transport_errors for r in record.keyed),
            "server_errors_retried": sum(r.server_errors for r in record.keyed),
            "race_wins": record.race_wins, "race_refusals": record.race_refusals,
            "reuse_refusals": len(record.reuse_checks),
            "mean_latency_ms": round(statistics.fmean(a.latency_s for a in keyed_answers) * 1000, 1) if keyed_answers else None,
            "statuses": dict(sorted(record.statuses.items())),
        },
        "database": {"allocations": len(snap.allocations), "events": sum(len(v) for v in snap.events.values()),
                     "capacity_rows": len(snap.bookings), "idempotency_keys": len(snap.keys), "peak_servers": peaks,
                     "race_stock": RACE_STOCK},
        "faults": [{"fault": f.name, "at_s": round(f.at_s, 2), **f.detail} for f in out["faults"]],
        "checks": {name: {"ok": not problems, "problems": problems[:20], "count": len(problems)} for name, problems in checks.items()},
        "ok": all(not problems for problems in checks.values()),
    }


def _print(report: dict[str, Any]) -> None:
    hz, ld, tr = report["healthz"], report["load"], report["traffic"]
    o = report["options"]
    print(f"AnchorGPU load harness: {o['clients']} clients, {o['seconds']} s, 2 workers on PostgreSQL ({o['database']})")
    print(f"  server ready in {report['startup_s']} s")
    print(f"  GET /v1/healthz          {hz['requests_per_s']:>8} req/s   p50 {hz['p50_ms']} ms   p99 {hz['p99_ms']} ms")
    print(f"  booking load             {ld['requests_per_s']:>8} req/s   ({ld['requests_per_s_vs_healthz']} x healthz)")
    print(f"  bookings                 {ld['bookings_per_s']:>8} /s      {ld['bookings']} in {ld['seconds']} s")
    print(f"  POST /v1/allocations     p50 {ld['buy_p50_ms']} ms   p99 {ld['buy_p99_ms']} ms   (p50 {ld['buy_p50_vs_healthz_p50']} x healthz)")
    print(f"  purchase-like requests {tr['purchase_like_requests']}, answers {tr['answers']} ({tr['replayed_answers']} replays), "
          f"hung up {tr['hung_up_before_answer']}, transport errors {tr['transport_errors_retried']}, "
          f"5xx {tr['server_errors_retried']} (all retried with the same key)")
    print(f"  race for {report['database']['race_stock']} servers: {tr['race_wins']} wins, {tr['race_refusals']} refusals; "
          f"peak servers held {report['database']['peak_servers']}")
    for f in report["faults"]:
        print(f"  fault at {f['at_s']} s: {f['fault']}: " + ", ".join(f"{k}={v}" for k, v in f.items() if k not in ("fault", "at_s")))
    if "hostile" in report:
        h = report["hostile"]
        for ph in h["phases"]:
            print(f"  {ph['phase']:<9} quote p50 {ph['quote_p50_ms']} / p99 {ph['quote_p99_ms']} ms, "
                  f"booking p50 {ph['buy_p50_ms']} / p99 {ph['buy_p99_ms']} ms ({ph['buys']} booking requests in {ph['seconds']} s)")
        print(f"  p99 under attack / alone: quote x{h['p99_ratio']['quote']}, booking x{h['p99_ratio']['buy']} "
              f"(target at most x{h['max_ratio']:g}); p50 x{h['p50_ratio']['quote']} / x{h['p50_ratio']['buy']}; "
              f"booking requests per second x{h['booking_rate_ratio']}")
        print(f"  attackers: {h['attacker_requests']} requests ({h['attacker_requests_per_s']}/s), "
              f"up to {h['held_open_peak']} connections held open; the attackers' own process used {h['attacker_cpu_s']} s of CPU "
              "on the cores the server shares")
        print("    " + ", ".join(f"{k}: {v}" for k, v in h["attacker_statuses"].items()))
    for name, c in report["checks"].items():
        print(f"  [{'ok' if c['ok'] else 'FAIL'}] {name}" + ("" if c["ok"] else f": {c['count']} problems, e.g. {c['problems'][:3]}"))
    print("  phases (s): " + ", ".join(f"{k} {v}" for k, v in report.get("phases_s", {}).items()))
    print("  ALL CHECKS HOLD" if report["ok"] else "  SOME CHECKS FAILED")


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    report = run(options)
    _print(report)
    if options.json_out:
        options.json_out.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
