#!/usr/bin/env python3
"""The numbers README.md, docs/benchmarks.md and docs/cli.md state, measured on the machine at hand.

    PYTHONPATH=build/python python3 scripts/claims.py accuracy
    PYTHONPATH=build/python python3 scripts/claims.py speed --spex-python VENV/bin/python
    PYTHONPATH=build/python python3 scripts/claims.py warm --spex-python VENV/bin/python
    python3 scripts/claims.py memory

accuracy  perfex against gpu_specter's reference extraction of the simulated DESI r0 image
          (../shared/data: 50 fibres, 5760-6760 A, DESI defaults): the frame in memory
          (float64), the frame file perfex-extract writes (float32, as desispec and gpu_specter
          write theirs), and the model image.
speed     perfex-extract against gpu_specter's `spex` (its CPU path, numba) as whole processes,
          one thread each, the runs of each pair in turn, on one bundle (25 fibres,
          5760-6760 A) of the image decompressed once (both would spend seconds on gzip).
          Needs a gpu_specter checkout (../clients/gpu_specter, $PERFEX_CLIENTS) and a Python
          that imports numba, fitsio, astropy and scipy (--spex-python).
warm      the same bundle warm and in memory, as a pipeline that imports once sees it: gpu_specter's
          gpu_specter.core.extract_frame and perfex's perfex.extract_frame, each in a process of
          its own that has read the image and PSF and extracted once already (imports, numba's
          compilation, first-touched pages), called again in turn; beside them perfex-extract as
          a whole process. One thread each; the ratios pair by pair.
memory    peak resident memory of perfex-extract on that bundle and on the 50-fibre image
          (decompressed, as for speed).

Every report starts with the machine (CPU model, CPUs, load average); the machine is shared
and its load changes the times: say so with the numbers.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("PERFEX_SHARED_DATA") or os.path.join(ROOT, "..", "shared", "data")
CLIENTS = os.environ.get("PERFEX_CLIENTS") or os.path.join(ROOT, "..", "clients")
IMAGE, PSF = "sim-r0-b0-1.fits.gz", "psf-r0-00051060.fits"
REFERENCE, REFERENCE_MODEL = "ref-gpuspecter-sim-r0-b0-1.fits", "ref-gpuspecter-sim-r0-b0-1-model.fits"
GRID = "5760,6760,0.8"
BUNDLE = ["-w", GRID, "-s", "0", "-n", "25", "--psferr", "0.01"]


def data(name):
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        sys.exit(f"claims.py: {path} not found (the reference data; set PERFEX_SHARED_DATA)")
    return path


def machine():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            words = next(ln for ln in f if ln.startswith("flags")).split()
        flags = "AVX-512" if "avx512f" in words else ("AVX2" if "avx2" in words else "no AVX2")
    except (OSError, StopIteration):
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model} ({flags}), {os.cpu_count()} CPUs, load average {load}"


def decompressed(tmp):
    """The reference image as a plain FITS file in tmp."""
    import gzip
    import shutil

    path = os.path.join(tmp, IMAGE[:-3])
    with gzip.open(data(IMAGE)) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return path


def extract_exe(args):
    exe = args.perfex_extract or os.path.join(ROOT, "build", "tools", "perfex-extract")
    if not os.access(exe, os.X_OK):
        sys.exit(f"claims.py: {exe} not found: build perfex-extract, or give --perfex-extract")
    return exe


def run(cmd, env=None):
    """(wall seconds, peak resident MB) of a whole process; fails on a non-zero exit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"claims.py: {' '.join(cmd)} failed:\n{stderr}")
    return seconds, usage.ru_maxrss / 1024.0


