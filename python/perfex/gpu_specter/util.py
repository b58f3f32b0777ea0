"""gpu_specter.util's logging and timing: get_logger (the loggers gpu_specter writes to, with its
handler and format) and Timer (its timing splits, logged at INFO)."""

import datetime
import logging
import os
import time

_LEVELS = dict(
    DEBUG=logging.DEBUG,
    INFO=logging.INFO,
    WARN=logging.WARNING,
    WARNING=logging.WARNING,
    ERROR=logging.ERROR,
    FATAL=logging.CRITICAL,
    CRITICAL=logging.CRITICAL,
)
_FORMAT = "%(levelname)s:%(filename)s:%(lineno)s:%(funcName)s:%(message)s"


def get_logger(level=None):
    """The logger of a level, as gpu_specter.util.get_logger: level None reads DESI_LOGLEVEL
    (default INFO); DEBUG, INFO, WARN/WARNING, ERROR, FATAL/CRITICAL (any case), else
    ValueError. The logger is 'desimeter.<LEVEL>' (gpu_specter's names) set to that level, with
    one stderr handler in gpu_specter's format (added once, also when gpu_specter's own
    get_logger set the logger up), and it does not propagate: each record is printed once, also
    where the application configured the root logger."""
    if level is None:
        level = os.getenv("DESI_LOGLEVEL", "INFO")
    level = str(level).upper()
    if level not in _LEVELS:
        raise ValueError(f"Unknown log level {level}; should be DEBUG/INFO/WARNING/ERROR/CRITICAL")
    logger = logging.getLogger("desimeter." + level)
    logger.setLevel(_LEVELS[level])
    # Its handler prints each record once: passed on to the root logger too, a record was
    # printed again by an application's own handler (gpu_specter's loggers do that).
    logger.propagate = False
    if not any(_is_gpu_specters(h) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setLevel(_LEVELS[level])
        handler.setFormatter(logging.Formatter(_FORMAT))
        logger.addHandler(handler)
    return logger


def _is_gpu_specters(handler):
    """Whether a handler is the stderr handler that gpu_specter's get_logger (or this one) adds."""
    formatter = handler.formatter
    return isinstance(handler, logging.StreamHandler) and formatter is not None and formatter._fmt == _FORMAT


class Timer:
    """Timing splits as gpu_specter.util.Timer: the start on creation, split(name) records
    the time of a named step; log_splits(log) writes the start (ISO, UTC), each step's seconds
    since the previous one and the total as INFO lines."""

    def __init__(self):
        self.start = self.time()
        self.splits = []
        self._max_name_length = 5

    def split(self, name, when=None):
        """Records step `name` as ending now (or at time stamp `when`, seconds since the
        epoch: a step timed elsewhere)."""
        self._max_name_length = max(len(name), self._max_name_length)
        self.splits.append((name, self.time() if when is None else when))

    def time(self):
        return time.time()

    def _lines(self):
        n = self._max_name_length
        start = datetime.datetime.fromtimestamp(self.start, datetime.timezone.utc).isoformat()
        yield f"{'start':>{n}s}:{start}"
        last = self.start
        for name, when in self.splits:
            yield f"{name:>{n}s}:{when - last:>22.2f}"
            last = when
        yield f"{'total':>{n}s}:{last - self.start:>22.2f}"

    def log_splits(self, log):
        for line in self._lines():
            log.info(line)

    def print_splits(self):
        for line in self._lines():
            print(line)
