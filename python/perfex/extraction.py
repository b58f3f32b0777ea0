"""The single-process extraction of a CCD image held in numpy arrays."""

import logging

from . import _perfex
from .frames import Frame
from .images import as_image, as_psf
from .options import make_options
from .runtime import ProgressLog, check_backend, default_backend, initialize

log = logging.getLogger("perfex")


def progress_callback(progress, label="extract"):
    """The C++ progress callback for progress=None (log), False (none) or a callable."""
    if progress is None:
        return ProgressLog(label)
    if progress is False:
        return None
    if not callable(progress):
        raise TypeError("progress must be None (log), False or a callable(done, total)")
    return progress


def extract_frame(
    image, ivar=None, psf=None, *, backend=None, threads=None, progress=None, allow_image_size_mismatch=False, **options
):
    """Extracts the spectra of a CCD image with a GaussHermite PSF in this process; returns a
    Frame. The request is checked as perfex-extract checks it (fibres, grid, patch sizes, the
    image's shape against the PSF's CCD, memory): a refusal is a perfex.RequestError naming
    the parameter, an adapted option a warning in frame.warnings. See perfex.extract_frame."""
    initialize(threads)
    psf = as_psf(psf)
    nspec_given = "nspec" in options
    opts = make_options(**options)
    backend = check_backend(backend or default_backend())
    img = as_image(image, ivar)
    result = _perfex.extract_frame(
        img._handle, psf, opts, nspec_given, bool(allow_image_size_mismatch), backend, progress_callback(progress)
    )
    frame = Frame(**result)
    for warning in frame.warnings:
        log.warning("%s", warning)
    return frame
