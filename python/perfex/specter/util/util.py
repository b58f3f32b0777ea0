"""specter.util.util on numpy and scipy: the special functions, integrals, resampling and
shifts that specter's PSFs, DESI's code and specter's tests use."""

import time

import numpy as np
import scipy.special


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


def trapz(edges, xp, yp):
    """The integrals of yp(xp) (linear between the samples, clamped beyond them) over the
    bins between consecutive edges[nbin + 1]: an array[nbin], by the trapezoid rule on the
    samples inside each bin and the interpolated values at its edges."""
    edges = np.asarray(edges, dtype=np.float64)
    xp = np.asarray(xp, dtype=np.float64)
    yp = np.asarray(yp, dtype=np.float64)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) < 0):
        raise ValueError(f"trapz: edges must be an increasing array of at least 2 values, got {edges}")
    result = np.empty(len(edges) - 1)
    for k, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        inside = (xp > lo) & (xp < hi)
        x = np.concatenate(([lo], xp[inside], [hi]))
        y = np.concatenate(([np.interp(lo, xp, yp)], yp[inside], [np.interp(hi, xp, yp)]))
        result[k] = np.trapezoid(y, x)
    return result


def _bin_edges(centres):
    """Edges of bins around sorted centres[n >= 2]: the midpoints, the end bins symmetric."""
    mid = 0.5 * (centres[1:] + centres[:-1])
    return np.concatenate(([2 * centres[0] - mid[0]], mid, [2 * centres[-1] - mid[-1]]))


def resample(x, xp, yp, xedges=False, xpedges=False):
    """yp sampled at xp (or, with xpedges, bin values between edges xp) averaged over the bins
    of x (centres, or with xedges their edges): flux-conserving rebinning of a density."""
    x = np.asarray(x, dtype=np.float64)
    xp = np.asarray(xp, dtype=np.float64)
    yp = np.asarray(yp, dtype=np.float64)
    if xpedges:  # bin values: sample them at the bins' centres
        xp = 0.5 * (xp[1:] + xp[:-1])
    edges = x if xedges else _bin_edges(x)
    return trapz(edges, xp, yp) / np.diff(edges)


def _sinc_kernel(shift, halfwidth=10):
    """The windowed sinc kernel that shifts a sampled signal by `shift` pixels (unit sum)."""
    offsets = np.arange(-halfwidth, halfwidth + 1)
    kernel = np.sinc(offsets - shift) * np.sinc((offsets - shift) / (halfwidth + 1))
    return kernel / kernel.sum()


def sincshift(image, dx, dy):
    """image[ny][nx] shifted by dx columns and dy rows by sinc interpolation, one axis then
    the other; same shape, zero beyond the edges."""
    import scipy.ndimage

    image = np.asarray(image, dtype=np.float64)
    shifted = scipy.ndimage.convolve1d(image, _sinc_kernel(dx)[::-1], axis=1, mode="constant")
    return scipy.ndimage.convolve1d(shifted, _sinc_kernel(dy)[::-1], axis=0, mode="constant")


def sincshift2d(image, dx, dy):
    """image[ny][nx] shifted by (dx, dy) with one two-dimensional sinc kernel; same shape."""
    import scipy.ndimage

    kernel = np.outer(_sinc_kernel(dy), _sinc_kernel(dx))[::-1, ::-1]
    return scipy.ndimage.convolve(np.asarray(image, dtype=np.float64), kernel, mode="constant")


def outer(x, y, out=None):
    """The outer product x y^T, into out when given (numpy.outer)."""
    return np.outer(x, y, out=out)


_last_time = [time.perf_counter()]


def _timeit():
    """Seconds since the previous call (or since import)."""
    now = time.perf_counter()
    elapsed, _last_time[0] = now - _last_time[0], now
    return elapsed
