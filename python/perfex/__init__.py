"""perfex: spectro-perfectionism extraction of DESI spectra (C++17 / Kokkos) from Python.

    import perfex
    psf = perfex.read_psf("psf-r0-00051060.fits")
    img = perfex.read_preproc("preproc-r0-00051060.fits")      # ivar 0 where MASK & 0x2FF
    frame = perfex.extract_frame(img.pixels, img.ivar, psf, wavelength="5760,7620,0.8")
    perfex.write_frame("frame-r0.fits", frame, img.path, psf.source)

The layers, each importing only those before it: the extension (perfex._perfex), the runtime
and its profiling regions (perfex.runtime, perfex.profiling), the numpy API (options, psf,
images, frames, extraction: the job in its phases), the MPI helpers (perfex.collective), a
frame over MPI ranks (perfex.mpi), a frame's files (perfex.files), an exposure's frames
(perfex.exposure), then the command line (perfex.cli: `python3 -m perfex.extract`), the
gpu_specter and specter drop-ins (perfex.gpu_specter, perfex.specter) and quick-look plots
(perfex.plot).
"""

from . import mpi
from ._perfex import Error, Psf, RequestError, __version__
from .frames import Frame, check_outputs, frame_mask, read_frame, write_frame, write_model
from .images import Image, PreprocImage, read_preproc
from .options import make_options, option_defaults
from .profiling import PhaseTimes
from .psf import as_psf, psf_from_tables, read_psf
from .runtime import backends, default_backend, initialize


def extract_frame(
    image,
    ivar=None,
    psf=None,
    *,
    comm=None,
    backend=None,
    threads=None,
    progress=None,
    allow_image_size_mismatch=False,
    phases=None,
    log_warnings=True,
    **options,
):
    """Extracts the spectra of a CCD image with a PSF (any format read_psf reads); returns a Frame.

    image, ivar: 2-D arrays (ivar 0 = masked pixel; apply the preproc MASK first, as
    read_preproc does), or a perfex.Image / PreprocImage alone. psf: a perfex.Psf, a PSF file
    name or gpu_specter's PSF dict. options: by name with the DESI defaults (option_defaults();
    wavelength="wmin,wmax,dw", specmin, nspec, bundlesize, nsubbundles, nwavestep, psferr (None:
    the PSF's), regularize, decorrelation, model_image, ...). backend: 'openmp', 'serial' or
    'cuda' (default the first of backends()); threads: host threads of the process (first call
    only, at most 512). progress: None logs to the 'perfex' logger, False is silent, or a
    callable(done, total). allow_image_size_mismatch: extract an image that is not the PSF's
    NPIX_Y x NPIX_X CCD (with a warning) instead of refusing it.

    The request is checked as perfex-extract checks it, before any work: fibres beyond the PSF,
    a grid longer than 2**24 bins or outside the PSF's domain, a run larger than the free memory
    are a perfex.RequestError naming the parameter; nwavestep and the padding are clamped to the
    grid with a warning (frame.warnings, and the 'perfex' logger unless log_warnings is False:
    for a caller that reports them itself, as the gpu_specter drop-in does).

    comm: an mpi4py communicator: the work is dealt over its ranks
    (perfex.mpi.extract_over_ranks); rank 0 returns the frame, the others None.

    frame.phases: the phases of the run (name, depth, seconds), as perfex-extract --timing
    prints them; each is a Kokkos profiling region "perfex::<name>". phases: a perfex.PhaseTimes
    that this process's phases are timed into, on every rank (inside the phases open there:
    a caller's own phases hold perfex's).
    """
    return mpi.extract(
        comm,
        image,
        ivar,
        psf,
        backend=backend,
        threads=threads,
        progress=progress,
        allow_image_size_mismatch=allow_image_size_mismatch,
        phases=phases,
        log_warnings=log_warnings,
        **options,
    )


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
