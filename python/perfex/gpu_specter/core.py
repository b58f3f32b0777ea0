"""gpu_specter.core.extract_frame on perfex: same arguments, same returned dict, same timing
keys, and gpu_specter's INFO lines on its loggers (gpu_specter.util.get_logger)."""

import time

import numpy as np

import perfex
import perfex.collective
import perfex.mpi

from .util import Timer, get_logger

# gpu_specter's time stamps after the init-mpi-comm one, in the order of its stages, and the phase
# of perfex's frame over ranks at whose end each falls.
_STAMP_PHASES = (
    ("init-mpi-bcast", "mpi::scatter"),
    ("host-to-device", "mpi::scatter"),
    ("extracted-bundles", "mpi::extract"),
    ("staged-bundles", "mpi::gather"),
    ("merged-bundles", "mpi::gather"),
)


def _stamps(phases, end):
    """gpu_specter's stamps of a rank from its phases (name, depth, seconds) of
    perfex.mpi.extract_over_ranks, which ended at time `end`: each at the end of its phase."""
    ends = {}
    for name, depth, seconds in reversed(phases):
        if depth == 0:
            ends[name] = end
            end -= seconds
    return {stamp: ends[phase] for stamp, phase in _STAMP_PHASES}


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
        return perfex._perfex.grid_of_values(wave)
    if isinstance(wavelength, (str, tuple)):
        return perfex.options.parse_wavelength(wavelength)
    if wavelength is None:
        return psf.wavemin, psf.wavemax, 0.8
    raise perfex.Error(f"wavelength: expected None, 'wmin,wmax,dw', a tuple or an array, got {wavelength!r}")


def perfex_options(
    bundlesize, specmin, nspec, nwavestep, nsubbundles, model, regularize, psferr, wavepad, pixpad_frac, wavepad_frac
):
    """perfex's extraction options (perfex.extract_frame's names) of gpu_specter's arguments."""
    return dict(
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
    try:
        return perfex.options.cxx_options(perfex.options.make_options(wavelength=grid, **options))
    except perfex.RequestError as e:  # the library's name for gpu_specter's wavepad
        raise perfex.RequestError(str(e).replace("wavepad0", "wavepad")) from None


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
    distributed = comm is not None and size > 1
    backend = perfex.default_backend(gpu=bool(gpu))
    if rank == 0:
        log.info(f"Extracting with perfex {perfex.__version__} on its {backend} backend")
        if gpu and backend != "cuda":
            log.warning(f"gpu={gpu!r}: this perfex build has no CUDA backend; extracting on {backend}")
        log.info(f"Using GPU: {backend == 'cuda'}")
        # perfex deals patches over the ranks: a frame communicator of every rank.
        log.info(f"Size of frame MPI comm: {size}")
        log.info("Size of bundle MPI comm: 1")
    stamps = {"init-mpi-comm": time.time()}
    timer.split("init-mpi-comm", stamps["init-mpi-comm"])

    image = ivar = None
    options = perfex_options(
        bundlesize,
        specmin,
        nspec,
        nwavestep,
        nsubbundles,
        model,
        regularize,
        psferr,
        wavepad,
        pixpad_frac,
        wavepad_frac,
    )

    def prepare():
        nonlocal image, ivar, psf
        if not isinstance(img, dict) or "image" not in img or "ivar" not in img:
            raise perfex.Error("img: a dict with 'image' and 'ivar' is required (on rank 0)")
        image, ivar = img["image"], img["ivar"]
        psf = perfex.as_psf(psf)
        grid = _grid(wavelength, psf)
        return grid, check_values(options, grid).wavepad()

    # Under MPI every rank learns of a bad argument on rank 0 (none waits in a collective).
    grid, padding = perfex.collective.on_root(comm, prepare) if distributed else prepare()
    if rank == 0:
        log.info(f"Extracting wavelengths {grid[0]},{grid[1]},{grid[2]}")
        log.info(f"Padding patches with {padding} wave bins on both ends")
        if distributed:
            log.info("Sending inputs to other MPI ranks (each the pixels of its patches)")
    options["wavelength"] = grid
    if distributed:
        phases = []
        frame = perfex.mpi.extract_over_ranks(
            comm, image, ivar, psf, backend=backend, phases=phases, progress=False, log_warnings=False, **options
        )
        stamps.update(_stamps(phases, time.time()))
    else:
        stamps["init-mpi-bcast"] = stamps["host-to-device"] = time.time()
        frame = perfex.extract_frame(image, ivar, psf, backend=backend, progress=False, log_warnings=False, **options)
        stamps["extracted-bundles"] = stamps["staged-bundles"] = time.time()
        stamps["merged-bundles"] = time.time()

    result = None
    if frame is not None:
        if frame.nonfinite_pixels:
            log.warning(
                f"{frame.nonfinite_pixels} NaN/Inf image or ivar pixels masked (ivar 0); "
                "gpu_specter stops with a ValueError on such pixels with ivar > 0"
            )
        for warning in frame.warnings:
            if "NaN/Inf" not in warning:
                log.warning(warning)
        result = dict(
            specflux=frame.flux,
            specivar=frame.ivar,
            specmask=(frame.ivar == 0).astype(int),
            wave=frame.wave,
            Rdiags=frame.resolution,
            pixmask_fraction=frame.pixmask_fraction,
            chi2pix=frame.chi2pix,
            modelimage=frame.model,
        )
    # The ranks without the frame stamp these when done, as gpu_specter's do.
    stamps.setdefault("merged-bundles", time.time())
    stamps["assembled-frame"] = time.time()
    if rank == 0:
        for name in ("init-mpi-bcast", "extracted-bundles", "staged-bundles", "merged-bundles", "assembled-frame"):
            timer.split("mpi-bcast-raw" if name == "init-mpi-bcast" else name, stamps[name])
        timer.log_splits(log)
    if isinstance(timing, dict):
        timing.update(stamps)
    return result
