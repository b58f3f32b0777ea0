"""specter.util's functions that DESI's code and specter's tests use, on numpy and scipy:
TraceSet / fit_traces (also as specter.util.traceset), custom_hermitenorm, custom_erf,
legval_numba, gausspix, gaussint, trapz, resample, sincshift, sincshift2d, outer and _timeit
(also as specter.util.util)."""

from . import traceset, util
from .traceset import TraceSet, fit_traces
from .util import (
    custom_erf,
    custom_hermitenorm,
    gaussint,
    gausspix,
    legval_numba,
    outer,
    resample,
    sincshift,
    sincshift2d,
    trapz,
)

__all__ = [
    "TraceSet",
    "custom_erf",
    "custom_hermitenorm",
    "fit_traces",
    "gaussint",
    "gausspix",
    "legval_numba",
    "outer",
    "resample",
    "sincshift",
    "sincshift2d",
    "trapz",
    "traceset",
    "util",
]
