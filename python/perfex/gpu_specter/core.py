"""gpu_specter.core.extract_frame on perfex: same arguments, same returned dict, same timing
keys, and gpu_specter's INFO lines on its loggers (gpu_specter.util.get_logger)."""

import time

import numpy as np

import perfex
import perfex.collective

from .util import Timer, get_logger

# gpu_specter's time stamps after the init-mpi-comm one, in the order of its stages, and the phase
# of perfex's frame at whose end each falls: over MPI ranks, and in one process (where
# gpu_specter stamps the first two before the extraction).
_STAMP_PHASES = (
    ("init-mpi-bcast", "mpi::scatter", None),
    ("host-to-device", "mpi::scatter", None),
    ("extracted-bundles", "mpi::extract", "job::extract"),
    ("staged-bundles", "mpi::gather", "job::extract"),
    ("merged-bundles", "mpi::gather", "job::extract"),
)


# gpu_specter's lines logged by the helpers of extract_frame carry its name and line, as gpu_specter's
# own (its log format names the function).
_CALLER = 2


def _stamps(phases, start, end, distributed):
    """gpu_specter's stamps of a rank from its phases (a perfex.PhaseTimes) of
    perfex.extract_frame, which ran from time `start` to `end`: each at the end of its phase."""
    ends = {None: start}
    for name, depth, seconds in reversed(phases.list()):
        if depth == 0:
            ends[name] = end
            end -= seconds
    return {stamp: ends[mpi if distributed else one] for stamp, mpi, one in _STAMP_PHASES}


def _grid(wavelength, psf):
    """(wmin, wmax, dw) as gpu_specter reads `wavelength`: None -> the PSF's WAVEMIN/WAVEMAX
    with dw 0.8, "wmin,wmax,dw", a (wmin, wmax, dw) tuple, or the grid itself (which must be
    numpy.arange(wmin, wmax + dw/2, dw): perfex extracts on such uniform grids)."""
    if isinstance(wavelength, np.ndarray):
        wave = np.asarray(wavelength, dtype=np.float64)
        if wave.ndim != 1:
            raise perfex.RequestError(f"wavelength: a grid is one-dimensional, got shape {wave.shape}")
        # gpu_specter pads the grid with dw = gradient(wave)[0] (0.8000000000001819 for
        # numpy.arange(5760, ..., 0.8)): so does perfex, which regenerates the grid from it.
        return perfex.options.grid_of_values(wave)
    if isinstance(wavelength, (str, tuple)):
        return perfex.options.parse_wavelength(wavelength)
    if wavelength is None:
        return psf.wavemin, psf.wavemax, 0.8
    raise perfex.Error(f"wavelength: expected None, 'wmin,wmax,dw', a tuple or an array, got {wavelength!r}")


# The library's names of gpu_specter's arguments that it names otherwise.
_NAMES = {"wavepad0": "wavepad"}


def perfex_options(
    bundlesize, specmin, nspec, nwavestep, nsubbundles, model, regularize, psferr, wavepad, pixpad_frac, wavepad_frac
):
    """perfex's extraction options (perfex.extract_frame's names) of gpu_specter's arguments,
    with gpu_specter's patch geometry (whatever the PSF's format)."""
    return dict(
        geometry="gpu_specter",
        bundlesize=bundlesize,
        specmin=specmin,
        nspec=nspec,
        nwavestep=nwavestep,
        nsubbundles=nsubbundles,
        model_image=bool(model),
        regularize=regularize,
        psferr=psferr,
        wavepad0=wavepad,
        pixpad_frac=pixpad_frac,
        wavepad_frac=wavepad_frac,
    )


def check_values(options, grid=None):
    """The library's checks of every option's value (perfex.RequestError naming it, with
    gpu_specter's name wavepad); returns the checked C++ options."""
    with perfex.options.named_as(_NAMES):
        return perfex.options.cxx_options(perfex.options.make_options(wavelength=grid, **options))


