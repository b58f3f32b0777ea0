#!/usr/bin/env python3
"""Markdown table of perfex_bench JSON results (Google Benchmark --benchmark_out files).

Usage: bench_report.py RESULTS.json [RESULTS.json ...] [-o report.md]

Several files (e.g. one per OMP_NUM_THREADS) are merged. Each row is one benchmark at one
thread count: the median over its repetitions of the time per iteration and of each counter.
"speedup" is the Serial median time of the same stage, size and path over this row's.
Python 3 standard library only.
"""

import argparse
import json
import re
import statistics
import sys

# Pipeline stages in order: (name prefix, label). Their linalg parts and the dense references
# of the band ops follow.
STAGES = [
    ("peak/fma", "peak: FMA throughput of one core"),
    ("psf/spots", "spots"),
    ("extract/normal_equations", "normal equations"),
    ("linalg/band_cholesky_inverse_blocks", "band Cholesky + block inverse"),
    ("linalg/inverse_sqrt", "per-fibre block eigen (C^-1/2)"),
    ("extract/patch", "patch"),
    ("extract/bundle", "bundle"),
    ("extract/frame", "frame (500 fibres)"),
    ("linalg/band_cholesky", "part: band Cholesky"),
    ("linalg/band_solve", "part: band Cholesky solve"),
    ("linalg/syev", "part: eigendecomposition"),
    ("linalg/cholesky", "dense reference: Cholesky"),
    ("linalg/solve", "dense reference: Cholesky solve"),
    ("linalg/inverse_diag_blocks", "dense reference: all diagonal blocks of H^-1"),
    ("linalg/kk/compose", "vs KokkosBatched: V f V^T (n=74)"),
    ("linalg/kk/gram", "vs KokkosBatched: a fibre's Y^T Y (518×74)"),
    ("linalg/kk/back_transform", "vs KokkosBatched: Q Z (n=74)"),
    ("linalg/kk/trsm", "vs KokkosBatched: L^-1 on 74 columns (n=518)"),
    ("linalg/kk/trsv", "vs KokkosBatched: Cholesky solve (n=518)"),
]
PATHS = ("portable", "lapack", "perfex", "kokkoskernels")
BACKENDS = ("serial", "openmp", "cuda")
UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_name(run_name):
    """Splits 'linalg/syev/lapack/openmp/n:74/batch:5/manual_time' into its parts."""
    parts = [p for p in run_name.split("/") if p != "manual_time" and not re.match(r"(iterations|repeats):", p)]
    backend_at = next(i for i, p in enumerate(parts) if p in BACKENDS)
    prefix = "/".join(parts[:backend_at])
    path = "portable"
    if prefix.rsplit("/", 1)[-1] in PATHS:
        prefix, path = prefix.rsplit("/", 1)
    args = dict(a.split(":", 1) for a in parts[backend_at + 1 :] if ":" in a)
    return prefix, path, parts[backend_at], args


def size_label(prefix, args, c):
    if prefix == "psf/spots":
        return "%d spots" % c["spots"]
    if "patches" in args:
        n = int(args["patches"])
        return "%d patch%s" % (n, "" if n == 1 else "es")
    if "kd" in args:
        return "n=%s kd=%s ×%s" % (args["n"], args["kd"], args["batch"])
    if "n" in args:
        return "n=%s ×%s" % (args["n"], args["batch"])
    if "fibres" in c:
        return "%d×%d (%d patches)" % (c["fibres"], c["wavelengths"], c["patches"])
    return ""


def load(files):
    runs = {}
    context = {}
    for f in files:
        with open(f) as fh:
            data = json.load(fh)
        context.setdefault("first", data.get("context", {}))
        for b in data.get("benchmarks", []):
            if b.get("run_type") != "iteration" or b.get("error_occurred"):
                continue
            prefix, path, backend, args = parse_name(b["run_name"])
            threads = int(b.get("concurrency", 1))
            key = (prefix, path, backend, threads, tuple(sorted(args.items())))
            runs.setdefault(key, {"args": args, "samples": []})["samples"].append(b)
    return runs, context.get("first", {})


RATES = ("patches/s", "fibre_wavelengths/s", "GFLOP/s")


def median_row(samples):
    """Median time per iteration; rates are the per-iteration work over that median time."""
    times = [s["real_time"] * UNIT_SECONDS[s["time_unit"]] for s in samples]
    t = statistics.median(times)
    counters = {}
    for k in samples[0]:
        if all(isinstance(s.get(k), (int, float)) for s in samples):
            counters[k] = statistics.median(s[k] for s in samples)
    for k in RATES:
        if k in counters:
            counters[k] = statistics.median(s[k] * ts for s, ts in zip(samples, times)) / t
    return t, counters, len(samples)


def fmt_time(t):
    if t >= 1:
        return "%.2f s" % t
    if t >= 1e-3:
        return "%.2f ms" % (t * 1e3)
    return "%.1f µs" % (t * 1e6)


def fmt_rate(x):
    if x is None:
        return "–"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return "%.3g%s" % (x / scale, suffix)
    return "%.3g" % x


