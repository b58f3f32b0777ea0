"""Where perfex's messages go: DESI's logger where desiutil is importable, so that a desispec
process (desi_proc, desi_extract_spectra) prints them with its own lines, else logging's
'perfex' logger.

Every module logs through `log`, which looks the logger up at each call: DESI_LOGLEVEL and
set_level take effect without re-importing perfex.
"""

import logging

_level = None  # set_level's level; None: DESI_LOGLEVEL, else INFO


def get_logger():
    """perfex's logger.

    Returns
    -------
    logging.Logger
        ``desiutil.log.get_logger()`` where desiutil is importable (its stdout handler and
        format; the level from :func:`set_level`, else the environment variable
        ``DESI_LOGLEVEL``, else INFO); otherwise ``logging.getLogger("perfex")``, configured by
        the application (the command-line tools give it a handler).
    """
    try:
        from desiutil.log import get_logger as desi_logger
    except ImportError:
        logger = logging.getLogger("perfex")
        if _level is not None:
            logger.setLevel(_level)
        return logger
    return desi_logger(_level)


def set_level(level):
    """Sets the level of perfex's messages (a name such as ``"DEBUG"``, or None: back to
    ``DESI_LOGLEVEL``, else INFO)."""
    global _level
    _level = None if level is None else str(level).upper()


def uses_desiutil():
    """Whether perfex's messages go to desiutil's logger."""
    return get_logger().name != "perfex"


def configure_command_line(verbose=False, prefix=""):
    """The command-line tools' logging: desiutil's handler where perfex logs through it,
    else one stderr handler on the root logger with `prefix` before each line (``"rank 3: "``).
    verbose: DEBUG messages too."""
    set_level("DEBUG" if verbose else None)
    if not uses_desiutil():
        logging.basicConfig(
            level=logging.DEBUG if verbose else logging.INFO, format=prefix + "%(levelname)s %(name)s: %(message)s"
        )


class _Log:
    """Stands for perfex's logger in the modules: ``log.info(...)`` calls get_logger()'s, in the
    caller's frame (desiutil's lines name the caller's file and line)."""

    def __getattr__(self, name):
        return getattr(get_logger(), name)


log = _Log()