def extract_frame(
    img,
    psf,
    bundlesize,
    specmin,
    nspec,
    wavelength=None,
    nwavestep=50,
    nsubbundles=1,
    model=None,
    regularize=0,
    psferr=None,
    comm=None,
    gpu=None,
    loglevel=None,
    timing=None,
    wavepad=10,
    pixpad_frac=0.8,
    wavepad_frac=0.2,
    batch_subbundle=True,
    ranks_per_bundle=None,
):
    """Extracts 1D spectra from a 2D image, as gpu_specter.core.extract_frame.

    img: dict with 'image' and 'ivar' (the ivar already mask-applied; other keys ignored);
    psf: gpu_specter's PSF dict (io.read_psf), a PSF file name or a perfex.Psf. With comm,
    every rank calls it, rank 0's img, psf and wavelength are used (the others may pass None),
    the bundles are dealt over the ranks, and rank 0 returns the frame, the others None.
    gpu: True uses perfex's CUDA backend where built (else the host one, with a warning).
    batch_subbundle and ranks_per_bundle (GPU batching knobs of gpu_specter) are accepted and
    ignored. loglevel: gpu_specter's (get_logger); rank 0 logs gpu_specter's INFO lines and
    timing splits. timing: a dict that receives gpu_specter's time stamps (every rank).
    NaN/Inf pixels are masked with a warning (gpu_specter stops with a ValueError).

    Returns dict(specflux, specivar, specmask, wave, Rdiags, pixmask_fraction, chi2pix,
    modelimage): flux per Angstrom [nspec][nwave], its ivar, specmask = (specivar == 0) as
    int, the resolution band [nspec][2*HSIZEY+1][nwave], the full model image or None.
    """
    timer = Timer()
    log = get_logger(loglevel)
    rank, size = (0, 1) if comm is None else (comm.rank, comm.size)
    backend = perfex.default_backend(gpu=bool(gpu))
    if rank == 0:
        _log_setup(log, backend, gpu, size)
    stamps = {"init-mpi-comm": time.time()}
    timer.split("init-mpi-comm", stamps["init-mpi-comm"])
    arguments = (bundlesize, specmin, nspec, nwavestep, nsubbundles, model, regularize, psferr, wavepad)
    options = perfex_options(*arguments, pixpad_frac, wavepad_frac)
    inputs, options["wavelength"] = _checked_inputs(comm, img, psf, wavelength, options, log)
    phases, start = perfex.PhaseTimes(), time.time()
    with perfex.options.named_as(_NAMES):
        frame = perfex.extract_frame(
            *inputs, comm=comm, backend=backend, progress=False, phases=phases, log_warnings=False, **options
        )
    stamps.update(_stamps(phases, start, time.time(), size > 1))
    result = _result(frame, log) if frame is not None else None
    stamps["assembled-frame"] = time.time()
    if rank == 0:
        _log_splits(timer, stamps, log)
    if isinstance(timing, dict):
        timing.update(stamps)
    return result


def _log_splits(timer, stamps, log):
    """gpu_specter's timing splits (rank 0), from the stamps."""
    for name in ("init-mpi-bcast", "extracted-bundles", "staged-bundles", "merged-bundles", "assembled-frame"):
        timer.split("mpi-bcast-raw" if name == "init-mpi-bcast" else name, stamps[name])
    timer.log_splits(log)


def _log_setup(log, backend, gpu, size):
    """gpu_specter's first INFO lines (rank 0): the backend, the GPU, the communicators."""
    log.info(f"Extracting with perfex {perfex.__version__} on its {backend} backend", stacklevel=_CALLER)
    if gpu and backend != "cuda":
        log.warning(f"gpu={gpu!r}: this perfex build has no CUDA backend; extracting on {backend}", stacklevel=_CALLER)
    log.info(f"Using GPU: {backend == 'cuda'}", stacklevel=_CALLER)
    # perfex deals patches over the ranks: a frame communicator of every rank.
    log.info(f"Size of frame MPI comm: {size}", stacklevel=_CALLER)
    log.info("Size of bundle MPI comm: 1", stacklevel=_CALLER)


def _rank0_inputs(img, psf, wavelength, options):
    """((image, ivar, perfex.Psf), the grid (wmin, wmax, dw), the wavelength padding) of rank 0's
    arguments, every value checked by the library (a bad wavepad is a RequestError naming it)."""
    if not isinstance(img, dict) or "image" not in img or "ivar" not in img:
        raise perfex.Error("img: a dict with 'image' and 'ivar' is required (on rank 0)")
    psf = perfex.as_psf(psf)
    grid = _grid(wavelength, psf)
    return (img["image"], img["ivar"], psf), grid, check_values(options, grid).wavepad()


def _checked_inputs(comm, img, psf, wavelength, options, log):
    """((image, ivar, psf): rank 0's, None elsewhere; the grid, on every rank): rank 0's arguments
    checked, the grid and padding logged. Under MPI every rank learns of a bad argument on rank
    0 (none waits in a collective)."""
    checked = perfex.collective.root_only(comm, lambda: _rank0_inputs(img, psf, wavelength, options))
    inputs, grid, padding = checked or ((None, None, None), None, None)
    distributed = comm is not None and comm.size > 1
    if distributed:
        grid = comm.bcast(grid, root=0)
    if comm is None or comm.rank == 0:
        log.info(f"Extracting wavelengths {grid[0]},{grid[1]},{grid[2]}", stacklevel=_CALLER)
        log.info(f"Padding patches with {padding} wave bins on both ends", stacklevel=_CALLER)
        if distributed:
            log.info("Sending inputs to other MPI ranks (each the pixels of its patches)", stacklevel=_CALLER)
    return inputs, grid


def _result(frame, log):
    """gpu_specter's result dict of rank 0's frame, its warnings logged as gpu_specter's."""
    if frame.nonfinite_pixels:
        log.warning(
            f"{frame.nonfinite_pixels} NaN/Inf image or ivar pixels masked (ivar 0); "
            "gpu_specter stops with a ValueError on such pixels with ivar > 0",
            stacklevel=_CALLER,
        )
    for warning in frame.warnings:
        if "NaN/Inf" not in warning:
            log.warning(warning, stacklevel=_CALLER)
    return dict(
        specflux=frame.flux,
        specivar=frame.ivar,
        specmask=(frame.ivar == 0).astype(int),
        wave=frame.wave,
        Rdiags=frame.resolution,
        pixmask_fraction=frame.pixmask_fraction,
        chi2pix=frame.chi2pix,
        modelimage=frame.model,
    )
