"""specter.util.util on numpy and scipy: the special functions, integrals, resampling and
shifts that specter's PSFs, DESI's code and specter's tests use."""

import time

import numpy as np

# scipy is imported where it is used: scipy.special alone takes most of `import perfex.specter`.


def custom_hermitenorm(n, u):
    """The probabilists' Hermite polynomial He_n at the points u (scipy.special.hermitenorm(n)(u))."""
    import scipy.special

    u = np.asarray(u, dtype=np.float64)
    if n < 0:
        return np.zeros_like(u)
    return scipy.special.eval_hermitenorm(n, u)


def custom_erf(y):
    """The error function at the points y (scipy.special.erf)."""
    import scipy.special

    return scipy.special.erf(np.asarray(y, dtype=np.float64))


def legval_numba(x, c):
    """The Legendre series c at x (numpy.polynomial.legendre.legval), always an array."""
    return np.atleast_1d(np.polynomial.legendre.legval(np.asarray(x, dtype=np.float64), c))


def gaussint(x, mean=0.0, sigma=1.0):
    """The integral of a unit Gaussian (mean, sigma) from -inf to x."""
    import scipy.special

    return 0.5 * (1.0 + scipy.special.erf((np.asarray(x, dtype=np.float64) - mean) / (np.sqrt(2.0) * sigma)))


def gausspix(x, mean=0.0, sigma=1.0):
    """A unit Gaussian (mean, sigma) integrated over the pixels centred on x."""
    x = np.asarray(x, dtype=np.float64)
    return gaussint(x + 0.5, mean, sigma) - gaussint(x - 0.5, mean, sigma)


# numpy 2 renamed trapz to trapezoid; numpy 1 has only trapz.
_trapezoid = np.trapezoid if hasattr(np, "trapezoid") else np.trapz


