"""The extraction job in the library's phases (job::check, job::plan, job::extract), and the
extraction of a CCD image held in numpy arrays in this process (extract_in_process)."""

from . import _perfex
from .frames import Frame
from .images import as_image
from .logs import log
from .options import make_options
from .profiling import recorder
from .psf import as_psf
from .runtime import ProgressLog, check_backend, default_backend, initialize


def progress_callback(progress, label="extract", share=None):
    """The C++ progress callback for progress=None (log), False (none) or a callable. share:
    the share of the frame this process extracts, named in the log's lines (ProgressLog's)."""
    if progress is None:
        return ProgressLog(label, share)
    if isinstance(progress, ProgressLog):
        return progress.of_share(share) if share else progress
    if progress is False:
        return None
    if not callable(progress):
        raise TypeError("progress must be None (log), False or a callable(done, total)")
    return progress


def report_warnings(warnings, warn=None):
    """Each warning to warn (a callable(message); None: perfex's logger (perfex.logs))."""
    for warning in warnings:
        if warn is None:
            log.warning("%s", warning)
        else:
            warn(warning)


def _request(backend, options):
    """(options dict, nspec given, backend): the options converted and the backend checked,
    before any input is looked at."""
    return make_options(**options), "nspec" in options, check_backend(backend or default_backend())


def check_job(psf, ccd_shape, *, backend=None, allow_image_size_mismatch=False, phases=None, **options):
    """job::check: the extraction of a ccd_shape (rows, cols) image with psf (a perfex.Psf)
    checked as perfex-extract checks it (fibres, grid, patch sizes, the image's shape against the
    PSF's CCD, memory); returns the job (perfex._perfex.FrameJob: .options as resolved,
    .warnings, .plan(), .flops, .pixel_box(first, last), .extract(image, progress, first, last)).
    A refusal is a perfex.RequestError naming the parameter. phases: the PhaseTimes the job's
    phases are timed into (None: the job's own). options: as perfex.extract_frame's."""
    opts, nspec_given, backend = _request(backend, options)
    return job_of(psf, ccd_shape, opts, backend, allow_image_size_mismatch, nspec_given, phases)


def job_of(
    psf,
    ccd_shape,
    options,
    backend,
    allow_image_size_mismatch=False,
    nspec_given=True,
    phases=None,
    frame_warnings=True,
):
    """job::check of an options dict (make_options'; an MPI rank: rank 0's resolved ones).
    frame_warnings: the frames start with the check's warnings (an MPI rank's do not: rank 0
    reports them)."""
    return _perfex.FrameJob(
        psf,
        options,
        ccd_shape[0],
        ccd_shape[1],
        True,
        nspec_given,
        bool(allow_image_size_mismatch),
        backend,
        phases,
        frame_warnings,
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
    job=None,
    phases=None,
    warn=None,
    log_warnings=True,
    **options,
):
    """Extracts the spectra of a CCD image in this process; returns a Frame. The request is
    checked as perfex-extract checks it (check_job): a refusal is a perfex.RequestError naming
    the parameter, an adapted option a warning in frame.warnings, each passed to warn (a
    callable(message); None: perfex's logger (perfex.logs)) unless log_warnings is False. job: a job
    checked already for this image (a frame's files: perfex.files), instead of psf, backend and
    the options. phases: the PhaseTimes the job times into (a given job's own). See
    perfex.extract_frame."""
    initialize(threads)
    if job is None:
        psf = as_psf(psf)
        opts, nspec_given, backend = _request(backend, options)
        img = as_image(image, ivar)
        job = job_of(psf, img.shape, opts, backend, allow_image_size_mismatch, nspec_given, recorder(phases))
    else:
        img = as_image(image, ivar)
    frame = Frame(**job.extract(img._handle, progress_callback(progress)))
    if log_warnings:
        report_warnings(frame.warnings, warn)
    return frame
