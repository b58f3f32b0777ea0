"""Drop-in for gpu_specter (desihub/gpu_specter) on perfex.

The modules a desispec-like pipeline uses, with gpu_specter's names, arguments and results:
core.extract_frame (also here as extract_frame), io.read_psf, mpi's IO coordinators and
__version__. A pipeline switches by changing its import:

    import gpu_specter.core        ->   from perfex import gpu_specter
    gpu_specter.core.extract_frame(img, psf, bundlesize, specmin, nspec, ...)   # unchanged
"""

from .. import __version__
from . import core, io, mpi
from .core import extract_frame
from .io import read_psf

__all__ = ["__version__", "core", "extract_frame", "io", "mpi", "read_psf"]