def trapz(edges, xp, yp):
    """specter's trapz: the integrals of yp(xp) (linear between the samples, clamped beyond
    them) over the bins between consecutive edges, an array[len(edges) - 1]: numpy's trapezoid
    rule on the interpolated values at a bin's edges and the samples strictly between them.
    xp must be sorted (ValueError otherwise, as specter); edges are taken as they come.
    specter also takes the samples at a bin's lower edge, zero-width segments that change only
    the rounding: over the samples' whole range it then differs from numpy's trapezoid by an
    ulp under numpy 1, failing its own test_trapz."""
    xp = np.asarray(xp, dtype=np.float64)
    yp = np.asarray(yp, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    if np.any(np.diff(xp) < 0.0):
        raise ValueError("Input x must be sorted in increasing order")
    if len(xp) != len(yp):
        raise ValueError("xp and yp must have same length")
    yedges = np.interp(edges, xp, yp)  # at repeated samples: the last one's value
    after = np.searchsorted(xp, edges, side="right")  # the first sample beyond each edge
    before = np.searchsorted(xp, edges)  # the first sample at or beyond each edge
    result = np.zeros(len(edges) - 1)
    for k in range(len(result)):
        inside = slice(after[k], before[k + 1])
        x = np.concatenate((edges[k : k + 1], xp[inside], edges[k + 1 : k + 2]))
        y = np.concatenate((yedges[k : k + 1], yp[inside], yedges[k + 1 : k + 2]))
        result[k] = _trapezoid(y, x)
    return result


def _bin_edges(centres):
    """specter's edges of bins around centres[n >= 3]: the midpoints, the end ones continued
    by the neighbouring midpoints' spacing."""
    mid = 0.5 * (centres[1:] + centres[:-1])
    return np.concatenate(([2.0 * mid[0] - mid[1]], mid, [2.0 * mid[-1] - mid[-2]]))


def resample(x, xp, yp, xedges=False, xpedges=False):
    """specter's resample: yp, the averages of a density over the bins of xp (their centres, or
    with xpedges their edges), rebinned onto the bins of x (centres, or with xedges edges) by
    integrating specter's pixel spline, the piecewise quadratic with continuous value and slope,
    flat at both ends, whose bin averages are yp: each new bin's value is its integral (zero
    beyond xp's bins) over its width."""
    x = np.asarray(x, dtype=np.float64)
    xp = np.asarray(xp, dtype=np.float64)
    yp = np.asarray(yp, dtype=np.float64)
    old = xp if xpedges else _bin_edges(xp)
    if len(old) == len(yp):  # as specter's pixel spline: values as many as edges are centres
        old = _bin_edges(old)
    if len(old) != len(yp) + 1:
        raise ValueError("resample: need one more element in pixbound than in flux")
    width = np.diff(old)
    if width.min() <= 0.0:
        raise ValueError("resample: pixel boundaries not monotonically increasing")
    new = x if xedges else _bin_edges(x)
    if np.diff(new).min() <= 0.0:
        raise ValueError("resample: new pixel boundaries not monotonically increasing")
    spline = _PixelSpline(old, width, yp)

    npix = len(yp)
    ibin = np.searchsorted(old, new) - 1  # bin i holds (old[i], old[i + 1]]; -1 and npix: outside
    ilo, ihi = ibin[:-1], ibin[1:]
    lo, hi = new[:-1], new[1:]
    counts = np.zeros(len(new) - 1)
    same = (ilo == ihi) & (ilo >= 0) & (ihi < npix)
    counts[same] = spline.integral(ilo[same], lo[same], hi[same])
    first = (ihi > ilo) & (ilo >= 0)  # the part of ilo's bin
    counts[first] += spline.integral(ilo[first], lo[first], old[ilo[first] + 1])
    last = (ihi > ilo) & (ihi < npix)  # the part of ihi's bin
    counts[last] += spline.integral(ihi[last], old[ihi[last]], hi[last])
    whole = ihi > ilo + 1  # the whole bins between
    if np.any(whole):
        starts = np.stack((ilo[whole] + 1, ihi[whole]), axis=1).ravel()
        counts[whole] += np.add.reduceat(np.append(yp * width, 0.0), starts)[::2]
    return counts / (hi - lo)


class _PixelSpline:
    """The piecewise quadratic of bin averages flux[n] over bins between edges[n + 1] (widths
    width[n]) with continuous value and slope, slope 0 at both ends (Bolton's pixel spline, as
    specter's util.pixspline): in bin i, about its centre c_i,
    y(x) = flux_i + s_i t + q_i (t^2 - width_i^2 / 12), t = x - c_i, s_i and q_i from the slopes
    at its edges."""

    def __init__(self, edges, width, flux):
        import scipy.linalg

        # Value continuity at the inner edges: a tridiagonal system for the slopes there.
        bands = np.zeros((3, len(flux) - 1))
        bands[0, 1:] = width[1:-1] / 6.0
        bands[1] = (width[:-1] + width[1:]) / 3.0
        bands[2, :-1] = width[1:-1] / 6.0
        slopes = np.zeros(len(flux) + 1)
        slopes[1:-1] = scipy.linalg.solve_banded((1, 1), bands, np.diff(flux))
        self.centre = 0.5 * (edges[1:] + edges[:-1])
        self.width, self.flux = width, flux
        self.s = 0.5 * (slopes[1:] + slopes[:-1])
        self.q = (slopes[1:] - slopes[:-1]) / (2.0 * width)

    def integral(self, i, lo, hi):
        """The integrals of y over [lo, hi] within bins i (arrays alike)."""
        tl, th = lo - self.centre[i], hi - self.centre[i]
        mean = (
            self.flux[i]
            + self.s[i] * 0.5 * (tl + th)
            + self.q[i] * ((th * th + th * tl + tl * tl) / 3.0 - self.width[i] ** 2 / 12.0)
        )
        return mean * (hi - lo)


def _sinc_kernel(shift, sincrad, dampfac):
    """specter's sinc kernel on offsets -sincrad..sincrad that shifts a signal by `shift`:
    sinc damped by a Gaussian of width dampfac, not normalised; a shift of 0 is the unit
    impulse. Where an offset equals the shift (integer shifts) it takes the limit 1: specter's
    divides 0 by 0 there, making the whole image NaN."""
    offsets = np.arange(-sincrad, sincrad + 1.0)
    if shift == 0.0:
        kernel = np.zeros(len(offsets))
        kernel[len(offsets) // 2] = 1.0
        return kernel
    x = (offsets - shift) * np.pi
    with np.errstate(invalid="ignore"):
        sinc = np.where(x == 0.0, 1.0, np.sin(x) / x)
    return np.exp(-((x / (dampfac * np.pi)) ** 2)) * sinc


def _convolve_same(a, kernel):
    """The convolution of `a` along its last axis with kernel, zero beyond its ends, the
    central a.shape[-1] values of the full one (scipy.signal.convolve's mode='same')."""
    m, n = len(kernel), a.shape[-1]
    padded = np.zeros(a.shape[:-1] + (n + m - 1,))
    start = m - 1 - (m - 1) // 2
    padded[..., start : start + n] = a
    out = np.zeros(a.shape)
    for t, k in enumerate(kernel[::-1]):
        out += k * padded[..., t : t + n]
    return out


def sincshift(image, dx, dy, sincrad=10, dampfac=3.25):
    """image[ny][nx] shifted by dx columns and dy rows (positive: towards higher indices) by
    sinc interpolation, as specter: one axis at a time, each convolved as one line (the rows,
    or the columns, end to end, so one's end spills into the next's start), a shift of at most
    1e-6 skipped; same shape."""
    image = np.asarray(image, dtype=np.float64)
    if abs(dx) > 1e-6:
        image = _convolve_same(image.ravel(), _sinc_kernel(dx, sincrad, dampfac)).reshape(image.shape)
    if abs(dy) > 1e-6:
        image = _convolve_same(image.T.ravel(), _sinc_kernel(dy, sincrad, dampfac)).reshape(image.shape[::-1]).T
    return image


def sincshift2d(image, dx, dy, sincrad=10, dampfac=3.25):
    """image[ny][nx] shifted by dx columns and dy rows with specter's two-dimensional sinc
    kernel (the outer product of the two axes' ones), zero beyond the edges; same shape."""
    image = np.asarray(image, dtype=np.float64)
    rows = _convolve_same(image, _sinc_kernel(dx, sincrad, dampfac))
    return _convolve_same(rows.T, _sinc_kernel(dy, sincrad, dampfac)).T


def outer(x, y, out=None):
    """The outer product x y^T, into out when given (numpy.outer)."""
    return np.outer(x, y, out=out)


_last_time = [time.perf_counter()]


def _timeit():
    """Seconds since the previous call (or since import)."""
    now = time.perf_counter()
    elapsed, _last_time[0] = now - _last_time[0], now
    return elapsed
