"""Shared fixtures of the perfex Python tests: the reference data (../shared/data; tests that
need it skip with a message when it is absent), small extraction settings, MPI launching."""

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import perfex
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.environ.get("PERFEX_SHARED_DATA") or os.path.normpath(os.path.join(REPO, "..", "shared", "data"))
PSF = "psf-r0-00051060.fits"
CLEAN = "sim-r0-b0-1.fits.gz"
MASKED = "sim-r0-b0-1-masked.fits.gz"

# The settings of the gpu_specter reference files (DESI defaults, 50 fibres, 5760-6760 A).
REFERENCE = dict(wavelength="5760,6760,0.8", specmin=0, nspec=50, psferr=0.01)
# Small settings for quick runs: three bundle pieces (5-24, 25-49, 50-64), 501 wavelengths.
SMALL = dict(wavelength="5760,6160,0.8", specmin=5, nspec=60, psferr=0.01)
# NaN pixels on the traces of fibres 12 and 33 (bundles 0 and 1) at 5810 A, and far from every
# fibre, outside the pixels NAN_GRID's patches read (rows 319-600, columns 142-468): not counted.
NAN_PIXELS = ((453, 208), (435, 374), (100, 3000))
NAN_GRID = dict(wavelength="5760,5860,0.8", specmin=5, nspec=40, psferr=0.01)
FRAME_ARRAYS = ("flux", "ivar", "mask", "wave", "resolution", "chi2pix", "pixmask_fraction")


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: runs an MPI launcher (mpi_launcher: Open MPI or MPICH) with mpi4py")
    config.addinivalue_line("markers", "slow: a minute or more (-m 'not slow' leaves it out)")


def data_path(name):
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        pytest.skip(f"reference data {name} not found in {DATA} (../shared/data)")
    return path


@pytest.fixture(autouse=True)
def drop_in_loggers_to_caplog(caplog):
    """The gpu_specter drop-in's loggers ('desimeter.<LEVEL>') print through their own handler
    and do not propagate: caplog's handler is added to them, so tests see their records too."""
    loggers = [
        logging.getLogger("desimeter." + level)
        for level in ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "CRITICAL")
    ]
    for logger in loggers:
        logger.addHandler(caplog.handler)
    yield
    for logger in loggers:
        logger.removeHandler(caplog.handler)


@pytest.fixture(scope="session")
def psf_path():
    """The real DESI PSF: the shared set's, else the byte-identical copy that perfex.gpu_specter
    carries as package data (so the tests that need only the PSF run in a plain clone)."""
    shared = os.path.join(DATA, PSF)
    if os.path.exists(shared):
        return shared
    return os.path.join(REPO, "python", "perfex", "gpu_specter", "test", "data", PSF)


@pytest.fixture(scope="session")
def psf(psf_path):
    return perfex.read_psf(psf_path)


@pytest.fixture(scope="session")
def clean():
    return perfex.read_preproc(data_path(CLEAN))


@pytest.fixture(scope="session")
def masked():
    return perfex.read_preproc(data_path(MASKED))


@pytest.fixture(scope="session")
def small_frame(masked, psf):
    """The masked image extracted with SMALL in this process (the single-rank result)."""
    return perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **SMALL)


def _field(frame, name):
    """A frame array from a perfex.Frame, a dict or an .npz file."""
    try:
        return getattr(frame, name)
    except AttributeError:
        return frame[name]


def assert_frames_identical(a, b, names=FRAME_ARRAYS):
    for name in names:
        x, y = _field(a, name), _field(b, name)
        assert x.shape == y.shape, name
        assert np.array_equal(x, y), f"{name} differs: max |diff| {np.max(np.abs(x - y))}"


def reference(name):
    """A gpu_specter reference extraction (astropy reads its tile-compressed HDUs)."""
    fits = pytest.importorskip("astropy.io.fits", reason="astropy reads the reference files")
    path = data_path(f"ref-gpuspecter-{name}.fits")
    with fits.open(path) as hdus:
        return {
            h: np.asarray(hdus[h].data, dtype=np.float64)
            for h in ("FLUX", "IVAR", "RESOLUTION", "CHI2PIX", "PIXMASK_FRACTION", "WAVELENGTH")
        }


def compare_with_reference(flux, ivar, resolution, chi2pix, pixmask, wave, ref):
    """Largest differences to a gpu_specter reference: flux in sigma, ivar relative, ..."""
    assert np.array_equal(wave, ref["WAVELENGTH"])
    return dict(
        flux_sigma=np.max(np.abs(flux - ref["FLUX"]) * np.sqrt(ref["IVAR"])),
        ivar_rel=np.max(np.abs(ivar - ref["IVAR"]) / ref["IVAR"]),
        resolution_abs=np.max(np.abs(resolution - ref["RESOLUTION"])),
        chi2pix_rel=np.max(np.abs(chi2pix - ref["CHI2PIX"]) / np.maximum(ref["CHI2PIX"], 1e-300)),
        pixmask_abs=np.max(np.abs(pixmask - ref["PIXMASK_FRACTION"])),
    )


