"""The extraction job in the library's phases (job::check, job::plan, job::extract), and the
extraction of a CCD image held in numpy arrays in this process (extract_in_process)."""

import logging

from . import _perfex
from .frames import Frame
from .images import as_image
from .options import make_options
from .psf import as_psf
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


def _request(backend, options):
    """(options dict, nspec given, backend): the options converted and the backend checked,
    before any input is looked at."""
    return make_options(**options), "nspec" in options, check_backend(backend or default_backend())


def check_job(psf, ccd_shape, *, backend=None, allow_image_size_mismatch=False, **options):
    """job::check: the extraction of a ccd_shape (rows, cols) image with psf (a perfex.Psf)
    checked as perfex-extract checks it (fibres, grid, patch sizes, the image's shape against the
    PSF's CCD, memory); returns the job (perfex._perfex.FrameJob: .options as resolved,
    .warnings, .plan(), .flops, .pixel_box(first, last), .extract(image, progress, first, last),
    .phases). A refusal is a perfex.RequestError naming the parameter. options: as
    perfex.extract_frame's."""
    opts, nspec_given, backend = _request(backend, options)
    return job_of(psf, ccd_shape, opts, backend, allow_image_size_mismatch, nspec_given)


def job_of(psf, ccd_shape, options, backend, allow_image_size_mismatch=False, nspec_given=True):
    """job::check of an options dict (make_options'; an MPI rank: rank 0's resolved ones)."""
    return _perfex.FrameJob(
        psf, options, ccd_shape[0], ccd_shape[1], True, nspec_given, bool(allow_image_size_mismatch), backend
    )


def extract_in_process(
    image,
    ivar=None,
    psf=None,
    *,
    backend=None,
    threads=None,
    progress=None,
    allow_image_size_mismatch=False,
    log_warnings=True,
    **options,
):
    """Extracts the spectra of a CCD image with a GaussHermite PSF in this process; returns a
    Frame. The request is checked as perfex-extract checks it (check_job): a refusal is a
    perfex.RequestError naming the parameter, an adapted option a warning in frame.warnings.
    See perfex.extract_frame."""
    initialize(threads)
    psf = as_psf(psf)
    opts, nspec_given, backend = _request(backend, options)
    img = as_image(image, ivar)
    job = job_of(psf, img.shape, opts, backend, allow_image_size_mismatch, nspec_given)
    frame = Frame(**job.extract(img._handle, progress_callback(progress)))
    if log_warnings:
        for warning in frame.warnings:
            log.warning("%s", warning)
    return frame
