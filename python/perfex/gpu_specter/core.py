"""gpu_specter.core.extract_frame on perfex: same arguments, same returned dict."""

import logging
import time

import numpy as np

import perfex
import perfex.mpi
from perfex import Error, as_psf

log = logging.getLogger("perfex")
_LEVELS = dict(DEBUG=logging.DEBUG, INFO=logging.INFO, WARN=logging.WARNING,
               WARNING=logging.WARNING, ERROR=logging.ERROR, FATAL=logging.CRITICAL,
               CRITICAL=logging.CRITICAL)


def _grid(wavelength, psf):
    """(wmin, wmax, dw) as gpu_specter reads `wavelength`: None -> the PSF's WAVEMIN/WAVEMAX
    with dw 0.8, "wmin,wmax,dw", a (wmin, wmax, dw) tuple, or the grid itself (which must be
    numpy.arange(wmin, wmax + dw/2, dw): perfex extracts on such uniform grids)."""
    if isinstance(wavelength, np.ndarray):
        wave = np.asarray(wavelength, dtype=np.float64)
        if wave.ndim != 1 or wave.size < 2:
            raise Error("wavelength: a grid needs at least two wavelengths")
        # gpu_specter pads the grid with dw = gradient(wave)[0] (0.8000000000001819 for
        # numpy.arange(5760, ..., 0.8)): so does perfex, which regenerates the grid from it.
        wmin, wmax, dw = float(wave[0]), float(wave[-1]), float(np.gradient(wave)[0])
        regular = np.arange(wmin, wmax + 0.5 * dw, dw)
        if regular.shape != wave.shape or not np.allclose(regular, wave, rtol=0, atol=1e-6 * dw):
            raise Error("wavelength: perfex extracts on uniform grids (numpy.arange(wmin, "
                        "wmax + dw/2, dw)); this grid is not one")
        return wmin, wmax, dw
    if isinstance(wavelength, (str, tuple)):
        return perfex.options.parse_wavelength(wavelength)
    if wavelength is None:
        return psf.wavemin, psf.wavemax, 0.8
    raise Error(f"wavelength: expected None, 'wmin,wmax,dw', a tuple or an array, got {wavelength!r}")


def extract_frame(img, psf, bundlesize, specmin, nspec, wavelength=None, nwavestep=50,
                  nsubbundles=1, model=None, regularize=0, psferr=None, comm=None, gpu=None,
                  loglevel=None, timing=None, wavepad=10, pixpad_frac=0.8, wavepad_frac=0.2,
                  batch_subbundle=True, ranks_per_bundle=None):
    """Extracts 1D spectra from a 2D image, as gpu_specter.core.extract_frame.

    img: dict with 'image' and 'ivar' (the ivar already mask-applied; other keys ignored);
    psf: gpu_specter's PSF dict (io.read_psf), a PSF file name or a perfex.Psf. With comm,
    every rank calls it, rank 0's img, psf and wavelength are used (the others may pass None),
    and rank 0 returns the frame, the others None. gpu: True uses perfex's CUDA backend where
    built (else the host one, with a warning). batch_subbundle and ranks_per_bundle (GPU
    batching knobs of gpu_specter) are accepted and ignored.

    Returns dict(specflux, specivar, specmask, wave, Rdiags, pixmask_fraction, chi2pix,
    modelimage): flux per Angstrom [nspec][nwave], its ivar, specmask = (specivar == 0) as
    int, the resolution band [nspec][2*HSIZEY+1][nwave], the full model image or None.
    """
    if loglevel is not None:
        if str(loglevel).upper() not in _LEVELS:
            raise ValueError(f"Unknown log level {loglevel}; should be DEBUG/INFO/WARNING/ERROR/CRITICAL")
        log.setLevel(_LEVELS[str(loglevel).upper()])
    stamps = timing if isinstance(timing, dict) else {}
    stamps["init-mpi-comm"] = time.time()
    rank = 0 if comm is None else comm.rank
    backend = perfex.default_backend(gpu=bool(gpu))
    if gpu and backend != "cuda" and rank == 0:
        log.warning("gpu=%r: this perfex build has no CUDA backend; extracting on %s", gpu, backend)
    image = ivar = None

    def prepare():
        nonlocal image, ivar, psf
        if not isinstance(img, dict) or "image" not in img or "ivar" not in img:
            raise Error("img: a dict with 'image' and 'ivar' is required (on rank 0)")
        image, ivar = img["image"], img["ivar"]
        psf = as_psf(psf)
        return _grid(wavelength, psf)

    # Under MPI every rank learns of a bad argument on rank 0 (none waits in a collective).
    grid = prepare() if comm is None or comm.size == 1 else perfex.mpi.on_root(comm, prepare)
    options = dict(
        wavelength=grid, bundlesize=bundlesize, specmin=specmin, nspec=nspec,
        nwavestep=nwavestep, nsubbundles=nsubbundles, model_image=bool(model),
        regularize=regularize, psferr=psferr, wavepad0=wavepad, pixpad_frac=pixpad_frac,
        wavepad_frac=wavepad_frac,
    )
    if comm is not None and comm.size > 1:
        frame = perfex.mpi.extract_frame(comm, image, ivar, psf, backend=backend, timing=stamps,
                                         **options)
    else:
        stamps["init-mpi-bcast"] = stamps["host-to-device"] = time.time()
        frame = perfex.extract_frame(image, ivar, psf, backend=backend, **options)
        stamps["extracted-bundles"] = stamps["staged-bundles"] = time.time()
        stamps["merged-bundles"] = stamps["assembled-frame"] = time.time()
    if frame is None:
        return None
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
