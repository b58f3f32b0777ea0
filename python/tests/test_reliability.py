"""Every Python entry point keeps perfex-extract's promises: the same refusals (before any work,
with the parameter named), no input ever overwritten, no crash, no hang, nothing left behind,
clear messages. The command line's exit statuses are perfex-extract's: 0 done, 1 failed, 2
refused, 3 written with failed patches."""

import hashlib
import multiprocessing
import os
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import perfex
import pytest
from perfex import gpu_specter

from conftest import (
    REPO,
    assert_frames_identical,
    mpi_launcher,
    mpirun,
    output,
    python_env,
    run_python,
    without_log_lines,
)

QUICK = dict(wavelength="5760,5800,0.8", specmin=0, nspec=5, psferr=0.01)
QUICK_ARGS = ["-w", "5760,5800,0.8", "-s", "0", "-n", "5", "--psferr", "0.01"]


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def inputs(tmp_path, masked, psf_path):
    """Copies of an image and the PSF that a test may see destroyed (it must not)."""
    image, psf = tmp_path / "i.fits", tmp_path / "p.fits"
    image.write_bytes(open(masked.path, "rb").read())
    psf.write_bytes(open(psf_path, "rb").read())
    return image, psf


def run_cli(args, **env):
    return run_python(["-m", "perfex.extract"] + [str(a) for a in args], timeout=300, **env)


# ---- 1. inputs are never overwritten -----------------------------------------------------------


@pytest.mark.parametrize(
    "outputs",
    [
        ("-o", "p.fits"),
        ("-o", "i.fits"),
        ("-o", "f.fits", "-m", "i.fits"),
        ("-o", "a.fits", "-m", "a.fits"),
        ("-o", "d/../p.fits"),
        ("-o", "hard.fits"),
        ("-o", "sym.fits"),
    ],
)
def test_command_line_never_writes_over_an_input(outputs, inputs, tmp_path):
    image, psf = inputs
    (tmp_path / "d").mkdir()
    os.link(psf, tmp_path / "hard.fits")
    os.symlink(image, tmp_path / "sym.fits")
    before = digest(image), digest(psf)
    t0 = time.time()
    r = run_cli(["-i", image, "-p", psf] + [tmp_path / o if o.endswith(".fits") else o for o in outputs] + QUICK_ARGS)
    assert r.returncode == 2, r.stderr
    assert "perfex never writes over its inputs" in output(r) or "is also the" in output(r), output(r)
    assert (digest(image), digest(psf)) == before
    assert not (tmp_path / "a.fits").exists() and not (tmp_path / "f.fits").exists()
    assert time.time() - t0 < 60  # refused before any extraction


def test_frames_list_outputs_are_checked_across_lines(inputs, tmp_path):
    image, psf = inputs
    (tmp_path / "d").mkdir()
    cases = {
        "a model that is another line's output": f"{image} {psf} {tmp_path}/a.fits\n"
        f"{image} {psf} {tmp_path}/b.fits {tmp_path}/a.fits\n",
        "d/a.fits and d/./a.fits": f"{image} {psf} {tmp_path}/d/a.fits\n{image} {psf} {tmp_path}/d/./a.fits\n",
        "an output that is another line's input": f"{image} {psf} {tmp_path}/a.fits\n"
        f"{tmp_path}/a.fits {psf} {tmp_path}/b.fits\n",
    }
    for what, text in cases.items():
        listing = tmp_path / "frames.txt"
        listing.write_text(text)
        r = run_cli(["--frames", listing] + QUICK_ARGS)
        assert r.returncode == 2, (what, r.stderr)
        assert "frame 2" in output(r), (what, output(r))
        assert not (tmp_path / "a.fits").exists() and not (tmp_path / "d" / "a.fits").exists(), what


def test_write_frame_never_writes_over_its_inputs(small_frame, inputs, tmp_path):
    image, psf = inputs
    before = digest(image), digest(psf)
    for target in (psf, image, tmp_path / "." / "p.fits"):
        with pytest.raises(perfex.RequestError, match="never writes over its inputs"):
            perfex.write_frame(target, small_frame, image, psf)
    with pytest.raises(perfex.RequestError, match="never writes over its inputs"):
        perfex.write_model(image, small_frame, image, psf)
    assert (digest(image), digest(psf)) == before


def test_check_outputs_by_identity(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "in.fits").write_text("x")
    perfex.check_outputs([("out", tmp_path / "d" / "a.fits")], [("in", tmp_path / "in.fits")])
    with pytest.raises(perfex.RequestError, match="is also the first file"):
        perfex.check_outputs([("first", tmp_path / "d" / "a.fits"), ("second", tmp_path / "d" / "." / "a.fits")], [])
    with pytest.raises(perfex.RequestError, match="folder"):
        perfex.check_outputs([("out", tmp_path / "missing" / "a.fits")], [])
    with pytest.raises(perfex.RequestError, match="is a directory"):
        perfex.check_outputs([("out", tmp_path / "d")], [])


# ---- 2. no input crashes the interpreter -------------------------------------------------------


@pytest.mark.parametrize("specmin, nspec", [(1, 2**31 - 1), (2**31 - 1, 1), (0, 2**31), (-1, 5), (0, 0)])
def test_fibre_ranges_beyond_the_psf_are_refused(masked, psf, specmin, nspec):
    with pytest.raises(perfex.RequestError, match="specmin|nspec"):
        perfex.extract_frame(masked, psf=psf, progress=False, wavelength="5760,5800,0.8", specmin=specmin, nspec=nspec)


