"""Drop-in for gpu_specter (desihub/gpu_specter) on perfex.

The modules a desispec pipeline uses, with gpu_specter's names, arguments and results:
core.extract_frame (also here as extract_frame), io (read_psf, read_img, write_frame,
write_model, read_frame, native_endian), mpi's IO coordinators, util.get_logger / Timer, spex
(the spex command: parse, check_input_options, main_gpu_specter; python -m
perfex.gpu_specter.spex), and
test/data/psf-r0-00051060.fits (the PSF desispec's tests find through
importlib.resources.files('gpu_specter')).

A pipeline switches either by changing its import,

    import gpu_specter.core        ->   from perfex import gpu_specter

or unchanged, by aliasing gpu_specter to this package before anything imports it:

    import perfex.gpu_specter
    perfex.gpu_specter.install_alias()
    import desispec.scripts.extract     # its `import gpu_specter.core` is now perfex's

__version__ names perfex ("perfex X.Y.Z"): desispec writes it as the frame's SPECTER keyword
and desiutil.depend as the gpu_specter dependency, so frames made by perfex say so.
"""

import importlib
import sys

import perfex
from perfex import aliases as aliases_

from . import core, io, mpi, util
from .core import extract_frame
from .io import read_psf

__version__ = f"perfex {perfex.__version__}"

_SUBMODULES = ("core", "io", "mpi", "spex", "util")


def __getattr__(name):
    # spex is imported on first use, so that `python -m perfex.gpu_specter.spex` runs it once
    # (importing it here made runpy warn that it was already in sys.modules).
    if name == "spex":
        return importlib.import_module(".spex", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def install_alias():
    """Makes `import gpu_specter` and `import gpu_specter.core` (.io, .mpi, .spex, .util) give this
    package and its modules, by putting them into sys.modules; call it before anything
    imports gpu_specter (again: no effect). Other gpu_specter submodules (extract, linalg, ...)
    then fail to import. Raises perfex.Error when another gpu_specter is already imported.
    Returns the module names installed."""
    package = sys.modules[__name__]
    aliases = {"gpu_specter": package}
    aliases.update({f"gpu_specter.{name}": getattr(package, name) for name in _SUBMODULES})
    return aliases_.install("gpu_specter", aliases)


__all__ = ["__version__", "core", "extract_frame", "install_alias", "io", "mpi", "read_psf", "spex", "util"]
