"""Drop-in for specter (desihub/specter) on perfex: its PSFs and its 2D extraction.

The modules DESI's code and specter's tests use, with specter's names and arguments:
psf (load_psf, PSF, GaussHermitePSF, GaussHermite2PSF, SpotGridPSF: the geometry, the spots,
project, projection_matrix), extract (ex2d on perfex.extract_frame) and util (TraceSet,
fit_traces, custom_hermitenorm, custom_erf). PSF formats: every one perfex reads
(GAUSS-HERMITE, GAUSS-HERMITE2, SPOTGRID); MONOSPOT and PCA-PIX are refused by name.

A program switches either by changing its import,

    from specter.psf import load_psf     ->   from perfex.specter.psf import load_psf

or unchanged, by aliasing specter to this package before anything imports it:

    import perfex.specter
    perfex.specter.install_alias()
    import desispec.scripts.extract      # its `from specter.extract import ex2d` is perfex's

__version__ names perfex ("perfex X.Y.Z"): desispec writes it as the frame's SPECTER keyword.
"""

import sys

import perfex
from perfex import extras

_MISSING = [m for m in ("astropy", "scipy") if not extras.installed(m)]
if _MISSING:
    raise extras.MissingExtra(
        f"perfex.specter needs {' and '.join(_MISSING)}, not installed for {sys.executable} "
        "(pip install 'perfex[specter]')",
        name=_MISSING[0],
    )

from perfex import aliases as aliases_  # noqa: E402

from . import extract, psf, util  # noqa: E402
from .extract import ex2d  # noqa: E402
from .psf import load_psf  # noqa: E402
from .util import traceset  # noqa: E402

__version__ = f"perfex {perfex.__version__}"

# specter's module names and the modules of this package that stand for them.
_MODULES = {
    "": None,  # the package
    "psf": "psf",
    "psf.psf": "psf",
    "psf.gausshermite": "psf",
    "psf.gausshermite2": "psf",
    "psf.spotgrid": "psf",
    "extract": "extract",
    "extract.ex2d": "extract",
    "extract.ex1d": "extract",
    "util": "util",
    "util.traceset": "traceset",
    "util.util": "util_util",
}


def install_alias():
    """Makes `import specter` and its modules that DESI's code imports (specter.psf,
    specter.psf.gausshermite, .gausshermite2, .spotgrid, .psf; specter.extract,
    specter.extract.ex2d, .ex1d; specter.util, specter.util.traceset, .util) give this package
    and its modules, by putting them into sys.modules; call it before anything imports specter
    (again: no effect). Other specter modules (specter.psf.monospot, specter.io, ...) then
    fail to import. Raises perfex.Error when another specter is already imported. Returns the
    module names installed."""
    package = sys.modules[__name__]
    modules = {"psf": psf, "extract": extract, "util": util, "traceset": traceset, "util_util": util.util}
    aliases = {
        ("specter." + name).rstrip("."): package if ours is None else modules[ours] for name, ours in _MODULES.items()
    }
    return aliases_.install("specter", aliases)


__all__ = ["__version__", "ex2d", "extract", "install_alias", "load_psf", "psf", "util"]
