"""perfex: spectro-perfectionism extraction of DESI spectra (C++17 / Kokkos) from Python.

A frame from its files::

    import perfex
    psf = perfex.read_psf("psf-r0-00051060.fits")
    img = perfex.read_preproc("preproc-r0-00051060.fits")      # ivar 0 where MASK & 0x2FF
    frame = perfex.extract_frame(img.pixels, img.ivar, psf, wavelength="5760,7620,0.8")
    perfex.write_frame("frame-r0.fits", frame, img.path, psf.source)

The layers, each importing only those before it: the extension (perfex._perfex), the runtime
and its profiling regions (perfex.runtime, perfex.profiling), the numpy API (options, psf,
images, frames, extraction: the job in its phases), the MPI helpers (perfex.collective), a
frame over MPI ranks (perfex.mpi), the choice between this process and the ranks
(perfex.dispatch: perfex.mpi is imported only for more than one rank), a frame's files
(perfex.files), an exposure's frames (perfex.exposure), then the command line (perfex.cli:
`python3 -m perfex.extract`), the gpu_specter and specter drop-ins (perfex.gpu_specter,
perfex.specter) and quick-look plots (perfex.plot).
"""

from . import dispatch
from ._perfex import Error, Psf, RequestError, __version__
from .extraction import FrameRequest
from .frames import Frame, check_outputs, frame_mask, read_frame, write_frame, write_model
from .images import Image, PreprocImage, read_preproc
from .options import make_options, option_defaults
from .profiling import PhaseTimes
from .psf import as_psf, psf_from_tables, read_psf
from .runtime import backends, default_backend, initialize


def extract_frame(image, ivar=None, psf=None, *, comm=None, **options):
    """Extracts the spectra of a CCD image with a PSF; returns a Frame.

    The request is checked as perfex-extract checks it, before any work. nwavestep and the
    padding are clamped to the grid with a warning (in ``frame.warnings``, and logged to
    perfex's logger, perfex.logs, unless log_warnings is False). The keywords from backend to
    log_warnings, with their defaults, are perfex.extraction.FrameRequest's.

    Parameters
    ----------
    image : numpy.ndarray, Image or PreprocImage
        The pixels, a 2-D array [nrows][ncols] (with ivar), or a perfex.Image or
        PreprocImage alone. Arrays in GPU memory (cupy) are read in place on the cuda backend.
    ivar : numpy.ndarray, optional
        The pixels' inverse variances, 0 for a masked pixel (apply the preproc MASK first, as
        read_preproc does); required with a pixel array, refused with an Image.
    psf : Psf, str, os.PathLike or dict
        A perfex.Psf, a PSF file name (any format read_psf reads) or gpu_specter's PSF dict.
    comm : mpi4py.MPI.Comm, optional
        Deal the work over the ranks of this communicator (perfex.mpi.extract_over_ranks):
        every rank calls, only rank 0's image, ivar, psf and options are used, rank 0 returns
        the frame and the others None.
    backend : str, optional
        'openmp', 'serial' or 'cuda'; default: the first of backends().
    threads : int, optional
        Host threads of the process (the first call only, at most 512); see initialize.
    progress : None, False or callable, optional
        None logs the progress to perfex's logger (perfex.logs), False is silent, a callable is called
        as ``progress(done, total)`` with the patches solved.
    allow_image_size_mismatch : bool, default False
        Extract an image that is not the PSF's NPIX_Y x NPIX_X CCD (with a warning) instead of
        refusing it.
    phases : PhaseTimes, optional
        A recorder that this process's phases are timed into, on every rank, inside the phases
        open there (a caller's own phases hold perfex's).
    log_warnings : bool, default True
        Log the frame's warnings to perfex's logger (perfex.logs); False for a caller that reports
        ``frame.warnings`` itself, as the gpu_specter drop-in does.
    **options
        The extraction options by name, with the DESI defaults of option_defaults():
        ``wavelength="wmin,wmax,dw"`` (or a 3-sequence; default 5760,7620,0.8), specmin (0),
        nspec (500, clipped to the PSF's fibres from specmin when not given), bundlesize (25),
        nsubbundles (5), nwavestep (50), psferr (None: the PSF's PSFERR), regularize (0.0),
        decorrelation ('signal'; or 'noise'), geometry ('automatic'; or 'gpu_specter',
        'specter'), model_image (False), ...

    Returns
    -------
    Frame or None
        The frame (``frame.phases``: the run's phases as (name, depth, seconds), each a Kokkos
        profiling region "perfex::<name>"); None on the ranks other than 0 with comm.

    Raises
    ------
    RequestError
        A request refused before any work, naming the parameter: fibres beyond the PSF, a grid
        longer than 2**24 bins or outside the PSF's domain, a run larger than the free memory,
        an invalid option value.
    TypeError
        An unknown option name, or ivar missing or given with an Image.
    Error
        Invalid inputs (a negative ivar, arrays of different shapes) or a failed run.

    Examples
    --------
    >>> import perfex
    >>> psf = perfex.read_psf("psf-r0-00051060.fits")
    >>> img = perfex.read_preproc("preproc-r0-00051060.fits")
    >>> frame = perfex.extract_frame(img, psf=psf, wavelength="5760,7620,0.8", nspec=25)
    >>> perfex.write_frame("frame-r0.fits", frame, img.path, psf.source)
    """
    return dispatch.extract(comm, image, ivar, psf, **options)


extract_frame.__signature__ = FrameRequest.signature_of(extract_frame)


__all__ = [
    "Error",
    "Frame",
    "Image",
    "PhaseTimes",
    "PreprocImage",
    "Psf",
    "RequestError",
    "__version__",
    "as_psf",
    "backends",
    "check_outputs",
    "default_backend",
    "extract_frame",
    "frame_mask",
    "initialize",
    "make_options",
    "option_defaults",
    "psf_from_tables",
    "read_frame",
    "read_preproc",
    "read_psf",
    "write_frame",
    "write_model",
]
