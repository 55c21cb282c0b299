#!/usr/bin/env python3
"""Figures of one bench/client.sh scenario run, as one JSON line on stdout.

Reads perfplan's results database (DIR/results.db), the simulator's truth (JSON of
GET /sim/truth) and /usr/bin/time -v output of the perfplan process. Client records and
server truth are joined by request id: perfplan sends a UUID-shaped `x-request-id` made of the run id and the request index, the
simulator records it as `client_request_id`.

TTFT error = client TTFT (first content chunk - sent) - server (first_token - arrival),
over measured requests that ended ok. Python standard library only.

usage: figures.py run RESULTS_DB TRUTH_JSON TIME_OUTPUT   (one JSON line)
       figures.py table DIR    (the issue's table from DIR/SCENARIO.jsonl, median of runs)
       figures.py tls DIR      (issue 34: HTTPS against HTTP, DIR/SCENARIO-https.jsonl
                                beside DIR/SCENARIO.jsonl, median of runs)
       figures.py kernel DIR   (issue 35: TTFT error by the kernel's receive stamps and by
                                the client's reads, the same requests, median of runs)
       figures.py buckets RESULTS_DB  (issue 34: the client's TTFT of every request of the
                                first run, counted in the buckets of the server's own
                                TTFT histogram over the run, beside the server's counts)
"""

import json
import re
import sqlite3
import statistics
import sys


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def gap_cv(times):
    """Coefficient of variation of the gaps between sorted `times`."""
    gaps = [b - a for a, b in zip(times, times[1:])]
    if len(gaps) < 2 or statistics.mean(gaps) <= 0:
        return None
    return statistics.pstdev(gaps) / statistics.mean(gaps)


def time_v(path):
    text = open(path, encoding="utf-8", errors="replace").read()

    def grab(label):
        m = re.search(re.escape(label) + r":\s*([0-9.:]+)", text)
        return m.group(1) if m else None

    user, system = float(grab("User time (seconds)") or 0), float(grab("System time (seconds)") or 0)
    rss_kib = int(grab("Maximum resident set size (kbytes)") or 0)
    return user + system, rss_kib / 1024.0


