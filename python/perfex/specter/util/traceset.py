"""specter.util.traceset on numpy: TraceSet (one Legendre series per fibre over a domain) and
fit_traces, with specter's attributes and methods (desispec's xytraceset and qproc use them)."""

import numbers

import numpy as np
from numpy.polynomial import legendre


class TraceSet:
    """coeff[ntrace][deg + 1]: Legendre coefficients of a quantity against a variable whose
    domain (xmin, xmax) maps onto [-1, 1]."""

    def __init__(self, coeff, domain=(-1, 1)):
        self._coeff = np.array(coeff, dtype=np.float64)
        if self._coeff.ndim != 2:
            raise ValueError(f"TraceSet: coeff must be a 2-D [ntrace][ncoeff] array, got shape {self._coeff.shape}")
        self._xmin, self._xmax = float(domain[0]), float(domain[1])
        if not self._xmax > self._xmin:
            raise ValueError(f"TraceSet: domain {tuple(domain)} is empty")

    @property
    def ntrace(self):
        return self._coeff.shape[0]

    def _xnorm(self, x):
        return (np.asarray(x, dtype=np.float64) - self._xmin) * (2.0 / (self._xmax - self._xmin)) - 1.0

    def eval(self, ispec, x):
        """The traces at x (scalar or array). ispec: an index (shape of x), None (every trace),
        a sequence of indices, or a (first, last + 1) tuple: [ntrace][len(x)] (or [ntrace] for a
        scalar x)."""
        xx = self._xnorm(x)
        if isinstance(ispec, numbers.Integral):
            return legendre.legval(xx, self._coeff[ispec])
        if isinstance(ispec, tuple):
            ispec = range(*ispec)
        elif ispec is None:
            ispec = range(self.ntrace)
        return np.array([legendre.legval(xx, self._coeff[i]) for i in ispec])

    def invert(self, domain=None, deg=None):
        """The TraceSet of x against the traces' values (e.g. wavelength against y): a Legendre
        fit of degree deg (default ncoeff + 2) to 1000 samples of each trace over its domain, on
        the range of the traces' values at the domain's ends (or `domain`)."""
        if domain is None:
            ends = self.eval(None, np.array([self._xmin, self._xmax]))
            domain = (np.min(ends), np.max(ends))
        ymin, ymax = domain
        if deg is None:
            deg = self._coeff.shape[1] + 2
        x = np.linspace(self._xmin, self._xmax, 1000)
        coeff = np.zeros((self.ntrace, deg + 1))
        for i in range(self.ntrace):
            yy = (self.eval(i, x) - ymin) * (2.0 / (ymax - ymin)) - 1.0
            coeff[i] = legendre.legfit(yy, x, deg)
        return TraceSet(coeff, domain=(ymin, ymax))


def fit_traces(x, yy, deg=5, domain=None):
    """The TraceSet fitting yy[i] against x (increasing) with Legendre series of degree deg
    over domain (default x's first and last values)."""
    x = np.asarray(x, dtype=np.float64)
    yy = np.atleast_2d(np.asarray(yy, dtype=np.float64))
    if yy.shape[1] != len(x):
        raise ValueError(f"fit_traces: y.shape[1] ({yy.shape[1]}) != len(x) ({len(x)})")
    if not np.all(np.diff(x) > 0):
        raise ValueError("fit_traces: x is not increasing")
    xmin, xmax = (x[0], x[-1]) if domain is None else domain
    xx = (x - xmin) * (2.0 / (xmax - xmin)) - 1.0
    coeff = np.array([legendre.legfit(xx, y, deg) for y in yy])
    return TraceSet(coeff, (xmin, xmax))
