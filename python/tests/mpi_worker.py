"""Run under mpirun by test_mpi.py: one frame through perfex.extract_frame(comm=...) and through
the gpu_specter drop-in, only rank 0 holding the inputs (as desispec's IO coordinator does),
each passing once through the MPI driver and timing every rank's phases into the caller's
recorder, and (with a 4th argument "nan") a short one of the image with NaN pixels
(NAN_PIXELS). Rank 0 saves the results (float64) to OUT.npz."""

import sys

import numpy as np
import perfex
import perfex.gpu_specter
import perfex.mpi
from mpi4py import MPI

from conftest import NAN_GRID, NAN_PIXELS, SMALL

comm = MPI.COMM_WORLD
image_path, psf_path, out = sys.argv[1:4]
pre = psf = img = None
if comm.rank == 0:
    pre = perfex.read_preproc(image_path)
    psf = perfex.read_psf(psf_path)
    img = {"image": pre.pixels, "ivar": pre.ivar}
calls = []
over_ranks = perfex.mpi.extract_over_ranks
perfex.mpi.extract_over_ranks = lambda *a, **k: calls.append(1) or over_ranks(*a, **k)
phases = perfex.PhaseTimes()
frame = perfex.extract_frame(pre, None, psf, comm=comm, progress=False, phases=phases, **SMALL)
assert len(calls) == 1
MPI_PHASES = ["mpi::check", "mpi::scatter", "mpi::extract", "mpi::gather", "mpi::assemble"]
assert [name for name, depth, _ in phases.list() if depth == 0] == MPI_PHASES
assert ("job::extract", 1) in [(name, depth) for name, depth, _ in phases.list()]
assert frame is None or frame.phases == phases.list()
timing = {}
drop_in = perfex.gpu_specter.extract_frame(
    img,
    psf,
    25,
    SMALL["specmin"],
    SMALL["nspec"],
    SMALL["wavelength"] if comm.rank == 0 else None,
    nsubbundles=5,
    psferr=0.01,
    comm=comm,
    timing=timing,
    model=True,
)
assert len(calls) == 2
# gpu_specter's time stamps on every rank, in the order of its stages.
stages = [
    "init-mpi-comm",
    "init-mpi-bcast",
    "host-to-device",
    "extracted-bundles",
    "staged-bundles",
    "merged-bundles",
    "assembled-frame",
]
assert list(timing) == stages and all(timing[a] <= timing[b] for a, b in zip(stages, stages[1:])), timing
nan = failed = None
if sys.argv[4:] == ["nan"]:
    pixels = None
    if comm.rank == 0:
        pixels = pre.pixels.copy()
        for row, col in NAN_PIXELS:
            pixels[row, col] = np.nan
    nan = perfex.extract_frame(pixels, pre.ivar if pre else None, psf, comm=comm, progress=False, **NAN_GRID)
    # A negative ivar in bundle 1's pixels: the same perfex.Error on every rank, no hang.
    weights = None
    if comm.rank == 0:
        weights = pre.ivar.copy()
        weights[435, 374] = -1.0
    try:
        perfex.extract_frame(pre.pixels if pre else None, weights, psf, comm=comm, progress=False, **NAN_GRID)
        raise AssertionError("negative ivar accepted")
    except perfex.Error as e:
        negative = str(e)
    assert "negative inverse variance" in negative and "row 435, column 374" in negative, negative
    # Patches that cannot be solved: their bins masked BAD2DFIT | NODATA in the gathered frame.
    failed = perfex.extract_frame(pre, None, psf, comm=comm, progress=False, regularize=1e300, **NAN_GRID)
if comm.rank == 0:
    arrays = {
        name: getattr(frame, name)
        for name in ("flux", "ivar", "mask", "wave", "resolution", "chi2pix", "pixmask_fraction")
    }
    arrays.update({"drop_in_" + k: v for k, v in drop_in.items() if v is not None})
    if nan is not None:
        arrays.update(
            nan_flux=nan.flux,
            nan_ivar=nan.ivar,
            nan_warnings=np.array(nan.warnings),
            nan_count=nan.nonfinite_pixels,
            failed_mask=failed.mask,
            failed_patches=failed.failed_patches,
        )
    np.savez(out, npatches=frame.npatches, **arrays)
else:
    assert frame is None and drop_in is None and nan is None and failed is None
