"""The extraction job in the library's phases (job::check, job::plan, job::extract), how a frame
is asked for (FrameRequest: the keywords that every driver of a frame takes; options_request:
the options as the job takes them), and the extraction of a CCD image held in numpy arrays in
this process (extract_in_process)."""

import inspect
from dataclasses import dataclass, fields
from typing import Callable, Optional

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


@dataclass
class FrameRequest:
    """How a frame is extracted, besides its inputs and options, with the defaults: the keywords
    of perfex.extract_frame (backend, threads, progress, allow_image_size_mismatch, phases,
    log_warnings) and of the drivers it passes them to (extract_in_process, perfex.mpi's
    extract_over_ranks): job, a job checked already for the image (a frame's files:
    perfex.files) instead of psf, backend and the options; warn, a callable(message) that each
    of the frame's warnings is passed to (None: perfex's logger, perfex.logs)."""

    backend: Optional[str] = None
    threads: Optional[int] = None
    progress: object = None
    allow_image_size_mismatch: bool = False
    phases: object = None
    log_warnings: bool = True
    job: object = None
    warn: Optional[Callable] = None

    @classmethod
    def signature_of(cls, function, drivers_only=("job", "warn")):
        """function's signature (a front end taking **options) with the request's public
        keywords and their defaults written out before **options, for help() and the API
        reference."""
        signature = inspect.signature(function)
        params = list(signature.parameters.values())
        keywords = [
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
            for f in fields(cls)
            if f.name not in drivers_only
        ]
        return signature.replace(parameters=params[:-1] + keywords + params[-1:])

    @classmethod
    def split(cls, arguments):
        """(FrameRequest, options): keyword arguments parted into the request's and the
        extraction options (the others, which make_options checks)."""
        names = {f.name for f in fields(cls)}
        request = cls(**{k: v for k, v in arguments.items() if k in names})
        return request, {k: v for k, v in arguments.items() if k not in names}


def options_request(options, psf_defaults=False):
    """(options dict, wavelength given, nspec given): extraction options by name as the library's
    job takes them, converted (make_options) before any input is looked at. By default
    (perfex.extract_frame's) a wavelength not given is the DESI grid, an nspec not given 500
    fibres clipped to the PSF's; with psf_defaults (desi_extract_spectra's, the command line's),
    wavelength and nspec None or not given take the PSF-dependent defaults: the PSF's WAVEMIN,
    WAVEMAX with dw 0.8, and 500 fibres clipped to the PSF's."""
    unset = [n for n in ("wavelength", "nspec") if n not in options or (psf_defaults and options[n] is None)]
    opts = make_options(**{name: value for name, value in options.items() if name not in unset})
    return opts, not psf_defaults or "wavelength" not in unset, "nspec" not in unset


def check_job(psf, ccd_shape, *, backend=None, allow_image_size_mismatch=False, phases=None, **options):
    """job::check: the extraction of a ccd_shape (rows, cols) image with psf (a perfex.Psf)
    checked as perfex-extract checks it (fibres, grid, patch sizes, the image's shape against the
    PSF's CCD, memory); returns the job (perfex._perfex.FrameJob: .options as resolved,
    .warnings, .plan(), .flops, .pixel_box(first, last), .extract(image, progress, first, last)).
    A refusal is a perfex.RequestError naming the parameter. phases: the PhaseTimes the job's
    phases are timed into (None: the job's own). options: as perfex.extract_frame's."""
    opts, _, nspec_given = options_request(options)
    backend = check_backend(backend or default_backend())
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


def extract_in_process(image, ivar=None, psf=None, **arguments):
    """Extracts the spectra of a CCD image in this process; returns a Frame. The request is
    checked as perfex-extract checks it (check_job): a refusal is a perfex.RequestError naming
    the parameter, an adapted option a warning in frame.warnings, each passed to warn unless
    log_warnings is False. arguments: FrameRequest's keywords (a given job is extracted with its
    own phases) and the options, as perfex.extract_frame's."""
    request, options = FrameRequest.split(arguments)
    initialize(request.threads)
    if request.job is None:
        psf = as_psf(psf)
        opts, _, nspec_given = options_request(options)
        backend = check_backend(request.backend or default_backend())
        img = as_image(image, ivar)
        mismatch, phases = request.allow_image_size_mismatch, recorder(request.phases)
        job = job_of(psf, img.shape, opts, backend, mismatch, nspec_given, phases)
    else:
        job, img = request.job, as_image(image, ivar)
    frame = Frame(**job.extract(img._handle, progress_callback(request.progress)))
    if request.log_warnings:
        report_warnings(frame.warnings, request.warn)
    return frame
