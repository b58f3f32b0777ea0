"""The optional dependencies (pyproject.toml's extras): a feature whose module is missing says
which extra installs it, in one line, instead of a bare ModuleNotFoundError from deep inside."""

import importlib
import importlib.util
import sys

# The extra that installs each optional module.
EXTRAS = {"mpi4py": "mpi", "matplotlib": "plot", "astropy": "gpu_specter", "scipy": "specter"}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency that a feature needs is not installed; the message names the extra
    that installs it."""


def require(module, feature, extra=None):
    """Imports and returns `module` for `feature` (the words of the message: "--mpi").

    Parameters
    ----------
    module : str
        The module to import, such as ``"mpi4py.MPI"``.
    feature : str
        What needs it, as the message should name it.
    extra : str, optional
        The extra that installs it (default: the one of EXTRAS for the module's package).

    Raises
    ------
    MissingExtra
        When the module's package is not installed for this Python.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        package = module.split(".")[0]
        if e.name is None or e.name.split(".")[0] != package:
            raise  # the package is there, but something it imports is missing
        extra = extra or EXTRAS[package]
        raise MissingExtra(
            f"{feature} needs {package}, which is not installed for {sys.executable}: pip install 'perfex[{extra}]'",
            name=package,
        ) from None


def installed(module):
    """Whether `module` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it
        return False


def run_command(main, argv, prog):
    """A command's main(argv, prog), with a missing extra reported in one line and exit status 2
    (no traceback): the status of a bad command line."""
    try:
        return main(argv, prog)
    except MissingExtra as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