def run(db_path, truth_path, time_path):
    db = sqlite3.connect(db_path)
    run_id, = db.execute("SELECT id FROM runs ORDER BY ordinal LIMIT 1").fetchone()
    metrics = dict(db.execute("SELECT name, value FROM run_metrics WHERE run_id = ?", (run_id,)))
    warnings = json.loads(db.execute("SELECT warnings_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    rows = db.execute(
        "SELECT request_index, phase, sent_us, ttft_us, outcome, completion_tokens, "
        "first_read_delay_us, read_clock FROM requests WHERE run_id = ?",
        (run_id,),
    ).fetchall()
    total = len(rows)
    measured = [r for r in rows if r[1] == "measured"]
    ok = [r for r in measured if r[4] == "ok"]
    truth = json.load(open(truth_path, encoding="utf-8"))["records"]
    by_id = {t["client_request_id"]: t for t in truth if t.get("client_request_id")}
    # Both processes read the same system clock: perfplan's run start and the simulator's
    # start in Unix microseconds split each error into its way in (perfplan's send stamp to
    # the server's arrival stamp) and its way out (the server's first-token stamp to
    # perfplan's read).
    extras = json.loads(db.execute("SELECT extras_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    client_start = extras.get("measured_start_unix_us")
    server_start = json.load(open(truth_path, encoding="utf-8")).get("server_start_unix_us")
    settings = json.loads(db.execute("SELECT settings_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    concurrency = (settings.get("load") or {}).get("concurrency")
    # The first wave: the first `concurrency` measured requests sent (a tier's start).
    first_wave = {r[0] for r in sorted(measured, key=lambda r: r[2])[: concurrency or 0]}
    errors, ins, outs, wave, user_errors = [], [], [], [], []
    for idx, _, sent_us, ttft_us, _, _, delay_us, _ in ok:
        t = by_id.get(f"{run_id[:8]}-{run_id[8:12]}-4000-8000-{idx:012x}")
        if t is None or ttft_us is None or t.get("first_token_us") is None:
            continue
        server_us = t["first_token_us"] - t["arrival_us"]
        errors.append((ttft_us - server_us) / 1000.0)
        # The same request timed by the client's read (the kernel's stamp plus how long
        # after it the read came): the user clock's error, paired with the kernel's.
        user_errors.append((ttft_us + (delay_us or 0) - server_us) / 1000.0)
        if idx in first_wave:
            wave.append(errors[-1])
        if client_start is not None and server_start is not None:
            way_in = (server_start + t["arrival_us"]) - (client_start + sent_us)
            ins.append(way_in / 1000.0)
            outs.append((ttft_us - server_us - way_in) / 1000.0)
    sent = sorted(r[2] for r in measured)
    intended = sorted(db.execute(
        "SELECT intended_us FROM requests WHERE run_id = ? AND phase = 'measured'", (run_id,)
    ).fetchall())
    cv = gap_cv(sent)
    cpu_s, peak_mib = time_v(time_path)
    tokens = sum(r[5] or 0 for r in rows)
    out = {
        "run_id": run_id,
        "requests_all": total,
        "requests_measured": len(measured),
        "requests_ok": len(ok),
        "rps": metrics.get("rps"),
        "duration_s": metrics.get("duration_s"),
        "cpu_s": cpu_s,
        "cpu_s_per_1k_requests": 1000.0 * cpu_s / total if total else None,
        "tokens_all": tokens,
        "cpu_s_per_100k_tokens": 1e5 * cpu_s / tokens if tokens else None,
        "peak_mib": peak_mib,
        "client_cpu_ratio": metrics.get("client_cpu_ratio"),
        "ttft_matched": len(errors),
        "ttft_err_mean_ms": statistics.mean(errors) if errors else None,
        "ttft_err_p99_ms": pct(errors, 99),
        "ttft_err_max_ms": max(errors) if errors else None,
        "ttft_err_user_mean_ms": statistics.mean(user_errors) if user_errors else None,
        "ttft_err_user_p99_ms": pct(user_errors, 99),
        "kernel_clock_ratio": metrics.get("kernel_clock_ratio"),
        "client_delay_p50_ms": metrics.get("client_delay_p50"),
        "client_delay_p99_ms": metrics.get("client_delay_p99"),
        "ttft_err_first_wave_mean_ms": statistics.mean(wave) if wave else None,
        "ttft_err_first_wave_max_ms": max(wave) if wave else None,
        "ttft_err_in_mean_ms": statistics.mean(ins) if ins else None,
        "ttft_err_out_mean_ms": statistics.mean(outs) if outs else None,
        "achieved_rate": (len(measured) - 1) / ((sent[-1] - sent[0]) / 1e6) if len(sent) > 1 else None,
        "schedule_rate": (len(intended) - 1) / ((intended[-1][0] - intended[0][0]) / 1e6) if len(intended) > 1 else None,
        "gap_cv": cv,
        "schedule_cv": gap_cv([x[0] for x in intended]),
        "lateness_p99_ms": metrics.get("lateness_p99"),
        # Warnings are typed objects ({code, severity, text}); strings in older databases.
        "client_bound": [
            w.get("text", "") if isinstance(w, dict) else w
            for w in warnings
            if (w.get("code") if isinstance(w, dict) else w.split(":")[0]) == "client_bound"
        ],
        # Connections: opened before the clock (TLS handshakes among them) and by measured
        # requests during the run.
        "preconnect_opened": (extras.get("preconnect") or {}).get("opened"),
        "preconnect_tls_handshakes": (extras.get("preconnect") or {}).get("tls_handshakes"),
        "preconnect_tls_handshake_mean_ms": (extras.get("preconnect") or {}).get("tls_handshake_mean_ms"),
        "connections_opened_in_run": (extras.get("connections") or {}).get("opened"),
    }
    print(json.dumps(out))


def load(dir_, scenario):
    try:
        with open(f"{dir_}/{scenario}.jsonl", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def fig(runs, key, fmt, label=""):
    """Median of the runs, with min..max as the noise."""
    vals = [r[key] for r in runs if r.get(key) is not None]
    if not vals:
        return "not measured", None
    med = statistics.median(vals)
    if len(vals) == 1 or min(vals) == max(vals):
        return label + fmt.format(med), med
    return f"{label}{fmt.format(med)} ({fmt.format(min(vals))}..{fmt.format(max(vals))})", med


def table(dir_):
    rows = []

    def row(label, target, scenario, parts, ok):
        runs = load(dir_, scenario)
        texts, meds = [], []
        for part in parts:
            t, m = fig(runs, *part)
            texts.append(t)
            meds.append(m)
        met = "?" if any(m is None for m in meds) else ("yes" if ok(*meds) else "NO")
        rows.append((label, target, " / ".join(texts), met))

    row("streamed requests/s, 1-token responses, c=64", ">= 20,000", "rps-1tok",
        [("rps", "{:,.0f}")], lambda v: v >= 20000)
    row("client CPU per 1,000 such requests", "<= 0.05 CPU-s", "rps-1tok",
        [("cpu_s_per_1k_requests", "{:.4f}")], lambda v: v <= 0.05)
    row("client CPU per 100,000 streamed tokens (512-token, c=64)", "<= 0.15 CPU-s", "tokens-512",
        [("cpu_s_per_100k_tokens", "{:.3f}")], lambda v: v <= 0.15)
    row("client peak memory in that run", "<= 64 MiB", "tokens-512",
        [("peak_mib", "{:.1f} MiB")], lambda v: v <= 64)
    for c, m, p in (("64", 0.5, 2), ("256", 1, 5), ("1024", 2, 10)):
        row(f"TTFT error vs server truth, mean / p99 (ms), c={c}", f"<= {m} / {p} ms", f"ttft-c{c}",
            [("ttft_err_mean_ms", "{:+.2f}"), ("ttft_err_p99_ms", "{:+.2f}")],
            lambda a, b, m=m, p=p: a <= m and b <= p)
    row("TTFT error vs server truth, mean / p99 (ms), c=256, no warmup (first wave included)",
        "<= 1 / 5 ms", "ttft-c256-cold",
        [("ttft_err_mean_ms", "{:+.2f}"), ("ttft_err_p99_ms", "{:+.2f}")],
        lambda a, b: a <= 1 and b <= 5)
    row("Poisson 50 req/s for 20 s: achieved rate, CV of gaps, send lateness p99",
        "within 1%, CV 0.97-1.03, <= 1 ms", "poisson-50",
        [("achieved_rate", "{:.2f}/s"), ("schedule_rate", "{:.2f}/s", "schedule "),
         ("gap_cv", "{:.3f}", "CV "), ("schedule_cv", "{:.3f}", "schedule CV "),
         ("lateness_p99_ms", "{:.2f} ms", "lateness p99 ")],
        lambda r, sched, cv, _scv, late: abs(r - sched) <= 0.01 * sched and 0.97 <= cv <= 1.03 and late <= 1)
    w = [max(len(r[i]) for r in rows + [("figure", "target", "perfplan: median of runs (min..max)", "met")]) for i in range(4)]
    head = ("figure", "target", "perfplan: median of runs (min..max)", "met")
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
    print()
    print("Per scenario (medians): perfplan CPU-s (whole process, /usr/bin/time), simulator CPU-s,")
    print("run duration, load average before/after each run (min-max over runs):")
    for scenario in ("rps-1tok", "tokens-512", "ttft-c64", "ttft-c256", "ttft-c256-cold", "ttft-c1024", "ttft-c4096", "poisson-50"):
        runs = load(dir_, scenario)
        if not runs:
            continue
        med = lambda k: statistics.median([r[k] for r in runs if r.get(k) is not None] or [float("nan")])
        loads = [r[k] for r in runs for k in ("load_before", "load_after") if r.get(k) is not None]
        bound = sum(1 for r in runs if r.get("client_bound"))
        print(f"- {scenario}: perfplan {med('cpu_s'):.2f} CPU-s, sim {med('sim_cpu_s'):.2f} CPU-s, "
              f"{med('duration_s'):.2f} s, {med('requests_ok'):.0f} ok of {med('requests_measured'):.0f}, "
              f"peak {med('peak_mib'):.1f} MiB, load {min(loads, default=0):.1f}-{max(loads, default=0):.1f}, "
              f"client_bound in {bound} of {len(runs)} runs"
              + (f"; TTFT error mean split: send->server arrival {med('ttft_err_in_mean_ms'):+.2f} ms, "
                 f"server first token->perfplan read {med('ttft_err_out_mean_ms'):+.2f} ms; "
                 f"first wave mean {med('ttft_err_first_wave_mean_ms'):+.2f} ms, max {med('ttft_err_first_wave_max_ms'):+.2f} ms; "
                 f"run max {med('ttft_err_max_ms'):+.2f} ms"
                 if scenario.startswith("ttft") else ""))


def kernel_table(dir_):
    """TTFT error by the kernel's receive stamps against the client's reads, paired."""
    print("| scenario | kernel clock: TTFT error mean / p99 (ms) | client reads: mean / p99 (ms) | client_delay p50 / p99 (ms) | kernel_clock_ratio |")
    print("|---|---|---|---|---|")
    for scenario in ("ttft-c64", "ttft-c256", "ttft-c256-cold", "ttft-c1024", "ttft-c4096", "poisson-50"):
        runs = load(dir_, scenario)
        if not runs:
            continue
        f = lambda k, fmt="{:+.2f}": fig(runs, k, fmt)[0]
        print(f"| {scenario} | {f('ttft_err_mean_ms')} / {f('ttft_err_p99_ms')} | "
              f"{f('ttft_err_user_mean_ms')} / {f('ttft_err_user_p99_ms')} | "
              f"{f('client_delay_p50_ms', '{:.2f}')} / {f('client_delay_p99_ms', '{:.2f}')} | "
              f"{f('kernel_clock_ratio', '{:.2f}')} |")


def tls_table(dir_):
    """Issue 34: TTFT error and client CPU over HTTPS against the same runs over HTTP."""
    print("| c | figure | http | https | https - http | target | met |")
    print("|---|---|---|---|---|---|---|")
    for c in ("64", "256"):
        plain, tls = load(dir_, f"ttft-c{c}"), load(dir_, f"ttft-c{c}-https")
        if not plain or not tls:
            continue
        for key, label, fmt, limit in (
            ("ttft_err_mean_ms", "TTFT error mean (ms)", "{:+.2f}", 0.5),
            ("ttft_err_p99_ms", "TTFT error p99 (ms)", "{:+.2f}", 2.0),
        ):
            (a, ma), (b, mb) = fig(plain, key, fmt), fig(tls, key, fmt)
            d = None if ma is None or mb is None else mb - ma
            met = "?" if d is None else ("yes" if d <= limit else "NO")
            print(f"| {c} | {label} | {a} | {b} | {'?' if d is None else f'{d:+.2f}'} | <= +{limit} | {met} |")
        (a, ma), (b, mb) = fig(plain, "cpu_s_per_1k_requests", "{:.4f}"), fig(tls, "cpu_s_per_1k_requests", "{:.4f}")
        ratio = None if not ma or mb is None else mb / ma
        met = "?" if ratio is None else ("yes" if ratio <= 1.2 else "NO")
        print(f"| {c} | client CPU-s per 1,000 requests | {a} | {b} | {'?' if ratio is None else f'x{ratio:.2f}'} | <= x1.20 | {met} |")
    print()
    for c in ("64", "256"):
        tls = load(dir_, f"ttft-c{c}-https")
        if not tls:
            continue
        med = lambda k: statistics.median([r[k] for r in tls if r.get(k) is not None] or [float("nan")])
        loads = [r[k] for r in load(dir_, f"ttft-c{c}") + tls for k in ("load_before", "load_after") if r.get(k) is not None]
        print(f"- c={c} over https (medians): {med('preconnect_tls_handshakes'):.0f} TLS handshakes before the clock, "
              f"{med('preconnect_tls_handshake_mean_ms'):.2f} ms each on average; {med('connections_opened_in_run'):.0f} "
              f"connections opened by measured requests; way in {med('ttft_err_in_mean_ms'):+.2f} ms, way out "
              f"{med('ttft_err_out_mean_ms'):+.2f} ms; load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f}")


def buckets(db_path):
    """Client TTFTs in vLLM's TTFT histogram buckets, beside the server's own counts."""
    db = sqlite3.connect(db_path)
    run_id, = db.execute("SELECT id FROM runs ORDER BY ordinal LIMIT 1").fetchone()
    rows = db.execute(
        "SELECT name, le, t_ms, value FROM telemetry WHERE run_id = ? AND le IS NOT NULL "
        "AND name = 'server_ttft_seconds_bucket' ORDER BY t_ms",
        (run_id,),
    ).fetchall()
    first, last = {}, {}
    for name, le, t, v in rows:
        first.setdefault((name, le), v)
        last[(name, le)] = v
    server = {}
    for (name, le), v in last.items():
        server[le] = server.get(le, 0) + v - first[(name, le)]
    client = [r[0] / 1e6 for r in db.execute(
        "SELECT ttft_us FROM requests WHERE run_id = ? AND ttft_us IS NOT NULL", (run_id,))]
    bounds = sorted(server)
    metrics = dict(db.execute("SELECT name, value FROM run_metrics WHERE run_id = ?", (run_id,)))
    print(f"client TTFT (all {len(client)} requests, warmup included): p50 {1e3 * pct(client, 50):.1f} ms, "
          f"max {1e3 * max(client):.1f} ms; perfplan ttft_p50 {metrics.get('ttft_p50')} ms, "
          f"server_ttft_p50 {metrics.get('server_ttft_p50')} ms, server_ttft_p99 {metrics.get('server_ttft_p99')} ms")
    print("| bucket (s) | server: requests | client: requests |")
    print("|---|---|---|")
    lo, prev_s, same = 0.0, 0.0, True
    for le in bounds:
        ns = server[le] - prev_s
        nc = sum(1 for c in client if lo < c <= le)
        same &= round(ns) == nc
        if ns or nc:
            print(f"| ({lo:g}, {le:g}] | {ns:.0f} | {nc} |")
        lo, prev_s = le, server[le]
    print(f"every request in the server's bucket: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        run(*sys.argv[2:5])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "tls":
        tls_table(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "kernel":
        kernel_table(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "buckets":
        buckets(sys.argv[2])
    else:
        sys.exit(__doc__)
