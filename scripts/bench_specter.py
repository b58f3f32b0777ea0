"""perfex.specter against real specter, side by side in one run, one thread (docs/benchmarks.md).

    PYTHONPATH=build/python python3 scripts/bench_specter.py [--pairs N] [--specter PY_DIR]
        [--data DIR] [--nspec 25] [--wave 5760,6760,0.8] [--project-nspec 500]
        [--project-wave 5760,7620,0.8] [--skip-ex2d] [--skip-project] [--skip-process]

ex2d: fibres 0..nspec-1 of the shared simulated image (DIR/sim-r0-b0-1.fits.gz, its MASK
zeroing IVAR) with DIR/psf-r0-00051060.fits, specter's defaults otherwise (bundlesize 25,
wavesize 50, one sub-bundle), in two framings, specter and perfex alternating pair by pair:
  - whole process: a fresh Python per run that imports the package, reads the PSF and the image
    and extracts (wall time and peak RSS of the process, from os.wait4);
  - warm in memory: one process that imported both and read the PSF and image with each, timing
    ex2d calls only.
project: PSF.project of random photons of fibres 0..project-nspec-1 on the project-wave grid,
on a freshly read PSF of each package ("first call") and again with other photons ("repeat":
specter caches the spots' parameters per wavelength grid), alternating.
Real specter comes from PY_DIR (default $PERFEX_CLIENTS/specter/py, else ../clients/specter/py)
with numba; every thread count is set to 1 (OMP, numba, BLAS). The load average is printed
beside every run: the machine may be shared.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def grid(text):
    import numpy as np

    start, stop, step = (float(v) for v in text.split(","))
    return np.arange(start, stop + step / 2, step)


def load(package, data, image=True):
    """(psf, image, ivar) read by `package` ("specter" or "perfex")."""
    if package == "specter":
        from specter.psf import load_psf
    else:
        from perfex.specter.psf import load_psf
    psf = load_psf(os.path.join(data, "psf-r0-00051060.fits"))
    if not image:
        return psf, None, None
    from astropy.io import fits

    with fits.open(os.path.join(data, "sim-r0-b0-1.fits.gz")) as hdus:
        pixels = hdus["IMAGE"].data.astype("f8")
        ivar = hdus["IVAR"].data.astype("f8") * (hdus["MASK"].data == 0)
    return psf, pixels, ivar


def ex2d(package, psf, pixels, ivar, args):
    if package == "specter":
        from specter.extract import ex2d as run
    else:
        from perfex.specter.extract import ex2d as run
    return run(pixels, ivar, psf, 0, args.nspec, grid(args.wave))


def child(args):
    """One whole process: import, read, extract; prints the flux's sum for the log."""
    psf, pixels, ivar = load(args.child, args.data)
    flux = ex2d(args.child, psf, pixels, ivar, args)[0]
    print(json.dumps({"flux_sum": float(flux.sum())}))


def load_average():
    return os.getloadavg()[0]


def whole_processes(args, env):
    print("## ex2d, whole processes (wall s, peak RSS MB, load average before the run)")
    times = {"specter": [], "perfex": []}
    for pair in range(args.pairs):
        for package in ("specter", "perfex"):
            load_before = load_average()
            command = [sys.executable, os.path.abspath(__file__), "--child", package] + args.forward
            start = time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
            output = process.stdout.read()
            if status != 0:
                sys.exit(f"bench_specter: {package}'s process failed (status {status}): {output}")
            times[package].append(wall)
            print(f"pair {pair} {package:8s} {wall:8.2f} s {usage.ru_maxrss / 1024:8.0f} MB  load {load_before:.2f}")
        print(f"pair {pair} ratio specter/perfex {times['specter'][-1] / times['perfex'][-1]:.1f}")
    return times


def warm(args):
    print("## ex2d, warm in memory (s per call, load average before the call)")
    loaded = {package: load(package, args.data) for package in ("specter", "perfex")}
    for pair in range(args.pairs):
        seconds = {}
        for package in ("specter", "perfex"):
            load_before = load_average()
            start = time.perf_counter()
            flux = ex2d(package, *loaded[package], args)[0]
            seconds[package] = time.perf_counter() - start
            print(
                f"pair {pair} {package:8s} {seconds[package]:8.2f} s  load {load_before:.2f}  flux sum {flux.sum():.6e}"
            )
        print(f"pair {pair} ratio specter/perfex {seconds['specter'] / seconds['perfex']:.1f}")


def project(args):
    import numpy as np

    wave = grid(args.project_wave)
    print(f"## project: {args.project_nspec} fibres x {len(wave)} wavelengths (s per call, load before)")
    rng = np.random.default_rng(500)
    for pair in range(args.pairs):
        seconds = {}
        # the same photons on both sides, so that the images' sums agree
        photons = {call: rng.uniform(1, 1000, (args.project_nspec, len(wave))) for call in ("first call", "repeat")}
        for package in ("specter", "perfex"):
            psf = load(package, args.data, image=False)[0]
            for call, phot in photons.items():
                load_before = load_average()
                start = time.perf_counter()
                image = psf.project(wave, phot, specmin=0)
                seconds[package, call] = time.perf_counter() - start
                print(
                    f"pair {pair} {package:8s} {call:10s} {seconds[package, call]:8.2f} s  load {load_before:.2f}"
                    f"  image sum {image.sum():.6e}"
                )
        for call in ("first call", "repeat"):
            ratio = seconds["specter", call] / seconds["perfex", call]
            print(f"pair {pair} {call} ratio specter/perfex {ratio:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    clients = os.environ.get("PERFEX_CLIENTS") or os.path.join(ROOT, "..", "clients")
    parser.add_argument("--specter", default=os.path.join(clients, "specter", "py"))
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--nspec", type=int, default=25)
    parser.add_argument("--wave", default="5760,6760,0.8")
    parser.add_argument("--project-nspec", type=int, default=500)
    parser.add_argument("--project-wave", default="5760,7620,0.8")
    parser.add_argument("--skip-ex2d", action="store_true")
    parser.add_argument("--skip-project", action="store_true")
    parser.add_argument("--skip-process", action="store_true")
    parser.add_argument("--child", choices=("specter", "perfex"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.specter, "specter")):
        sys.exit(f"bench_specter: no specter checkout in {args.specter} (--specter or PERFEX_CLIENTS)")
    if not os.path.exists(os.path.join(args.data, "sim-r0-b0-1.fits.gz")):
        sys.exit(f"bench_specter: sim-r0-b0-1.fits.gz not in {args.data} (--data)")
    args.forward = ["--specter", args.specter, "--data", args.data, "--nspec", str(args.nspec), "--wave", args.wave]
    if args.child:
        sys.path.insert(0, args.specter)
        return child(args)
    os.environ.update(ONE_THREAD)
    sys.path.insert(0, args.specter)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (args.specter, os.environ.get("PYTHONPATH")) if p))
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(f"# bench_specter {when}, {os.cpu_count()} CPUs, one thread, {args.pairs} pairs")
    print(f"# ex2d fibres 0-{args.nspec - 1}, wavelengths {args.wave}; specter from {args.specter}")
    if not args.skip_ex2d:
        if not args.skip_process:
            whole_processes(args, env)
        warm(args)
    if not args.skip_project:
        project(args)


if __name__ == "__main__":
    main()
