"""perfex: spectro-perfectionism extraction of DESI spectra (C++17 / Kokkos) from Python.

    import perfex
    psf = perfex.read_psf("psf-r0-00051060.fits")
    img = perfex.read_preproc("preproc-r0-00051060.fits")      # ivar 0 where MASK & 0x2FF
    frame = perfex.extract_frame(img.pixels, img.ivar, psf, wavelength="5760,7620,0.8")
    perfex.write_frame("frame-r0.fits", frame, img.path, psf.source)

Submodules: perfex.mpi (bundles over MPI ranks, exposures over rank groups),
perfex.gpu_specter (drop-in for gpu_specter.core.extract_frame), perfex.plot (quick-look PNG),
`python3 -m perfex.extract` (desi_extract_spectra's command line).
"""

from ._core import (
    Frame,
    Image,
    PreprocImage,
    as_psf,
    extract_frame,
    frame_mask,
    make_options,
    option_defaults,
    read_frame,
    read_preproc,
    read_psf,
    write_frame,
    write_model,
)
from ._perfex import Error, Psf, __version__
from ._runtime import backends, default_backend, initialize

__all__ = [
    "Error",
    "Frame",
    "Image",
    "PreprocImage",
    "Psf",
    "__version__",
    "as_psf",
    "backends",
    "default_backend",
    "extract_frame",
    "frame_mask",
    "initialize",
    "make_options",
    "option_defaults",
    "read_frame",
    "read_preproc",
    "read_psf",
    "write_frame",
    "write_model",
]
