"""Extraction options by name, with the DESI / gpu_specter defaults."""

import contextlib
import math
import re

from . import _perfex
from ._perfex import RequestError

_OPTION_DEFAULTS = _perfex.options_to_dict(_perfex.ExtractionOptions())


def option_defaults():
    """The extraction options by name with their (DESI / gpu_specter) defaults.

    Returns
    -------
    dict
        A new dict of the library's ExtractionOptions by name: wmin, wmax, dw (5760.0,
        7620.0, 0.8), specmin (0), nspec (500), bundlesize (25), nsubbundles (5), nwavestep
        (50), wavepad0 (10), wavepad_frac (0.2), pixpad_frac (0.8), row_min (0), row_max
        (-1: the CCD's last), regularize (0.0), psferr (-1.0: the PSF's), eigen_clip (1e-14),
        model_image (False), memory_budget (0: automatic), batch_patches (0: automatic),
        decorrelation ('signal') and geometry ('automatic'). The C++ page of this reference
        says what each does (ExtractionOptions).

    Examples
    --------
    >>> perfex.option_defaults()["nsubbundles"]
    5
    """
    return dict(_OPTION_DEFAULTS)


def parse_wavelength(wavelength):
    """(wmin, wmax, dw) from "wmin,wmax,dw" or a 3-sequence."""
    if isinstance(wavelength, str):
        parts = wavelength.split(",")
    else:
        try:
            parts = list(wavelength)
        except TypeError:
            parts = []
    try:
        if len(parts) != 3:
            raise ValueError
        return tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise RequestError(f"wavelength: expected 'wmin,wmax,dw', got {wavelength!r}") from None


def closest_name(word, names):
    """The name among names that word is a likely typo of, else "" (the library's rule,
    perfex::closest_name, as the C++ tools apply it to their options)."""
    return _perfex.closest_name(word, list(names))


def _with_near_match(name, known):
    """name, with "(did you mean X?)" when a known name is near (a typo)."""
    near = closest_name(name, known)
    return f"{name} (did you mean {near}?)" if near else name


def make_options(**options):
    """The complete options dict from keyword options.

    Parameters
    ----------
    **options
        The C++ ExtractionOptions names (option_defaults()), plus wavelength="wmin,wmax,dw"
        (or a 3-sequence) for wmin, wmax and dw, and psferr: None (the PSF's PSFERR) or a
        finite value >= 0.

    Returns
    -------
    dict
        option_defaults() updated with the options (psferr None as -1.0).

    Raises
    ------
    TypeError
        An unknown option name.
    RequestError
        A wavelength that is not "wmin,wmax,dw", or a bad psferr.
    """
    opts = option_defaults()
    wavelength = options.pop("wavelength", None)
    if wavelength is not None:
        opts["wmin"], opts["wmax"], opts["dw"] = parse_wavelength(wavelength)
    unknown = sorted(set(options) - set(opts))
    if unknown:
        known = ["wavelength", *sorted(opts)]
        named = [_with_near_match(name, known) for name in unknown]
        raise TypeError(f"unknown extraction option(s) {', '.join(named)}; known: " + ", ".join(known))
    psferr = options.pop("psferr", None)
    if psferr is None:
        psferr = -1.0  # the PSF's
    else:
        try:
            ok = math.isfinite(psferr) and psferr >= 0
        except TypeError:
            ok = False
        if not ok:
            raise RequestError(f"psferr: must be None (the PSF's PSFERR) or a finite value >= 0, got {psferr!r}")
    opts.update(options)
    opts["psferr"] = psferr
    return opts


def cxx_options(opts):
    """The validated C++ ExtractionOptions of an options dict (perfex.RequestError names the bad
    one)."""
    o = _perfex.options_from_dict(opts)
    o.validate()
    return o


@contextlib.contextmanager
def named_as(names):
    """Inside the block, a perfex.RequestError names the options as the caller's arguments
    (names: {the library's name: the caller's}, as specter's wavesize is nwavestep)."""
    try:
        yield
    except RequestError as e:
        message = str(e)
        for ours, theirs in names.items():
            message = re.sub(rf"\b{ours}\b", theirs, message)
        if message == str(e):
            raise
        raise type(e)(message) from None


def check_value(name, value, callers_name):
    """The library's check of option `name`'s value, refused (perfex.RequestError) in the name
    of the caller's argument that gives it."""
    with named_as({name: callers_name}):
        cxx_options(make_options(**{name: value}))


def bundle_ranges(opts, nfib):
    """[lo, hi) fibre range of each bundle the options extract."""
    return [tuple(r) for r in _perfex.bundle_ranges(opts, nfib)]


def grid_of_values(wave, what="wavelength"):
    """(wmin, wmax, dw) of a uniform wavelength grid given by its values (the library's
    grid_of_values: dw from the first step, as gpu_specter pads with it); a
    perfex.RequestError names the first value off the grid."""
    return tuple(_perfex.grid_of_values(wave, what))