def test_fibre_ranges_on_the_command_line(inputs, tmp_path):
    image, psf = inputs
    r = run_cli(
        ["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "-w", "5760,5800,0.8", "-s", "1", "-n", "2147483647"]
    )
    assert r.returncode == 2 and "fibres 1-2147483647" in output(r) and "Traceback" not in r.stderr, output(r)


@pytest.mark.parametrize("how", ["initialize", "env"])
def test_more_than_512_threads(how):
    code = (
        "import perfex; perfex.initialize(600)"
        if how == "initialize"
        else "import perfex, warnings; warnings.simplefilter('ignore'); print(perfex.initialize())"
    )
    env = {"OMP_NUM_THREADS": "600"} if how == "env" else {"OMP_NUM_THREADS": "1"}
    r = run_python(["-c", code], timeout=120, **env)
    assert r.returncode in (0, 1) and r.returncode != -signal.SIGSEGV, r.stderr
    if how == "initialize":
        assert r.returncode == 1 and "at most 512" in r.stderr and "RequestError" in r.stderr
    else:
        assert r.returncode == 0 and without_log_lines(r.stdout).strip() == "512", output(r)
        assert "exceeds the 512 threads" in output(r)


def test_threads_600_on_the_command_line(inputs, tmp_path):
    image, psf = inputs
    r = run_cli(["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "--threads", "600"] + QUICK_ARGS)
    assert r.returncode == 2 and "--threads" in r.stderr and "512" in r.stderr


# ---- 3. no hang ----------------------------------------------------------------------------------


def test_fork_after_the_runtime_started():
    """The child of a fork cannot use the parent's runtime: a clear error, and it exits."""
    code = """
import os, sys, perfex
perfex.initialize(1)
pid = os.fork()
if pid == 0:
    try:
        perfex.Image([[1.0]], [[1.0]])
        print("no error")
    except perfex.Error as e:
        print("child:", e)
    sys.exit(7)
_, status = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(status))
"""
    r = run_python(["-c", code], timeout=60)
    assert r.returncode == 0, r.stderr
    assert "child: perfex: this process was forked after the perfex runtime started" in r.stdout
    assert "child status 7" in r.stdout


def _extract_in_worker(args):
    image, psf = args
    try:
        perfex.extract_frame(perfex.read_preproc(image), psf=psf, progress=False, **QUICK)
        return "extracted"
    except perfex.Error as e:
        return str(e)


def test_multiprocessing_fork_workers_get_an_error(masked, psf_path):
    perfex.initialize()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.map_async(_extract_in_worker, [(masked.path, psf_path)] * 2).get(timeout=120)
    assert all("forked after the perfex runtime started" in r for r in results), results


def test_spawn_workers_extract(masked, psf_path):
    """The recipe of docs/python.md: workers started with 'spawn' (or 'forkserver') start their
    own runtime and extract, whatever the parent's runtime does."""
    perfex.initialize()
    expected = perfex.extract_frame(masked, psf=psf_path, progress=False, **QUICK).flux
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2, initializer=perfex.initialize, initargs=(1,)) as pool:
        flux = pool.map_async(_flux_in_worker, [(masked.path, psf_path)] * 2).get(timeout=300)
    assert all(np.array_equal(f, expected) for f in flux)


def _flux_in_worker(args):
    image, psf = args
    return perfex.extract_frame(perfex.read_preproc(image), psf=psf, progress=False, **QUICK).flux


def test_fork_before_the_runtime_started(masked, psf_path, tmp_path):
    """A child forked before the runtime started (perfex imported, nothing run) starts its own."""
    code = f"""
import os, sys, numpy as np, perfex
QUICK = {QUICK!r}
pid = os.fork()
frame = perfex.extract_frame(perfex.read_preproc({masked.path!r}), psf={psf_path!r}, progress=False,
                             **QUICK)
if pid == 0:
    np.save(sys.argv[1], frame.flux)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
assert np.array_equal(np.load(sys.argv[1]), frame.flux)
print("both extracted")
"""
    r = run_python(["-c", code, str(tmp_path / "child.npy")], timeout=300)
    assert r.returncode == 0 and "both extracted" in r.stdout, output(r)


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["--nwavestep", "100000"], "nwavestep 100000 exceeds the grid's 51 wavelengths"),
        (["--wavepad-frac", "1e6"], "--wavepad-frac"),
        (["-w", "5760,6760,1e-6"], "1000000001 wavelengths"),
    ],
)
def test_command_line_preflight(inputs, tmp_path, extra, expect):
    image, psf = inputs
    args = ["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "-s", "0", "-n", "5", "--psferr", "0.01"]
    if "-w" not in extra:
        args += ["-w", "5760,5800,0.8"]
    t0 = time.time()
    r = run_cli(args + extra)
    assert time.time() - t0 < 120
    assert expect in output(r), output(r)
    assert r.returncode == (0 if "--nwavestep" in extra else 2), r.stderr


def test_drop_in_wavepad_is_clamped(masked, psf, caplog):
    img = {"image": masked.pixels, "ivar": masked.ivar}
    t0 = time.time()
    out = gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", wavepad=100000, psferr=0.01)
    assert time.time() - t0 < 60
    assert out["specflux"].shape == (5, 51)
    assert any("wavelength padding of 120000 bins" in r.message for r in caplog.records)


@pytest.mark.mpi
@pytest.mark.parametrize("bad", ["wavelength", "ivar", "xtrace"])
def test_drop_in_bad_arguments_on_rank_0_stop_every_rank(bad, masked, psf_path, tmp_path):
    # Rank 0 reads the PSF with astropy: without it, only rank 0 would fail, before the call.
    pytest.importorskip("astropy")
    script = tmp_path / "bad.py"
    script.write_text(f"""
import sys
from mpi4py import MPI
import perfex
from perfex import gpu_specter
comm = MPI.COMM_WORLD
img = psf = None
wavelength = "5760,5800,0.8"
if comm.rank == 0:
    pre = perfex.read_preproc({masked.path!r})
    img = {{"image": pre.pixels, "ivar": pre.ivar}}
    psf = gpu_specter.io.read_psf({psf_path!r})
    if {bad!r} == "wavelength":
        wavelength = "5760,5800"
    elif {bad!r} == "ivar":
        del img["ivar"]
    else:
        del psf["XTRACE"]
try:
    gpu_specter.extract_frame(img, psf, 25, 0, 5, wavelength, psferr=0.01, comm=comm)
    result = "no error"
except Exception as e:
    result = f"error: {{type(e).__name__}}: {{e}}"
open({str(tmp_path)!r} + f"/rank-{{comm.rank}}.txt", "w").write(result)
""")
    r = mpirun(3, [str(script)], timeout=120)
    assert r.returncode == 0, output(r)
    results = [(tmp_path / f"rank-{rank}.txt").read_text() for rank in range(3)]
    assert all(x.startswith("error: ") for x in results), results
    assert len(set(results)) == 1, results  # the same error on every rank
    expected = {
        "wavelength": "wavelength: expected 'wmin,wmax,dw'",
        "ivar": "'image' and 'ivar'",
        "xtrace": "has no XTRACE",
    }[bad]
    assert expected in results[0], results


# ---- 4. no silently wrong result -------------------------------------------------------------


def test_two_runs_with_one_fibermap_at_once(inputs, tmp_path):
    """-f writes the frame in one atomic step: two runs sharing a fibermap file never mix."""
    fits = pytest.importorskip("astropy.io.fits")
    image, psf = inputs
    fibermap = tmp_path / "fibermap.fits"
    with fits.open(image) as img:
        table = img["FIBERMAP"].copy()
        table.data["TARGETID"] = np.arange(len(table.data)) + 1000
        table.writeto(fibermap)
    runs = []
    for specmin in (0, 10):
        args = [
            sys.executable,
            "-m",
            "perfex.extract",
            "-i",
            image,
            "-p",
            psf,
            "-f",
            fibermap,
            "-o",
            tmp_path / f"f{specmin}.fits",
            "-w",
            "5760,5800,0.8",
            "-s",
            str(specmin),
            "-n",
            "5",
            "--threads",
            "1",
        ]
        runs.append(subprocess.Popen([str(a) for a in args], env=python_env(), stderr=subprocess.PIPE))
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read()
    for specmin in (0, 10):
        with fits.open(tmp_path / f"f{specmin}.fits") as f:
            assert list(f["FIBERMAP"].data["TARGETID"]) == list(range(1000 + specmin, 1005 + specmin))
    assert sorted(os.listdir(tmp_path)) == ["f0.fits", "f10.fits", "fibermap.fits", "i.fits", "p.fits"]


def test_image_not_the_psfs_ccd(masked, psf):
    with pytest.raises(perfex.Error, match="transposed") as e:
        perfex.extract_frame(masked.pixels.T.copy(), masked.ivar.T.copy(), psf, progress=False, **QUICK)
    assert "allow_image_size_mismatch=True" in str(e.value)
    small = perfex.extract_frame(
        masked.pixels[:3000], masked.ivar[:3000], psf, progress=False, allow_image_size_mismatch=True, **QUICK
    )
    assert any("NPIX_Y = 4128" in w for w in small.warnings)


def test_grid_outside_the_psf_is_refused(masked, psf):
    with pytest.raises(perfex.RequestError, match="wavelength: .*entirely outside"):
        perfex.extract_frame(masked, psf=psf, progress=False, wavelength="1000,2000,0.8", nspec=5)


@pytest.mark.parametrize("psferr", [float("nan"), float("inf"), -0.5, "x"])
def test_bad_psferr_is_refused(masked, psf, psferr):
    with pytest.raises(perfex.RequestError, match="psferr"):
        perfex.extract_frame(masked, psf=psf, progress=False, wavelength="5760,5800,0.8", nspec=5, psferr=psferr)


@pytest.mark.parametrize("value", ["nan", "-0.5"])
def test_bad_psferr_on_the_command_line(inputs, tmp_path, value):
    image, psf = inputs
    r = run_cli(
        ["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "-w", "5760,5800,0.8", "-n", "5", "--psferr", value]
    )
    assert r.returncode == 2 and "psferr" in output(r), output(r)


# ---- 5. nothing left behind, failures found first ---------------------------------------------


def test_sigterm_while_writing_the_model(inputs, tmp_path):
    image, psf = inputs
    out = tmp_path / "out"
    out.mkdir()
    args = [
        sys.executable,
        "-m",
        "perfex.extract",
        "-i",
        image,
        "-p",
        psf,
        "-o",
        out / "f.fits",
        "-m",
        out / "m.fits",
    ] + QUICK_ARGS
    proc = subprocess.Popen([str(a) for a in args], env=python_env(OMP_NUM_THREADS="1"), stderr=subprocess.PIPE)
    deadline = time.time() + 300
    seen = False
    while time.time() < deadline and proc.poll() is None and not seen:
        seen = any(n.startswith(".m.fits.tmp-") or n.startswith(".f.fits.tmp-") for n in os.listdir(out))
        if not seen:
            time.sleep(0.0002)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert seen, "the run ended before a temporary appeared"
    assert proc.returncode == -signal.SIGTERM
    assert [n for n in os.listdir(out) if n.startswith(".")] == []


def test_missing_output_folder_is_found_first(inputs, tmp_path):
    image, psf = inputs
    t0 = time.time()
    r = run_cli(["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "-m", tmp_path / "no" / "m.fits"] + QUICK_ARGS)
    assert r.returncode == 2 and "-m/--model" in output(r) and "no" in output(r), output(r)
    assert "extracting" not in output(r)
    assert not (tmp_path / "f.fits").exists()
    assert time.time() - t0 < 60


def test_failed_patches_exit_status_3(inputs, tmp_path):
    image, psf = inputs
    r = run_cli(["-i", image, "-p", psf, "-o", tmp_path / "f.fits", "-r", "1e300"] + QUICK_ARGS)
    assert r.returncode == 3, r.stderr
    assert "patches failed" in output(r) and (tmp_path / "f.fits").exists()


# ---- 6. messages ----------------------------------------------------------------------------------


def test_disk_full_names_the_reason(small_frame, tmp_path):
    """A write that the system refuses (here a file size limit, as a full disk or quota would)
    says why, in the system's words."""
    code = f"""
import pickle, resource, signal, perfex
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
frame = pickle.load(open({str(tmp_path / "frame.pkl")!r}, "rb"))
resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000))
try:
    perfex.write_frame({str(tmp_path / "f.fits")!r}, frame)
except perfex.Error as e:
    print("error:", e)
"""
    import pickle

    pickle.dump(small_frame, open(tmp_path / "frame.pkl", "wb"))
    r = run_python(["-c", code], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "error:" in r.stdout and "File too large" in r.stdout, r.stdout
    assert not (tmp_path / "f.fits").exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_image_arrays_changed_after_construction_are_checked(masked, psf):
    """Changes among the pixels the patches read (rows 351-532, columns 113-166)."""
    pixels, ivar = masked.pixels.copy(), masked.ivar.copy()
    image = perfex.Image(pixels, ivar)
    assert image.in_place
    ivar[400, 130] = -1.0
    with pytest.raises(perfex.Error, match="negative inverse variance .* row 400, column 130"):
        perfex.extract_frame(image, psf=psf, progress=False, **QUICK)
    ivar[400, 130] = 1.0
    pixels[450, 120] = np.nan
    frame = perfex.extract_frame(image, psf=psf, progress=False, **QUICK)
    assert frame.nonfinite_pixels == 1


def test_drop_in_psf_dict_missing_a_column(psf_path, masked):
    pytest.importorskip("astropy")
    img = {"image": masked.pixels, "ivar": masked.ivar}
    for table, column in (("PSF", "COEFF"), ("PSF", "PARAM"), ("XTRACE", "X")):
        psf = gpu_specter.io.read_psf(psf_path)
        psf[table].remove_column(column)
        with pytest.raises(perfex.Error, match=column):
            gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8")


@pytest.mark.parametrize("mask", [0.7, -1, 2**32])
def test_write_frame_mask_values(small_frame, tmp_path, mask):
    frame = perfex.Frame(**{**small_frame.__dict__, "mask": np.full(small_frame.flux.shape, mask)})
    with pytest.raises(perfex.Error, match="mask"):
        perfex.write_frame(tmp_path / "f.fits", frame)
    assert not (tmp_path / "f.fits").exists()


def test_exposure_with_many_failures_has_a_short_summary(inputs, tmp_path):
    image, psf = inputs
    listing = tmp_path / "frames.txt"
    listing.write_text("".join(f"{tmp_path}/missing-{n}.fits {psf} {tmp_path}/f{n}.fits\n" for n in range(300)))
    r = run_cli(["--frames", listing] + QUICK_ARGS)
    assert r.returncode == 1
    summary = [line for line in output(r).splitlines() if "frames failed" in line]
    assert len(summary) == 1 and "300 of 300 frames failed" in summary[0] and len(summary[0]) < 400
    assert "and 295 more" in summary[0]


# ---- 7. the environment: every thread variable checked before the runtime starts --------------

THREAD_ENVIRONMENTS = [
    # (environment, threads=, the count started, or the refusal's words)
    ({"OMP_NUM_THREADS": "100000"}, None, 512),
    ({"OMP_NUM_THREADS": "4,2"}, None, 4),
    ({"OMP_NUM_THREADS": "3", "OMP_DYNAMIC": "true"}, None, 3),
    ({"OMP_NUM_THREADS": "abc"}, None, "OMP_NUM_THREADS='abc': expected a positive integer"),
    ({"KOKKOS_NUM_THREADS": "600"}, None, "KOKKOS_NUM_THREADS: at most 512"),
    ({"KOKKOS_NUM_THREADS": "0"}, None, "KOKKOS_NUM_THREADS: must be >= 1"),
    ({"KOKKOS_NUM_THREADS": "x"}, None, "KOKKOS_NUM_THREADS='x': not a thread count"),
    ({"KOKKOS_NUM_THREADS": "3"}, None, 3),
    ({"KOKKOS_NUM_THREADS": "3"}, 2, "threads (2 threads) and KOKKOS_NUM_THREADS (3) disagree"),
    ({"OMP_THREAD_LIMIT": "1"}, 2, "threads: 2 threads, but OMP_THREAD_LIMIT=1 allows fewer"),
    ({"GOMP_CPU_AFFINITY": "0,1000"}, 2, "GOMP_CPU_AFFINITY='0,1000': thread 1 would be bound"),
    ({"KOKKOS_NUMA": "x"}, None, "KOKKOS_NUMA='x': Kokkos reads this variable as an integer"),
]


def run_python_without_thread_variables(args, env):
    """run_python with only the thread variables of env set."""
    full = python_env()
    for var in ("OMP_NUM_THREADS", "KOKKOS_NUM_THREADS", "OMP_THREAD_LIMIT", "GOMP_CPU_AFFINITY", "OMP_PROC_BIND"):
        full.pop(var, None)
    full.update(env)
    return subprocess.run([sys.executable] + list(args), env=full, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("env, threads, expect", THREAD_ENVIRONMENTS)
def test_thread_environment_of_initialize(env, threads, expect):
    """perfex.initialize() with hostile thread variables: the count, or a RequestError naming the
    variable; never a crash (OMP_NUM_THREADS=100000 and KOKKOS_NUM_THREADS=600 crashed)."""
    code = f"""
import warnings, perfex
warnings.simplefilter("ignore")
try:
    print("threads", perfex.initialize({threads!r}))
except perfex.RequestError as e:
    print("refused:", e)
"""
    r = run_python_without_thread_variables(["-c", code], env)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    if isinstance(expect, int):
        assert without_log_lines(r.stdout).strip() == f"threads {expect}", output(r)
    else:
        assert r.stdout.startswith("refused: ") and expect in r.stdout, output(r)


def test_thread_environment_of_the_command_line_and_the_drop_in(inputs, tmp_path):
    image, psf = inputs
    r = run_cli(["-i", image, "-p", psf, "-o", tmp_path / "f.fits"] + QUICK_ARGS, KOKKOS_NUM_THREADS="600")
    assert r.returncode == 2, r.stderr
    assert "error: KOKKOS_NUM_THREADS: at most 512" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "f.fits").exists()
    code = f"""
import perfex
from perfex import gpu_specter
pre = perfex.read_preproc({str(image)!r})
try:
    gpu_specter.extract_frame({{"image": pre.pixels, "ivar": pre.ivar}}, {str(psf)!r}, 25, 0, 5,
                              "5760,5800,0.8", psferr=0.01)
except perfex.RequestError as e:
    print("refused:", e)
"""
    r = run_python(["-c", code], timeout=120, OMP_NUM_THREADS="4,x")
    assert r.returncode == 0 and "refused: OMP_NUM_THREADS='4,x'" in r.stdout, output(r)


# ---- 8. the drop-in's messages name the file, the HDU, the value -------------------------------


@pytest.fixture
def not_fits(tmp_path):
    """Files the drop-in's readers must refuse with perfex's messages."""
    fits = pytest.importorskip("astropy.io.fits")
    text = tmp_path / "notes.txt"
    text.write_text("not a FITS file\n")
    empty = tmp_path / "empty.fits"
    empty.write_bytes(b"")
    primary = tmp_path / "primary-only.fits"
    fits.HDUList([fits.PrimaryHDU(np.zeros(3))]).writeto(primary)
    return dict(text=text, empty=empty, primary=primary, folder=tmp_path)


@pytest.mark.parametrize("reader, hdu", [("read_psf", "PSF"), ("read_img", "IMAGE"), ("read_frame", "FLUX")])
def test_drop_in_readers_name_the_file_and_hdu(reader, hdu, not_fits):
    read = getattr(gpu_specter.io, reader)
    expected = {
        "text": "not a FITS file (it does not begin with a SIMPLE card)",
        "empty": "the file is empty",
        "folder": "is a directory",
        "primary": f"no HDU with EXTNAME '{hdu}' (its HDUs: primary)",
    }
    for name, words in expected.items():
        path = not_fits[name]
        with pytest.raises(OSError) as e:
            read(str(path))
        assert f"FITS file '{path}'" in str(e.value) and words in str(e.value), str(e.value)
        assert "SIMPLE card found" not in str(e.value) and "No table found" not in str(e.value)


def test_drop_in_writers_say_file_too_large(tmp_path):
    """Under `ulimit -f` the system's reason reaches the message (astropy said only "31275
    requested and 18080 written"); the old file stays, no temporary is left."""
    code = f"""
import resource, numpy as np
from perfex import gpu_specter
resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000))
frame = dict(specflux=np.ones((50, 2000)), specivar=np.ones((50, 2000)), specmask=np.zeros((50, 2000), int),
             wave=np.arange(2000.0), Rdiags=np.zeros((50, 11, 2000)), chi2pix=np.zeros((50, 2000)),
             imagehdr=None, fibermap=None, fibermaphdr=None, modelimage=np.ones((300, 300)))
for write, name in ((gpu_specter.io.write_frame, "frame.fits"), (gpu_specter.io.write_model, "model.fits")):
    try:
        write({str(tmp_path)!r} + "/" + name, frame)
        print("written", name)
    except OSError as e:
        print("refused:", e.errno, e)
"""
    (tmp_path / "frame.fits").write_bytes(b"old")
    (tmp_path / "model.fits").write_bytes(b"old")
    r = run_python(["-c", code], timeout=120)
    assert r.returncode == 0, r.stderr
    for name in ("frame.fits", "model.fits"):
        assert f"refused: 27 [Errno 27] cannot write {tmp_path}/{name}: File too large" in r.stdout, r.stdout
        assert (tmp_path / name).read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["frame.fits", "model.fits"]


@pytest.mark.parametrize(
    "grid, words",
    [
        ("nan", "wavelength: value [7] = nan is not finite"),
        ("decreasing", "the grid must increase, but [1] = 5799.2"),
        ("uneven", "[10] = 5768.1"),
        ("one", "a grid needs at least two wavelengths, got 1"),
    ],
)
def test_drop_in_grid_messages(grid, words, masked, psf):
    wave = np.arange(5760, 5800.4, 0.8)
    wave = {
        "nan": np.where(np.arange(wave.size) == 7, np.nan, wave),
        "decreasing": wave[::-1],
        "uneven": np.r_[wave[:10], wave[10:] + 0.1],
        "one": wave[:1],
    }[grid]
    img = {"image": masked.pixels, "ivar": masked.ivar}
    with pytest.raises(perfex.RequestError, match="wavelength") as e:
        gpu_specter.extract_frame(img, psf, 25, 0, 5, wave, psferr=0.01)
    assert words in str(e.value)
    if grid == "decreasing":
        assert "not uniform" not in str(e.value) and "uniform grids" not in str(e.value)


@pytest.mark.parametrize("wavepad", [2**40, -5, float("nan"), None, "10", 10.5])
def test_drop_in_absurd_wavepad(wavepad, masked, psf):
    img = {"image": masked.pixels, "ivar": masked.ivar}
    with pytest.raises(perfex.RequestError, match="extraction option wavepad[: ]") as e:
        gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", wavepad=wavepad, psferr=0.01)
    assert "wavepad0" not in str(e.value)


def test_drop_in_largest_wavepad_is_clamped(masked, psf, caplog):
    img = {"image": masked.pixels, "ivar": masked.ivar}
    out = gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", wavepad=2**31 - 1, psferr=0.01)
    assert out["specflux"].shape == (5, 51)
    assert any("padding of 2147483647 bins" in r.message and "using 51" in r.message for r in caplog.records)


# ---- 9. frames lists, inputs from streams, folders that take no file ---------------------------


def test_frames_list_names_with_special_characters(inputs, tmp_path):
    """'#' inside a name, blanks and quotes: the list splits as a shell does."""
    image, psf = inputs
    odd = tmp_path / "run #3"
    odd.mkdir()
    listing = tmp_path / "frames.txt"
    listing.write_text(
        f"# INPUT PSF OUTPUT\n'{image}' {psf} '{odd}/frame a#1.fits'  # first\n"
        f"{image} {psf} {str(odd).replace(' ', chr(92) + ' ')}/frame\\ b.fits\n"
    )
    r = run_cli(["--frames", listing] + QUICK_ARGS)
    assert r.returncode == 0, r.stderr
    assert (odd / "frame a#1.fits").exists() and (odd / "frame b.fits").exists()


@pytest.mark.parametrize(
    "content, words",
    [
        (b"i.fits p.fits \xff\xfe.fits\n", "line 1: not UTF-8 text (byte 0xff at byte 15)"),
        (b"i.fits p.fits 'o.fits\n", "line 1: no closing '"),
        (b"\ni.fits p.fits\n", "line 2: expected INPUT PSF OUTPUT [MODEL], got 2 fields"),
    ],
)
def test_frames_list_that_cannot_be_read(content, words, tmp_path):
    listing = tmp_path / "frames.txt"
    listing.write_bytes(content)
    r = run_cli(["--frames", listing] + QUICK_ARGS)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_frames_list_collisions(inputs, tmp_path):
    image, psf = inputs
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    listing = tmp_path / "frames.txt"
    cases = {
        "through a linked folder": f"{image} {psf} {tmp_path}/d/a.fits\n{image} {psf} {tmp_path}/link/a.fits\n",
        "d/../d": f"{image} {psf} {tmp_path}/d/a.fits\n{image} {psf} {tmp_path}/d/../d/a.fits\n",
        "the list itself": f"{image} {psf} {listing}\n",
        "a model over the list": f"{image} {psf} {tmp_path}/a.fits {listing}\n",
    }
    for what, text in cases.items():
        listing.write_text(text)
        before = listing.read_bytes()
        r = run_cli(["--frames", listing] + QUICK_ARGS)
        assert r.returncode == 2, (what, r.stderr)
        assert "is also the" in output(r) or "never writes over its inputs" in output(r), (
            what,
            output(r),
        )
        assert listing.read_bytes() == before
        assert not (tmp_path / "d" / "a.fits").exists() and not (tmp_path / "a.fits").exists()
    listing.write_text(f"{image} {psf} {tmp_path}/a.fits\n{image} {psf} {tmp_path}/b.fits\n")
    r = run_cli(["--frames", listing, "-f", image] + QUICK_ARGS)
    assert r.returncode == 2 and "1 -f for the 2 frames of --frames" in output(r), output(r)


def test_psf_from_standard_input_or_a_pipe(inputs, tmp_path):
    """Refused with a message (perfex may open an input more than once; a FIFO would wait
    for a writer): never a hang, never CFITSIO's seek error."""
    image, psf = inputs
    args = ["-m", "perfex.extract", "-i", str(image), "-o", str(tmp_path / "f.fits")] + QUICK_ARGS
    with open(psf, "rb") as f:
        data = f.read()
    for source, words in (("-", "standard input is not read"), ("/dev/stdin", "is a pipe (FIFO)")):
        r = subprocess.run(
            [sys.executable] + args + ["-p", source], input=data, env=python_env(), capture_output=True, timeout=120
        )
        assert r.returncode == 1 and words.encode() in output(r), output(r)
    fifo = tmp_path / "psf.fifo"
    os.mkfifo(fifo)
    r = run_cli(["-i", image, "-p", fifo, "-o", tmp_path / "f.fits"] + QUICK_ARGS)
    assert r.returncode == 1 and "is a pipe (FIFO)" in output(r), output(r)
    with pytest.raises(OSError, match="is a pipe"):
        gpu_specter.io.read_psf(str(fifo))
    assert not (tmp_path / "f.fits").exists()


def test_folder_that_takes_no_file(inputs, small_frame, tmp_path):
    """/proc takes no new file, whatever its permission bits say (root): refused before any work
    by the command line, the API and the plots, naming the folder."""
    image, psf = inputs
    t0 = time.time()
    r = run_cli(["-i", image, "-p", psf, "-o", "/proc/frame.fits"] + QUICK_ARGS)
    assert r.returncode == 2 and "cannot write /proc/frame.fits: folder /proc" in output(r), output(r)
    assert time.time() - t0 < 60
    with pytest.raises(perfex.Error, match="cannot write /proc/frame.fits: folder /proc"):
        perfex.write_frame("/proc/frame.fits", small_frame)
    with pytest.raises(perfex.RequestError, match="folder /proc"):
        gpu_specter.io.write_model("/proc/model.fits", {"modelimage": np.zeros((2, 2)), "imagehdr": None})


# ---- numpy masked arrays: the mask is honoured (ivar 0 there), never ignored ------------------


@pytest.fixture(scope="module")
def mask_and_poisoned(masked):
    """A mask (scattered pixels and a block across the traces) and the pixels with 1e6 under it."""
    rng = np.random.default_rng(44)
    mask = rng.random(masked.pixels.shape) < 0.02
    mask[40:60, 0:200] = True
    poisoned = masked.pixels.copy()
    poisoned[mask] = 1e6
    ivar = masked.ivar.copy()
    ivar[mask] = 0
    return mask, poisoned, ivar


@pytest.mark.parametrize("which", ["pixels", "ivar", "both"])
def test_masked_arrays_are_honoured(which, mask_and_poisoned, masked, psf):
    mask, poisoned, ivar0 = mask_and_poisoned
    expected = perfex.extract_frame(masked.pixels, ivar0, psf, progress=False, **QUICK)
    pixels = np.ma.masked_array(poisoned, mask=mask) if which != "ivar" else poisoned
    ivar = np.ma.masked_array(masked.ivar, mask=mask) if which != "pixels" else masked.ivar
    got = perfex.extract_frame(pixels, ivar, psf, progress=False, **QUICK)
    assert_frames_identical(got, expected)
    assert np.abs(got.flux).max() < 1e5


def test_drop_in_honours_masked_arrays(mask_and_poisoned, masked, psf):
    mask, poisoned, ivar0 = mask_and_poisoned
    common = (psf, 25, 0, 5, "5760,5800,0.8")
    expected = gpu_specter.extract_frame({"image": masked.pixels, "ivar": ivar0}, *common, psferr=0.01)
    img = {"image": np.ma.masked_array(poisoned, mask=mask), "ivar": masked.ivar}
    got = gpu_specter.extract_frame(img, *common, psferr=0.01)
    for key in ("specflux", "specivar", "Rdiags"):
        np.testing.assert_array_equal(got[key], expected[key])


def test_masked_arrays_of_two_shapes_are_refused(masked, psf):
    with pytest.raises(perfex.Error, match="pixels and ivar must be 2-D arrays of one shape"):
        perfex.extract_frame(np.ma.masked_array(masked.pixels), masked.ivar[:-1], psf, **QUICK)


# ---- the drop-in's spex makes perfex-extract's checks, before any work --------------------------


def run_spex(args, **env):
    return run_python(["-m", "perfex.gpu_specter.spex"] + [str(a) for a in args], timeout=300, **env)


SPEX_QUICK = ["-w", "5760,5800,0.8", "-n", "5", "--bundlesize", "5", "--nsubbundles", "1", "--psferr", "0.01"]


@pytest.mark.parametrize(
    "change, status, words",
    [
        (("--nsubbundles", "0"), 2, "nsubbundles must be >= 1"),
        (("--bundlesize", "0"), 2, "bundlesize must be >= 1"),
        (("-i", "no-such.fits"), 1, "no-such.fits"),
        (("-i", "text.fits"), 1, "text.fits"),
        (("-p", "no-such-psf.fits"), 1, "no-such-psf.fits"),
        (("-o", "no/such/f.fits"), 2, "-o/--output: cannot write {tmp}/no/such/f.fits"),
        (("-o", "folder"), 2, "-o/--output: {tmp}/folder"),
        (("-o", "/proc/f.fits"), 2, "-o/--output: cannot write /proc/f.fits"),
        (("-m", "no/such/m.fits"), 2, "-m/--model: cannot write {tmp}/no/such/m.fits"),
        (("-o", "i.fits"), 2, "perfex never writes over its inputs"),
    ],
)
def test_spex_refuses_before_any_work(change, status, words, inputs, tmp_path):
    (tmp_path / "text.fits").write_text("not FITS\n")
    (tmp_path / "folder").mkdir()
    files, extra = {"-i": "i.fits", "-p": "p.fits", "-o": "f.fits"}, []
    if change[0].startswith("--"):
        extra = list(change)
    else:
        files[change[0]] = change[1]
    paths = [a for option, name in files.items() for a in (option, os.path.join(tmp_path, name))]
    r = run_spex(paths + SPEX_QUICK + extra)
    assert r.returncode == status, r.stderr
    assert words.format(tmp=tmp_path) in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "Reading image" not in r.stderr, "refused after the reads began"
    assert not (tmp_path / "f.fits").exists()


def test_spex_help_prints_no_warning():
    r = run_spex(["--help"])
    assert r.returncode == 0 and "usage:" in r.stdout
    assert r.stderr == "", r.stderr


@pytest.mark.mpi
def test_spex_refusal_on_two_ranks(inputs, tmp_path):
    """A refusal on rank 0 stops every rank (none waits in a collective), before any read."""
    image, psf = inputs
    args = ["-i", image, "-p", psf, "-o", tmp_path / "no" / "f.fits", "--mpi"] + SPEX_QUICK
    r = mpirun(2, ["-m", "perfex.gpu_specter.spex"] + [str(a) for a in args], timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("-o/--output: cannot write") == 2 and "Reading image" not in r.stderr, r.stderr


# ---- a frame and its model change together (a full disk while writing the model) -------------

FULL_DISK = os.path.join(REPO, "tools", "tests", "full_disk_check.sh")


@pytest.mark.parametrize(
    "command, nranks",
    [("perfex.extract", 1), ("perfex.extract", 2), ("perfex.gpu_specter.spex", 1)],
)
def test_frame_and_model_change_together(command, nranks, inputs):
    """The model fills a small file system: the old frame and model both stay (the frame was
    replaced before), nothing is left behind. tools/tests/full_disk_check.sh, as for
    perfex-extract; skipped where no file system can be mounted."""
    image, psf = inputs
    argv = [sys.executable, "-m", command, "-i", image, "-p", psf, "-o", "$OUT/f.fits", "-m", "$OUT/m.fits"]
    argv += SPEX_QUICK if command.endswith("spex") else QUICK_ARGS
    if nranks > 1:
        argv = mpi_launcher() + ["-n", str(nranks)] + argv + ["--mpi"]
    line = " ".join(shlex.quote(str(a)) if not str(a).startswith("$OUT") else str(a) for a in argv)
    r = subprocess.run(["sh", FULL_DISK, "20m", line], env=python_env(), capture_output=True, text=True, timeout=300)
    if r.returncode == 77:
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0, output(r)


# ---- PSF messages: the file's own HDUs, truncated HDUs, PSFs given as dicts ---------------------


@pytest.mark.parametrize("keep", [80000, 300000, 1000000])
def test_truncated_psf_is_named_by_every_reader(keep, psf_path, tmp_path):
    """The real PSF cut short inside its PSF table (bytes 77760 to 1025280): perfex.read_psf and
    the drop-in's read_psf say which HDU is truncated and by how much (astropy's reshape
    error named no file)."""
    cut = tmp_path / "cut.fits"
    cut.write_bytes(open(psf_path, "rb").read()[:keep])
    with pytest.raises(perfex.Error) as library:
        perfex.read_psf(str(cut))
    with pytest.raises(OSError) as dropin:
        gpu_specter.io.read_psf(str(cut))
    for e in (library, dropin):
        message = str(e.value)
        assert f"FITS file '{cut}', HDU 'PSF'" in message and "truncated or damaged" in message, message
        assert "reshape" not in message


def test_psf_dict_messages_say_dict(psf_path, masked):
    psf = gpu_specter.io.read_psf(psf_path)
    table = psf["PSF"]
    table.remove_rows([i for i, name in enumerate(table["PARAM"]) if str(name).strip() == "GHSIGX"])
    with pytest.raises(perfex.Error) as e:
        gpu_specter.extract_frame({"image": masked.pixels, "ivar": masked.ivar}, psf, 25, 0, 5, "5760,5800,0.8")
    assert "gpu_specter PSF dict: missing parameter 'GHSIGX'" in str(e.value)
    assert "synthetic" not in str(e.value)


def test_one_table_psf_messages_name_its_hdu(tmp_path):
    """PSFVER 2 and GAUSS-HERMITE2 files keep everything in HDU 1: a message names it."""
    from astropy.io import fits

    for path in perfex._perfex.write_synthetic_psfs(str(tmp_path), 5, 0.0):
        if "v2" not in path and "hermite2" not in path:
            continue
        with fits.open(path, mode="update") as hdus:
            hdus[1].header["HSIZEX"] = 0
        for read in (perfex.read_psf, gpu_specter.io.read_psf):
            with pytest.raises((perfex.Error, OSError)) as e:
                read(path)
            assert "HDU 1: keywords HSIZEX/HSIZEY = 0/" in str(e.value) and "'PSF'" not in str(e.value), str(e.value)


# ---- reliability round 6 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "psf.xypix(2**31 - 1, 6000.0)",
        "psf.xypix(2**40, 6000.0)",
        "psf.spots(2**31 - 1, 1, [6000.0])",
        "psf.spots(1, 2**31 - 1, [6000.0])",
        "psf.spots(2**31 - 10, 100, [6000.0])",
    ],
)
def test_psf_fibre_indices_that_overflow_are_refused(psf_path, call):
    """In a child: an int overflow in the fibre-range check crashed the process."""
    code = (
        f"import perfex\npsf = perfex.read_psf({psf_path!r})\n"
        f"try:\n    {call}\nexcept perfex.RequestError as e:\n    print(e)\n"
    )
    r = run_python(["-c", code], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "requested, but the PSF has 500 fibres (0-499)" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "fibremin, nfibre, expect",
    [
        (0, 0, "nfibre 0: at least one fibre is needed"),
        (-1, 1, r"fibremin -1: fibres are numbered from 0 \(the PSF has 500 fibres \(0-499\)\)"),
        (499, 2, r"fibres 499-500 \(fibremin 499, nfibre 2\) requested, but the PSF has 500 fibres"),
    ],
)
def test_psf_spots_fibre_messages(psf, fibremin, nfibre, expect):
    with pytest.raises(perfex.RequestError, match=expect):
        psf.spots(fibremin, nfibre, [6000.0])


def test_phase_times_in_a_fresh_process():
    """As docs/python.md shows it, before anything else started the runtime."""
    code = 'import perfex\nt = perfex.PhaseTimes()\nwith t.phase("x"):\n    pass\nprint(t.list()[0][:2])\n'
    r = run_python(["-c", code], timeout=120)
    assert r.returncode == 0 and "('x', 0)" in r.stdout, r.stderr


def test_phase_times_ended_out_of_order():
    """Phases interleaved (two threads, or exits out of order) leave the later ones at their depth."""
    times = perfex.PhaseTimes()
    a, b = times.phase("a"), times.phase("b")
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    assert times.level == 0
    with times.phase("c"):
        pass
    assert [p[:2] for p in times.list()] == [("a", 0), ("b", 1), ("c", 0)]


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_output_set_target_made_a_folder_changes_nothing(tmp_path):
    a, c = tmp_path / "a", tmp_path / "c"
    a.write_bytes(b"old a")
    outputs = perfex.frames.OutputSet()
    for path in (a, c):
        with outputs.open(path) as f:
            f.write(b"new")
    c.mkdir()
    with pytest.raises(perfex.Error, match=f"{c}: it is now a directory.*no output of the set was changed"):
        outputs.commit()
    assert a.read_bytes() == b"old a"
    outputs.discard()
    assert _hidden(tmp_path) == []


def test_output_set_failed_rename_restores_the_outputs_renamed(tmp_path):
    a, b, n = tmp_path / "a", tmp_path / "b", tmp_path / "n"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    outputs = perfex.frames.OutputSet()
    for path in (a, n, b):
        with outputs.open(path) as f:
            f.write(b"new")
    os.unlink(f.name)  # b's temporary: its rename fails after a's and n's
    with pytest.raises(perfex.Error, match="the set's other outputs were left as they were"):
        outputs.commit()
    assert a.read_bytes() == b"old a" and b.read_bytes() == b"old b" and not n.exists()
    outputs.discard()
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("second", ["./c", "link"])
def test_output_set_refuses_one_file_twice(tmp_path, second):
    (tmp_path / "link").symlink_to("c")
    outputs = perfex.frames.OutputSet()
    with outputs.open(tmp_path / "c") as f:
        f.write(b"first")
    with pytest.raises(
        perfex.RequestError, match=f"output {tmp_path}/{second} is the same file as output {tmp_path}/c"
    ):
        with outputs.open(f"{tmp_path}/{second}") as f:
            f.write(b"second")
    outputs.commit()
    assert (tmp_path / "c").read_bytes() == b"first"


def test_check_fits_takes_one_hdu_as_a_string(psf_path):
    perfex.frames.check_fits(psf_path, "XTRACE")
    with pytest.raises(perfex.Error, match="NOPE"):
        perfex.frames.check_fits(psf_path, "NOPE")


def test_drop_ins_name_the_callers_arguments(masked, psf):
    from perfex.specter.extract import ex2d

    with pytest.raises(perfex.RequestError, match="wavesize must be >= 1") as e:
        ex2d(masked.pixels, masked.ivar, psf, 0, 5, np.arange(5760, 5800, 0.8), wavesize=0)
    assert "nwavestep" not in str(e.value)
    img = dict(image=masked.pixels, ivar=masked.ivar)
    with pytest.raises(perfex.RequestError, match="wavepad must be >= 0") as e:
        gpu_specter.core.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", wavepad=-1)
    assert "wavepad0" not in str(e.value)


@pytest.mark.parametrize("locale", ["C", "en_US.ISO-8859-1"])
def test_file_names_that_are_not_utf8_on_the_command_line(inputs, tmp_path, locale):
    """File names are bytes: written as named whatever the locale's encoding (perfex-extract
    takes them so too)."""
    if (
        locale != "C"
        and subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower().find("en_us.iso88591") < 0
    ):
        pytest.skip("no en_US.ISO-8859-1 locale (localedef -i en_US -f ISO-8859-1 en_US.ISO-8859-1)")
    image, psf = inputs
    folder = os.fsencode(str(tmp_path)) + b"/d\xe9"
    os.mkdir(folder)
    os.rename(os.fsencode(str(image)), folder + b"/i\xe9.fits")
    out = folder + b"/\xe9\xff.fits"
    args = [b"-i", folder + b"/i\xe9.fits", b"-p", os.fsencode(str(psf)), b"-o", out]
    r = subprocess.run(
        [sys.executable, "-m", "perfex.extract"] + args + [a.encode() for a in QUICK_ARGS],
        env=python_env(LC_ALL=locale, PYTHONUTF8="0"),
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert perfex.read_frame(out).nspec == 5


_REWRITER = """
import os, sys
import numpy as np
from perfex.gpu_specter import io

n = 3
frame = dict(specflux=np.ones((n, 10)), specivar=np.ones((n, 10)), specmask=np.zeros((n, 10), np.int32),
             wave=np.arange(10.0), Rdiags=np.ones((n, 5, 10)), fibermap=None, fibermaphdr=None,
             imagehdr=None, chi2pix=np.ones((n, 10)))
path, stop = sys.argv[1:]
while not os.path.exists(stop):
    io.write_frame(path, frame)
"""


@pytest.mark.slow
def test_reader_of_a_frame_being_replaced_never_misses_it(tmp_path):
    """Two drop-in writers keep replacing a frame; a fixed number of reads of it all succeed (a
    reader that checks and reads the file by name several times could meet another version, or
    none)."""
    path, stop, script = tmp_path / "f.fits", tmp_path / "stop", tmp_path / "rewrite.py"
    script.write_text(_REWRITER)
    writers = [
        subprocess.Popen([sys.executable, str(script), str(path), str(stop)], env=python_env()) for _ in range(2)
    ]
    try:
        while not path.exists():
            assert all(w.poll() is None for w in writers), "a writer failed"
            time.sleep(0.01)
        errors = []
        for _ in range(3000):
            try:
                gpu_specter.io.read_frame(path)
            except Exception as e:  # counted: every kind of failure is the defect
                errors.append(repr(e))
    finally:
        stop.touch()
        for w in writers:
            w.wait(timeout=60)
    assert errors == [], f"{len(errors)} of 3000 reads failed: {errors[:3]}"
    assert all(w.returncode == 0 for w in writers)