def stage_order(prefix):
    for i, (p, label) in enumerate(STAGES):
        if prefix == p:
            return i, label
    return len(STAGES), prefix


def build_report(runs, context):
    rows = []
    for (prefix, path, backend, threads, argkey), run in runs.items():
        t, c, reps = median_row(run["samples"])
        order, label = stage_order(prefix)
        rows.append(
            dict(
                order=order,
                stage=label,
                prefix=prefix,
                path=path,
                backend=backend,
                threads=threads,
                argkey=argkey,
                size=size_label(prefix, run["args"], c),
                time=t,
                counters=c,
                reps=reps,
            )
        )
    serial = {(r["prefix"], r["path"], r["argkey"]): r["time"] for r in rows if r["backend"] == "serial"}
    backend_rank = {b: i for i, b in enumerate(BACKENDS)}
    rows.sort(
        key=lambda r: (r["order"], r["argkey"], r["path"] != "portable", backend_rank[r["backend"]], r["threads"])
    )

    # The core's measured double-precision peak (peak/fma), for each row's share of it.
    peak = next((r["counters"].get("GFLOP/s") for r in rows if r["prefix"] == "peak/fma"), None)

    def of_peak(r):
        g = r["counters"].get("GFLOP/s")
        if not peak or g is None or r["prefix"] == "peak/fma" or r["backend"] == "cuda":
            return "–"
        return "%.1f %%" % (100.0 * g / (peak * max(1, r["threads"])))

    out = []
    out.append(
        "| stage | size | backend | path | threads | median time | patches/s | fibre-λ/s | GFLOP/s "
        "| % of peak | speedup vs Serial | peak RSS | reps |"
    )
    out.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        c = r["counters"]
        base = serial.get((r["prefix"], r["path"], r["argkey"]))
        speedup = "%.2f×" % (base / r["time"]) if base else "–"
        out.append(
            "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %.0f MB | %d |"
            % (
                r["stage"],
                r["size"],
                r["backend"],
                r["path"],
                r["threads"],
                fmt_time(r["time"]),
                fmt_rate(c.get("patches/s")),
                fmt_rate(c.get("fibre_wavelengths/s")),
                fmt_rate(c.get("GFLOP/s")),
                of_peak(r),
                speedup,
                c.get("peak_rss_MB", 0),
                r["reps"],
            )
        )

    def find(prefix, backend, threads=None, args=None):
        for r in rows:
            if (
                r["prefix"] == prefix
                and r["backend"] == backend
                and (threads is None or r["threads"] == threads)
                and (args is None or dict(r["argkey"]) == args)
            ):
                yield r

    targets = []
    patch = next(find("extract/patch", "serial", args={"patches": "1"}), None)
    if patch:
        targets.append(
            "- single-thread DESI-default patch (Serial, 1 patch, N = 518): median **%s** (target ≤ 10 ms)"
            % fmt_time(patch["time"])
        )
    bundles = sorted(find("extract/bundle", "openmp"), key=lambda r: r["threads"])
    base = serial.get(("extract/bundle", "portable", ()))
    if bundles and base:
        b = bundles[-1]
        targets.append(
            "- bundle, OpenMP %d threads vs Serial: **%.2f×** (target ≥ 1.8× on 2 threads)"
            % (b["threads"], base / b["time"])
        )
    frames = list(find("extract/frame", "serial")) + list(find("extract/frame", "openmp"))
    if frames:
        peak = max(r["counters"].get("peak_rss_MB", 0) for r in frames)
        targets.append("- 500-fibre frame peak RSS: **%.0f MB** (target ≤ 2 GB)" % peak)

    head = []
    head.append("# perfex benchmarks")
    head.append("")
    load_avg = context.get("load_avg")
    head.append(
        "Host %s, %s CPUs at %s MHz, load average %s when the run started; perfex %s, Kokkos %s, "
        "LAPACK %s, SIMD level %s; PSF: %s; peak RSS measured %s. Times are medians over the "
        "repetitions (reps) of the time per iteration (fenced); %% of peak is a row's GFLOP/s "
        "over the measured FMA peak of its threads' cores."
        % (
            context.get("host_name", "?"),
            context.get("num_cpus", "?"),
            context.get("mhz_per_cpu", "?"),
            " ".join("%.2f" % x for x in load_avg) if load_avg else "?",
            context.get("perfex_version", "?"),
            context.get("kokkos_version", "?"),
            context.get("lapack", "?"),
            context.get("simd", "?"),
            context.get("psf", "?"),
            context.get("peak_rss", "?"),
        )
    )
    head.append("")
    if targets:
        head += ["Targets:", ""] + targets + [""]
    return "\n".join(head + out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="perfex_bench JSON output files")
    ap.add_argument("-o", "--output", help="also write the report to this file")
    a = ap.parse_args()
    runs, context = load(a.results)
    if not runs:
        sys.exit("bench_report.py: no benchmark results in " + ", ".join(a.results))
    report = build_report(runs, context)
    sys.stdout.write(report)
    if a.output:
        with open(a.output, "w") as fh:
            fh.write(report)


if __name__ == "__main__":
    main()