def accuracy(args):
    import numpy as np
    import perfex
    from astropy.io import fits

    with fits.open(data(REFERENCE)) as hdus:
        ref = {h.name: np.asarray(h.data, dtype=np.float64) for h in hdus if h.data is not None}
    sigma = np.sqrt(ref["IVAR"])
    pre = perfex.read_preproc(data(IMAGE))
    psf = perfex.read_psf(data(PSF))
    opts = dict(wavelength=GRID, specmin=0, nspec=50, psferr=0.01)
    frame = perfex.extract_frame(pre.pixels, pre.ivar, psf, progress=False, model_image=True, **opts)
    print("in memory (float64), perfex.extract_frame against gpu_specter's float64 arrays:")
    print(f"  flux   max |dflux| * sqrt(ivar) = {np.max(np.abs(frame.flux - ref['FLUX']) * sigma):.2g} sigma")
    print(f"  ivar   max relative difference  = {np.max(np.abs(frame.ivar / ref['IVAR'] - 1)):.2g}")
    print(f"  resolution max |difference|     = {np.max(np.abs(frame.resolution - ref['RESOLUTION'])):.2g}")

    with tempfile.TemporaryDirectory() as tmp:
        out, model = os.path.join(tmp, "frame.fits"), os.path.join(tmp, "model.fits")
        subprocess.run(
            [
                extract_exe(args),
                "-i",
                data(IMAGE),
                "-p",
                data(PSF),
                "-o",
                out,
                "-m",
                model,
                "-w",
                GRID,
                "-s",
                "0",
                "-n",
                "50",
                "--psferr",
                "0.01",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with fits.open(out) as hdus:
            written = {h.name: np.asarray(h.data) for h in hdus if h.data is not None}
        with fits.open(model) as hdus:
            written_model = np.asarray(hdus[0].data, dtype=np.float64)
    print("the frame file perfex-extract writes (float32) against gpu_specter's arrays:")
    flux32 = written["FLUX"].astype(np.float64)
    print(
        f"  flux   max |dflux| * sqrt(ivar) = {np.max(np.abs(flux32 - ref['FLUX']) * sigma):.2g} sigma "
        "(float32 rounding)"
    )
    for name in ("FLUX", "IVAR", "RESOLUTION", "CHI2PIX"):
        mine, theirs = written[name].astype("=f4"), ref[name].astype("=f4")  # native order
        ulps = np.abs(mine.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64))
        print(
            f"  {name:10s} {np.count_nonzero(ulps)} of {mine.size} float32 values differ from gpu_specter's "
            f"rounded to float32 (at most {ulps.max()} ulp)"
        )

    with fits.open(data(REFERENCE_MODEL)) as hdus:
        hdu = next(h for h in hdus if h.data is not None)
        y0, x0 = int(hdu.header["Y0"]), int(hdu.header["X0"])
        cut = np.asarray(hdu.data, dtype=np.float64)
    full = np.zeros_like(frame.model)
    full[y0 : y0 + cut.shape[0], x0 : x0 + cut.shape[1]] = cut
    print(
        "model image against gpu_specter's (electrons, peak "
        f"{cut.max():.0f}): in memory max |difference| {np.max(np.abs(frame.model - full)):.2g}; "
        f"the file -m writes: {np.max(np.abs(written_model - full)):.2g}"
    )


def speed(args):
    spex = os.path.join(args.gpu_specter, "bin", "spex")
    if not os.path.exists(spex):
        sys.exit(f"claims.py: {spex} not found (a gpu_specter checkout: --gpu-specter)")
    one_thread = one_thread_env()
    spex_env = dict(one_thread, PYTHONPATH=os.path.join(args.gpu_specter, "py"))
    with tempfile.TemporaryDirectory() as tmp:
        common = ["-i", decompressed(tmp), "-p", data(PSF)] + BUNDLE
        perfex_cmd = [extract_exe(args)] + common + ["-o", os.path.join(tmp, "p.fits"), "--threads", "1"]
        spex_cmd = [args.spex_python, spex] + common + ["-o", os.path.join(tmp, "s.fits")]
        print("perfex:", " ".join(perfex_cmd))
        print("spex:  ", " ".join(spex_cmd))
        run(spex_cmd, spex_env)  # numba's compilation cache warms up
        pairs = []
        for n in range(args.pairs):
            p, p_rss = run(perfex_cmd, one_thread)
            s, s_rss = run(spex_cmd, spex_env)
            pairs.append((p, s))
            print(
                f"  pair {n + 1}: perfex {p:.3f} s ({p_rss:.0f} MB), spex {s:.2f} s ({s_rss:.0f} MB): "
                f"{s / p:.1f}x   [load {os.getloadavg()[0]:.2f}]"
            )
    perfex_median = statistics.median(p for p, _ in pairs)
    spex_median = statistics.median(s for _, s in pairs)
    ratios = [s / p for p, s in pairs]
    print(
        f"median perfex {perfex_median:.3f} s, spex {spex_median:.2f} s: perfex "
        f"{spex_median / perfex_median:.0f}x faster (pairs {min(ratios):.0f}-{max(ratios):.0f}x)"
    )


def one_thread_env():
    return dict(
        os.environ,
        OMP_NUM_THREADS="1",
        NUMBA_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_PROC_BIND="false",
    )


def warm_worker(peer, image):
    """One peer in a process of its own: the image and PSF read into memory and the bundle
    extracted once, then 'ready' on stdout, then per line on stdin the bundle extracted again and
    the call's [wall, CPU] seconds on stdout (anything else the peer prints goes to stderr)."""
    import json

    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    if peer == "perfex":
        import perfex

        psf = perfex.read_psf(data(PSF))
        img = perfex.read_preproc(image)

        def call():
            perfex.extract_frame(
                img.pixels, img.ivar, psf, wavelength=GRID, specmin=0, nspec=25, psferr=0.01, threads=1, progress=False
            )

    else:
        from gpu_specter.core import extract_frame
        from gpu_specter.io import read_img, read_psf

        img, psf = read_img(image), read_psf(data(PSF))

        def call():  # spex's defaults: 5 sub-bundles, 50 wavelengths per patch
            extract_frame(img, psf, 25, 0, 25, GRID, 50, 5, psferr=0.01, loglevel="warning")

    call()
    print("ready", file=proto, flush=True)
    for _ in sys.stdin:
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        print(json.dumps([time.perf_counter() - t0, time.process_time() - c0]), file=proto, flush=True)


def warm(args):
    import json

    if not os.path.isdir(os.path.join(args.gpu_specter, "py", "gpu_specter")):
        sys.exit(f"claims.py: {args.gpu_specter}/py/gpu_specter not found (a gpu_specter checkout: --gpu-specter)")
    one_thread = one_thread_env()
    with tempfile.TemporaryDirectory() as tmp:
        image = decompressed(tmp)
        out = os.path.join(tmp, "p.fits")
        perfex_cmd = [extract_exe(args), "-i", image, "-p", data(PSF), "-o", out, "--threads", "1"] + BUNDLE
        workers = {}
        for peer, python, env in (
            ("gpu_specter", args.spex_python, dict(one_thread, PYTHONPATH=os.path.join(args.gpu_specter, "py"))),
            ("perfex", sys.executable, one_thread),
        ):
            cmd = [python, os.path.abspath(__file__), "--warm-worker", peer, image]
            print(f"{peer} (warm):", " ".join(cmd))
            workers[peer] = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print("perfex-extract (whole process):", " ".join(perfex_cmd))

        def turn(peer):
            w = workers[peer]
            w.stdin.write("go\n")
            w.stdin.flush()
            line = w.stdout.readline()
            if not line:
                sys.exit(f"claims.py: the {peer} worker stopped (its messages are above)")
            return json.loads(line)

        for peer, w in workers.items():
            if w.stdout.readline().strip() != "ready":
                sys.exit(f"claims.py: the {peer} worker did not start (its messages are above)")
        rows = []
        for n in range(args.pairs):
            process, _ = run(perfex_cmd, one_thread)
            (p, p_cpu), (g, g_cpu) = turn("perfex"), turn("gpu_specter")
            rows.append((process, p, g))
            print(
                f"  turn {n + 1}: gpu_specter warm {g:.2f} s (CPU {g_cpu:.2f} s), perfex warm {p:.3f} s "
                f"(CPU {p_cpu:.3f} s): {g / p:.1f}x; perfex-extract process {process:.3f} s: {g / process:.1f}x"
                f"   [load {os.getloadavg()[0]:.2f}]"
            )
        for w in workers.values():
            w.stdin.close()
            w.wait()
    med = [statistics.median(r[i] for r in rows) for i in range(3)]
    for label, i in (("perfex warm, in memory", 1), ("perfex-extract, whole process", 0)):
        ratios = [r[2] / r[i] for r in rows]
        print(
            f"median gpu_specter warm {med[2]:.2f} s, {label} {med[i]:.3f} s: perfex {med[2] / med[i]:.1f}x "
            f"faster (turns {min(ratios):.1f}-{max(ratios):.1f}x)"
        )


def memory(args):
    exe = extract_exe(args)
    with tempfile.TemporaryDirectory() as tmp:
        image = decompressed(tmp)
        for label, extra in (
            ("bundle (25 fibres)", BUNDLE),
            ("50-fibre image", ["-w", GRID, "-n", "50", "--psferr", "0.01"]),
        ):
            cmd = [exe, "-i", image, "-p", data(PSF), "-o", os.path.join(tmp, "f.fits"), "--threads", "1"] + extra
            seconds, rss = run(cmd, dict(os.environ, OMP_PROC_BIND="false"))
            print(f"{label}: peak resident memory {rss:.0f} MB ({seconds:.2f} s)   {' '.join(cmd)}")


def main():
    if sys.argv[1:2] == ["--warm-worker"]:
        return warm_worker(sys.argv[2], sys.argv[3])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("accuracy", "speed", "warm", "memory"))
    p.add_argument("--perfex-extract", help="perfex-extract to run (default build/tools/perfex-extract)")
    p.add_argument(
        "--spex-python",
        default=sys.executable,
        help="a Python with numba, fitsio, astropy and scipy, for gpu_specter",
    )
    p.add_argument(
        "--gpu-specter",
        default=os.path.join(CLIENTS, "gpu_specter"),
        help="gpu_specter checkout (default ../clients/gpu_specter)",
    )
    p.add_argument("--pairs", type=int, default=3, help="speed, warm: runs of each, in turn")
    args = p.parse_args()
    print(f"machine: {machine()}")
    {"accuracy": accuracy, "speed": speed, "warm": warm, "memory": memory}[args.what](args)
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
