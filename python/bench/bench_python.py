"""Benchmarks of the Python package (run with the build tree's package on PYTHONPATH):

  overhead   perfex.extract_frame from Python vs the C++ extract_frame call alone, on the
             25-fibre bundle (bundle 0, 5760-6760 A, DESI defaults, 130 patches), with 1 and 2
             threads, for a prepared perfex.Image and for plain numpy arrays (which adds the
             image check): wall and CPU time (the process's, every thread) of each call
  mpi        one 50-fibre frame (2 bundles, same grid) through perfex.extract_frame(comm=...)
             under mpirun: 1 rank x 1 thread, 2 ranks x 1 thread, 1 rank x 2 threads
             (mpirun --bind-to none); wall time of the call on rank 0 (inputs to the ranks:
             PSF, options, image columns; extraction; gather and mask) and the CPU time of the
             busiest rank (MPI waits poll: the wall time with a core per rank)

CPU times stay meaningful on a loaded machine, where wall times do not.

    PYTHONPATH=build/python python3 python/bench/bench_python.py [--reps 5] [--image IMG]

Configurations alternate within each repetition (noisy shared machines); medians are printed
as markdown tables.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "data"))
GRID = dict(wavelength="5760,6760,0.8", psferr=0.01)


def overhead_worker(image_path, psf_path, reps):
    """One process, fixed threads: JSON lines of (cpp seconds, wall seconds) per call kind."""
    import numpy as np
    import perfex
    from perfex import _perfex

    threads = perfex.initialize()
    psf = perfex.read_psf(psf_path)
    pre = perfex.read_preproc(image_path)
    image = perfex.Image(pre.pixels, pre.ivar)
    cxx = _perfex.options_from_dict(perfex.make_options(specmin=0, nspec=25, **GRID))
    opts = dict(GRID, specmin=0, nspec=25, progress=False)
    backend = perfex.default_backend()
    perfex.extract_frame(image, psf=psf, **opts)  # warm-up (first-touch pages)
    rows = []
    for _ in range(reps):
        for kind in ("cpp", "cpp_host", "image", "arrays"):
            t0, c0 = time.perf_counter(), time.process_time()
            if kind.startswith("cpp"):  # timed inside (the CcdImage's copy is made first)
                wall, cpu = _perfex.testing.time_extract_frame(image._handle, psf, cxx, backend, kind == "cpp_host")
            else:
                if kind == "image":
                    frame = perfex.extract_frame(image, psf=psf, **opts)
                else:
                    frame = perfex.extract_frame(pre.pixels, pre.ivar, psf, **opts)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows.append(dict(kind=kind, threads=threads, wall=wall, cpu=cpu))
    assert np.isfinite(frame.flux).all()
    print(json.dumps(rows))


def mpi_worker(image_path, psf_path, reps):
    """Under mpirun: rank 0 prints JSON timings of perfex.extract_frame(comm=...) calls."""
    import perfex
    import perfex.mpi
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    threads = perfex.initialize(comm=comm)
    pre = psf = None
    if comm.rank == 0:
        pre = perfex.read_preproc(image_path)
        psf = perfex.read_psf(psf_path)
    rows = []
    for rep in range(reps + 1):  # the first call is a warm-up
        comm.Barrier()
        stamps = {}
        t0, c0 = time.time(), time.process_time()
        if comm.size > 1:
            frame = perfex.mpi.extract_frame(
                comm, pre, None, psf, progress=False, timing=stamps, specmin=0, nspec=50, **GRID
            )
        else:
            frame = perfex.extract_frame(pre, psf=psf, progress=False, specmin=0, nspec=50, **GRID)
        t1 = time.time()
        # CPU time of the call on the busiest rank (waiting ranks poll, so it is also counted):
        # the wall time the call would take with a core of its own per thread.
        cpu = comm.reduce(time.process_time() - c0, op=MPI.MAX, root=0)
        if comm.rank == 0 and rep > 0:
            row = dict(ranks=comm.size, threads=threads, wall=t1 - t0, cpu=cpu, npatches=frame.npatches)
            if stamps:
                row.update(
                    bcast=stamps["init-mpi-bcast"] - t0,
                    extract=stamps["extracted-bundles"] - stamps["init-mpi-bcast"],
                    gather=t1 - stamps["extracted-bundles"],
                )
            else:
                row.update(bcast=0.0, extract=t1 - t0, gather=0.0)
            rows.append(row)
    if comm.rank == 0:
        print(json.dumps(rows))


def run_json(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"benchmark run failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument(
        "--image",
        default=None,
        help="preproc image (default: ../shared/data's simulated one; an uncompressed copy reads faster)",
    )
    p.add_argument("--psf", default=os.path.join(DATA, "psf-r0-00051060.fits"))
    p.add_argument("--only", choices=("overhead", "mpi"))
    p.add_argument("--worker", choices=("overhead", "mpi"), help=argparse.SUPPRESS)
    args = p.parse_args()
    image = args.image or os.path.join(DATA, "sim-r0-b0-1.fits.gz")
    if args.worker == "overhead":
        return overhead_worker(image, args.psf, args.reps)
    if args.worker == "mpi":
        return mpi_worker(image, args.psf, args.reps)
    for path in (image, args.psf):
        if not os.path.exists(path):
            sys.exit(f"bench_python: {path} not found")
    env = dict(os.environ, OMP_PROC_BIND="false")
    me = [sys.executable, os.path.abspath(__file__), "--image", image, "--psf", args.psf]
    print(
        f"# perfex Python benchmarks ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
        f"{args.reps} repetitions, medians)\n"
    )

    if args.only in (None, "overhead"):
        rows = []
        for threads in (1, 2):
            rows += run_json(
                me + ["--worker", "overhead", "--reps", str(args.reps)], dict(env, OMP_NUM_THREADS=str(threads))
            )
        print(
            "| call | threads | wall time | CPU time | overhead (wall) | overhead (CPU) | overhead / extraction (CPU) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for threads in (1, 2):
            med = {
                (kind, t): statistics.median(r[t] for r in rows if r["threads"] == threads and r["kind"] == kind)
                for kind in ("cpp", "cpp_host", "image", "arrays")
                for t in ("wall", "cpu")
            }
            for kind, label in (
                ("cpp", "C++ extract_frame (prepared image)"),
                ("cpp_host", "C++ extract_frame (CcdImage: host arrays)"),
                ("image", "perfex.extract_frame(perfex.Image)"),
                ("arrays", "perfex.extract_frame(pixels, ivar)"),
            ):
                wall, cpu = med[(kind, "wall")], med[(kind, "cpu")]
                cells = ["–"] * 3
                if kind != "cpp":
                    over_wall, over_cpu = wall - med[("cpp", "wall")], cpu - med[("cpp", "cpu")]
                    cells = [
                        f"{over_wall * 1e3:+.1f} ms",
                        f"{over_cpu * 1e3:+.1f} ms",
                        f"{100 * over_cpu / med[('cpp', 'cpu')]:+.2f} %",
                    ]
                print(f"| {label} | {threads} | {wall * 1e3:.0f} ms | {cpu * 1e3:.0f} ms | " + " | ".join(cells) + " |")
        print()

    if args.only in (None, "mpi"):
        launcher = shutil.which("mpirun")
        if launcher is None:
            sys.exit("bench_python: mpirun not found")
        base = [launcher, "--bind-to", "none", "--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            base.append("--allow-run-as-root")
        configs = [(1, 1), (2, 1), (1, 2)]
        results = {c: [] for c in configs}
        for _ in range(max(1, args.reps // 2)):  # each run repeats the call twice more
            for ranks, threads in configs:
                results[(ranks, threads)] += run_json(
                    base + ["-n", str(ranks)] + me + ["--worker", "mpi", "--reps", "2"],
                    dict(env, OMP_NUM_THREADS=str(threads)),
                )
        ref = {k: statistics.median(r[k] for r in results[(1, 1)]) for k in ("wall", "cpu")}
        print(
            "| ranks x threads | call wall time | inputs to the ranks | extraction | gather + mask | "
            "speed-up (wall) | busiest rank's CPU time | speed-up (CPU) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for (ranks, threads), rows in results.items():
            med = {k: statistics.median(r[k] for r in rows) for k in ("wall", "cpu", "bcast", "extract", "gather")}
            cpu = f"{med['cpu']:.3f} s | {ref['cpu'] / med['cpu']:.2f}x" if threads == 1 else "– | –"
            print(
                f"| {ranks} x {threads} | {med['wall']:.3f} s | {med['bcast'] * 1e3:.0f} ms | "
                f"{med['extract']:.3f} s | {med['gather'] * 1e3:.0f} ms | "
                f"{ref['wall'] / med['wall']:.2f}x | {cpu} |"
            )


if __name__ == "__main__":
    main()
