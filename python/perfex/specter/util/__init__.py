"""specter.util's functions that DESI's code and specter's tests use, on numpy and scipy:
TraceSet / fit_traces (also as specter.util.traceset), custom_hermitenorm, custom_erf,
legval_numba, gausspix, gaussint."""

import numpy as np
import scipy.special

from . import traceset
from .traceset import TraceSet, fit_traces


def custom_hermitenorm(n, u):
    """The probabilists' Hermite polynomial He_n at the points u (scipy.special.hermitenorm(n)(u))."""
    u = np.asarray(u, dtype=np.float64)
    if n < 0:
        return np.zeros_like(u)
    return scipy.special.eval_hermitenorm(n, u)


def custom_erf(y):
    """The error function at the points y (scipy.special.erf)."""
    return scipy.special.erf(np.asarray(y, dtype=np.float64))


def legval_numba(x, c):
    """The Legendre series c at x (numpy.polynomial.legendre.legval), always an array."""
    return np.atleast_1d(np.polynomial.legendre.legval(np.asarray(x, dtype=np.float64), c))


def gaussint(x, mean=0.0, sigma=1.0):
    """The integral of a unit Gaussian (mean, sigma) from -inf to x."""
    return 0.5 * (1.0 + scipy.special.erf((np.asarray(x, dtype=np.float64) - mean) / (np.sqrt(2.0) * sigma)))


def gausspix(x, mean=0.0, sigma=1.0):
    """A unit Gaussian (mean, sigma) integrated over the pixels centred on x."""
    x = np.asarray(x, dtype=np.float64)
    return gaussint(x + 0.5, mean, sigma) - gaussint(x - 0.5, mean, sigma)


__all__ = [
    "TraceSet",
    "custom_erf",
    "custom_hermitenorm",
    "fit_traces",
    "gaussint",
    "gausspix",
    "legval_numba",
    "traceset",
]