def python_env(**extra):
    env = dict(os.environ)
    package = os.path.dirname(os.path.dirname(os.path.abspath(perfex.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("OMP_PROC_BIND", "false")
    env.update(extra)
    return env


def run_python(args, timeout=600, **env):
    """Runs `python3 args...` with this package; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable] + list(args), env=python_env(**env), capture_output=True, text=True, timeout=timeout
    )


def output(result):
    """What a command printed on both streams: desiutil's logger (perfex's where desiutil is
    installed) prints on stdout, logging's handler and argparse on stderr."""
    return result.stdout + result.stderr


def without_log_lines(text):
    """A program's own lines: desiutil's logger (perfex's where desiutil is installed) prints
    LEVEL:file:line:function: lines on stdout among them."""
    return "\n".join(line for line in text.splitlines() if not re.match(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):", line))


def timing_phases(text):
    """(indent, name) of the phase lines a --timing run printed."""
    return re.findall(r"^( +)(\S+) +[0-9.]+ s$", text, re.MULTILINE)


# The MPI families the tests launch, by the words their library version and their launcher's
# --version print (Cray MPICH's library says "CRAY MPICH"); Open MPI's launcher refuses root and
# more ranks than cores without its two options, MPICH's Hydra needs none.
_MPI_FAMILIES = {
    "openmpi": dict(
        library=("open mpi",), launcher=("open mpi", "openrte"), launchers=("mpirun.openmpi", "mpiexec.openmpi")
    ),
    "mpich": dict(
        library=("mpich",), launcher=("hydra",), launchers=("mpirun.mpich", "mpiexec.mpich", "mpiexec.hydra")
    ),
}
_launcher = {}


def _mpi_family(text, key):
    return next((name for name, f in _MPI_FAMILIES.items() if any(w in text.lower() for w in f[key])), None)


def _probe_launcher():
    """(argv, skip reason, failure) of mpi_launcher()."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(MPI.Get_library_version())",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode != 0:
        return None, f"mpi4py does not import (Debian: python3-mpi4py): {probe.stderr.strip()[-300:]}", None
    library = (probe.stdout.strip().splitlines() or ["an unknown MPI"])[0]
    family = _mpi_family(library, "library")
    if os.environ.get("PERFEX_MPIRUN", "").strip():
        argv = shlex.split(os.environ["PERFEX_MPIRUN"])
    else:
        names = (_MPI_FAMILIES[family]["launchers"] if family else ()) + ("mpirun", "mpiexec")
        argv = [next((name for name in names if shutil.which(name)), None)]
    if argv[0] is None or shutil.which(argv[0]) is None:
        return None, f"no MPI launcher found for {library} (Debian: openmpi-bin or mpich)", None
    version = subprocess.run(argv[:1] + ["--version"], capture_output=True, text=True, timeout=60)
    launched = _mpi_family(version.stdout + version.stderr, "launcher")
    if family and launched and launched != family:
        return None, None, f"{argv[0]} starts {launched} ranks but mpi4py's MPI is {library}: set PERFEX_MPIRUN"
    # A launcher that does not say its MPI is taken for mpi4py's, unless PERFEX_MPIRUN named it.
    if (launched or (None if os.environ.get("PERFEX_MPIRUN", "").strip() else family)) == "openmpi":
        argv += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return argv, None, None


def mpi_launcher():
    """The command that starts MPI ranks, without its rank count: PERFEX_MPIRUN when set (a
    command line, e.g. "mpirun.mpich"), else the launcher of the MPI library this Python's
    mpi4py is built against (Debian: mpirun.openmpi or mpirun.mpich, else mpirun or mpiexec on
    PATH), so that a second MPI installed beside the first changes nothing. Skips when mpi4py
    or a launcher is missing; fails when the launcher is another MPI's than mpi4py's library
    (every rank would run alone). Probed once per session."""
    if not _launcher:
        _launcher.update(zip(("argv", "skip", "fail"), _probe_launcher()))
    if _launcher["skip"]:
        pytest.skip(_launcher["skip"])
    if _launcher["fail"]:
        pytest.fail(_launcher["fail"])
    return list(_launcher["argv"])


def mpirun(nranks, args, timeout=600):
    """Runs `python3 args...` on nranks MPI ranks (mpi_launcher(); oversubscribing the cores,
    one thread per rank); skips when mpi4py or a launcher is missing."""
    return subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable] + list(args),
        env=python_env(OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
