"""specter.psf on perfex: load_psf and PSF objects with specter's API over a perfex.Psf.

Every format perfex.read_psf reads (GAUSS-HERMITE PSFVER 1-3, GAUSS-HERMITE2, SPOTGRID) loads;
MONOSPOT and PCA-PIX are refused by name. The geometry (x, y, wavelength, xyrange) follows
specter's definitions on the PSF's Legendre traces; the spots (xypix, pix, project,
projection_matrix) are perfex's in specter's boxes, which match specter's PSF.xypix to 4e-13 of
their peak, spots clipped by the CCD's first row included.
"""

import logging
import numbers
import sys

import numpy as np

import perfex

from .util import custom_hermitenorm, gausspix
from .util.traceset import TraceSet

log = logging.getLogger("perfex")

# Formats specter reads and perfex does not.
REFUSED = ("MONOSPOT", "PCA-PIX")


def _psftype(filename):
    """The PSFTYPE of the file's primary header ('' when absent or unreadable: perfex.read_psf
    then says what is wrong with the file)."""
    try:
        from astropy.io import fits

        return str(fits.getheader(filename).get("PSFTYPE", "")).strip()
    except (OSError, ValueError, ImportError):
        return ""


def load_psf(filename, psftype=None):
    """The PSF of a file, of the class its PSFTYPE names (psftype overrides it, as in specter).
    MONOSPOT and PCA-PIX, which perfex does not evaluate, are a perfex.Error naming the file."""
    kind = (psftype or _psftype(filename)).strip()
    if kind in REFUSED:
        raise perfex.Error(
            f"{filename}: PSFTYPE {kind} is not supported by perfex's specter drop-in (it reads {', '.join(_CLASSES)})"
        )
    return _CLASSES.get(kind, PSF)(filename)


def psf_of(psf):
    """The drop-in PSF of a perfex.Psf (of its format's class)."""
    return _CLASSES.get(psf.psftype, PSF)(psf)


class PSF:
    """A PSF with specter's attributes and methods: nspec, npix_x, npix_y, psferr, wmin, wmax,
    wmin_all, wmax_all, x, y, xy, wavelength, angstroms_per_pixel, xsigma, ysigma, wdisp, pix,
    xypix, xyrange, project, projection_matrix. perfex_psf is the perfex.Psf underneath (what
    perfex.extract_frame takes)."""

    _type = None  # the PSFTYPE a subclass requires
    # specter's spot box starts at int(trace - half size + _box_offset), truncated toward zero
    # where perfex's floors (None: at perfex's).
    _box_offset = None

    def __init__(self, filename):
        """filename: a PSF file, or a perfex.Psf."""
        if isinstance(filename, perfex.Psf):
            self.perfex_psf, self.filename = filename, filename.source
        else:
            self.perfex_psf, self.filename = perfex.read_psf(filename), str(filename)
        if self._type is not None and self.perfex_psf.psftype != self._type:
            raise perfex.Error(f"{filename}: PSFTYPE {self.perfex_psf.psftype} is not {self._type}")
        fields = self.perfex_psf.to_dict()
        self.npix_x = int(fields["npix_x"])
        self.npix_y = int(fields["npix_y"])
        self.psferr = float(fields["psferr"])
        self._x = TraceSet(fields["xtrace"], (fields["xtrace_wavemin"], fields["xtrace_wavemax"]))
        self._y = TraceSet(fields["ytrace"], (fields["ytrace_wavemin"], fields["ytrace_wavemax"]))
        self.nspec = self._x.ntrace
        self._sigma_traces(fields)
        self._fitted_sigma = {}
        self._wavelength_ranges()

    def _wavelength_ranges(self):
        """The inverse trace (wavelength against row) and each spectrum's wavelengths at the
        CCD's edges (pixel centres are integers: the edges are at -0.5 and npix_y - 0.5)."""
        self._w = self._y.invert()
        self._wmin_spec = self.wavelength(None, -0.5)
        self._wmax_spec = self.wavelength(None, self.npix_y - 0.5)
        self._wmin, self._wmin_all = np.min(self._wmin_spec), np.max(self._wmin_spec)
        self._wmax, self._wmax_all = np.max(self._wmax_spec), np.min(self._wmax_spec)

    def _sigma_traces(self, fields):
        """The traces of the spot widths (GHSIGX, GHSIGY) where specter takes them from the
        format: none here; they are fitted to the spots."""
        self.coeff = {}

    def __repr__(self):
        return f"<perfex.specter {type(self).__name__} {self.filename}: {self.nspec} spectra>"

    # ---- sizes and ranges -------------------------------------------------------------------
    @property
    def wmin(self):
        """The smallest wavelength any spectrum has on the CCD."""
        return self._wmin

    @property
    def wmax(self):
        """The largest wavelength any spectrum has on the CCD."""
        return self._wmax

    @property
    def wmin_all(self):
        """The smallest wavelength every spectrum has on the CCD."""
        return self._wmin_all

    @property
    def wmax_all(self):
        """The largest wavelength every spectrum has on the CCD."""
        return self._wmax_all

    # ---- geometry ---------------------------------------------------------------------------
    def wavelength(self, ispec=None, y=None):
        """The wavelength of spectrum ispec (index, sequence or None: all) at CCD row y (scalar,
        array or None: every row)."""
        if y is None:
            y = np.arange(0, self.npix_y)
        return self._w.eval(ispec, y)

    def x(self, ispec=None, wavelength=None):
        """The CCD column of spectrum ispec at wavelength (None: at every CCD row)."""
        if wavelength is None:
            if ispec is None or not isinstance(ispec, numbers.Integral):
                fibres = range(self.nspec) if ispec is None else ispec
                return np.array([self._x.eval(i, self.wavelength(i)) for i in fibres])
            wavelength = self.wavelength(ispec)
        return self._x.eval(ispec, wavelength)

    def y(self, ispec=None, wavelength=None):
        """The CCD row of spectrum ispec at wavelength (required, as in specter)."""
        if wavelength is None:
            raise ValueError("PSF.y requires wavelength scalar or vector")
        return self._y.eval(ispec, wavelength)

    def xy(self, ispec=None, wavelength=None):
        return self.x(ispec, wavelength), self.y(ispec, wavelength)

    def angstroms_per_pixel(self, ispec, wavelength):
        """Angstroms per CCD row of spectrum ispec at wavelength."""
        ww = self.wavelength(ispec, y=np.arange(self.npix_y))
        return np.interp(wavelength, ww, np.gradient(ww))

    def shift_xy(self, dx, dy):
        """Shifts the traces by (dx, dy) pixels, keeping the wavelengths: x += dx, y += dy (the
        constant Legendre term; specter's PSF classes do not implement it)."""
        self._x._coeff[:, 0] += dx
        self._y._coeff[:, 0] += dy
        fields = self.perfex_psf.to_dict()
        fields["xtrace"], fields["ytrace"] = self._x._coeff, self._y._coeff
        self.perfex_psf = perfex.Psf.from_dict(fields)
        self._fitted_sigma = {}
        self._wavelength_ranges()

    # ---- spot widths ------------------------------------------------------------------------
    def _sigma(self, ispec, wavelength, axis):
        """The Gaussian sigma (pixels) of the spot's profile across (axis 0: x) or along (axis
        1: y) the trace: the format's GHSIGX/GHSIGY trace, else a degree-5 Legendre fit of
        Gaussians fitted to the spot's profiles at 20 wavelengths from row 10 to npix_y - 10
        (spots beyond the PSF's wavelength domain extrapolated, as specter's are)."""
        name = ("GHSIGX", "GHSIGY")[axis]
        if name in self.coeff:
            return self.coeff[name].eval(ispec, wavelength)
        key = (ispec, axis)
        if key not in self._fitted_sigma:
            import scipy.optimize

            ww = self.wavelength(ispec, y=np.linspace(10, self.npix_y - 10, 20))
            sigmas = []
            for w in ww:
                profile = self.pix(ispec, w).sum(axis=axis)
                profile = profile / np.sum(profile)
                sigmas.append(scipy.optimize.curve_fit(gausspix, np.arange(len(profile)), profile)[0][1])
            self._fitted_sigma[key] = np.polynomial.Legendre.fit(ww, sigmas, 5, domain=(self._wmin, self._wmax))
        return self._fitted_sigma[key](wavelength)

    def xsigma(self, ispec, wavelength):
        """The spot's Gaussian sigma across the trace, in CCD pixels."""
        return self._sigma(ispec, wavelength, 0)

    def ysigma(self, ispec, wavelength):
        """The spot's Gaussian sigma along the trace, in CCD pixels."""
        return self._sigma(ispec, wavelength, 1)

    def wdisp(self, ispec, wavelength):
        """The spot's Gaussian sigma along the trace, in Angstroms."""
        return self.angstroms_per_pixel(ispec, wavelength) * self.ysigma(ispec, wavelength)

    # ---- spots ------------------------------------------------------------------------------
    def _xypix(self, ispec, wavelength, ispec_cache=None, iwave_cache=None):
        """(xslice, yslice, pixels) of the spot, not clipped to the CCD (perfex's spots in
        specter's box)."""
        xs, ys, pix = self.perfex_psf.xypix(int(ispec), float(wavelength))
        x0, y0, pix = self._specter_box(ispec, wavelength, xs.start, ys.start, pix)
        return slice(x0, xs.stop), slice(y0, ys.stop), pix

    def _specter_box(self, ispec, wavelength, x0, y0, pix):
        """(x0, y0, pixels) of a spot of perfex's box (first column x0, row y0) in specter's:
        where specter's starts a column or row later (boxes starting off the CCD), without the
        pixels before it and normalised over the others, as specter normalises its box."""
        if self._box_offset is None or min(x0, y0) >= 0:
            return x0, y0, pix
        xy = self._x.eval(ispec, wavelength), self._y.eval(ispec, wavelength)
        half = self.perfex_psf.hsizex, self.perfex_psf.hsizey
        dx, dy = (max(int(c - h + self._box_offset) - c0, 0) for c, h, c0 in zip(xy, half, (x0, y0)))
        if dx or dy:
            pix = pix[dy:, dx:] / np.sum(pix[dy:, dx:])
        return x0 + dx, y0 + dy, pix

    def xypix(self, ispec, wavelength, xmin=0, xmax=None, ymin=0, ymax=None, ispec_cache=None, iwave_cache=None):
        """(xslice, yslice, pixels[ny][nx]) such that image[yslice, xslice] += photons * pixels
        adds spectrum ispec's light at wavelength to the image of CCD columns [xmin, xmax) and
        rows [ymin, ymax) (slices relative to xmin, ymin; the spot clipped to that box). Empty
        (0 x 0 pixels) off the box, and for wavelengths off the CCD for that spectrum."""
        xmax = self.npix_x if xmax is None else xmax
        ymax = self.npix_y if ymax is None else ymax
        # The slices by specter's rule, in the library (the specter geometry's patch boxes).
        xs, ys = self.perfex_psf.specter_xypix(int(ispec), float(wavelength), xmin, xmax, ymin, ymax)
        if xs.stop <= xs.start or ys.stop <= ys.start:
            return xs, ys, np.zeros((0, 0))
        box_x, box_y, pix = self._xypix(ispec, wavelength)
        dx, dy = xmin - box_x.start, ymin - box_y.start
        return xs, ys, pix[ys.start + dy : ys.stop + dy, xs.start + dx : xs.stop + dx]

    def pix(self, ispec, wavelength):
        """The spot's pixels[ny][nx] (clipped to the CCD)."""
        return self.xypix(ispec, wavelength)[2]

    def xyrange(self, spec_range, wavelengths):
        """(xmin, xmax, ymin, ymax): the CCD box holding the spots of spectra spec_range
        ((first, last + 1) or one index) at wavelengths (a (min, max) pair, a sorted array or a
        scalar), clipped to [wmin, wmax]: specter's rule, in the library (the specter geometry's
        patch boxes). A ValueError where specter's fails (none of the range on the CCD)."""
        specmin, specmax = (spec_range, spec_range + 1) if isinstance(spec_range, numbers.Integral) else spec_range
        if isinstance(wavelengths, numbers.Real):
            wavemin = wavemax = wavelengths
        else:
            wavemin, wavemax = wavelengths[0], wavelengths[-1]
        return self.perfex_psf.specter_xyrange(specmin, specmax, float(wavemin), float(wavemax))

    # ---- projections ------------------------------------------------------------------------
    def _spots(self, specmin, specmax, wavelengths, xyrange):
        """Yields (ispec - specmin, iwave, yslice, xslice, pixels) of every non-empty spot
        clipped to xyrange, as xypix gives them; each spectrum's spots in one evaluation."""
        xmin, xmax, ymin, ymax = xyrange
        wavelengths = np.asarray(wavelengths, dtype=np.float64)
        for i, ispec in enumerate(range(specmin, specmax)):
            wspec = np.atleast_1d(wavelengths[i] if wavelengths.ndim == 2 else wavelengths)
            on_ccd = np.flatnonzero((wspec >= self._wmin_spec[ispec]) & (wspec <= self._wmax_spec[ispec]))
            if not on_ccd.size:
                continue
            spots, xcorner, ycorner = self.perfex_psf.spots(ispec, 1, wspec[on_ccd])
            ny, nx = spots.shape[2:]
            for j, pix, x0, y0 in zip(on_ccd.tolist(), spots[0], xcorner[0].tolist(), ycorner[0].tolist()):
                xhi, yhi = min(x0 + nx, xmax), min(y0 + ny, ymax)
                x0, y0, pix = self._specter_box(ispec, wspec[j], x0, y0, pix)
                xlo, ylo = max(x0, xmin), max(y0, ymin)
                if xhi > xlo and yhi > ylo:
                    box = pix[ylo - y0 : yhi - y0, xlo - x0 : xhi - x0]
                    yield i, j, slice(ylo - ymin, yhi - ymin), slice(xlo - xmin, xhi - xmin), box

    def project(self, wavelength, phot, specmin=0, xyrange=None, verbose=False):
        """The image of photons phot[nwave], [nspec][nwave] or [nimage][nspec][nwave] (photons
        per bin at wavelength[nwave] or [nspec][nwave]) of spectra specmin..: [ny][nx] (or
        [nimage][ny][nx]) over xyrange (xmin, xmax, ymin, ymax; default the CCD)."""
        wavelength = np.asarray(wavelength, dtype=np.float64)
        phot = np.asarray(phot, dtype=np.float64)
        if specmin >= self.nspec:
            raise ValueError(f"project: specmin {specmin} >= psf.nspec {self.nspec}")
        if phot.shape[-1] != wavelength.shape[-1]:
            raise ValueError(f"project: phot.shape {phot.shape} vs. wavelength.shape {wavelength.shape} mismatch")
        xyrange = (0, self.npix_x, 0, self.npix_y) if xyrange is None else tuple(xyrange)
        xmin, xmax, ymin, ymax = xyrange
        single = phot.ndim < 3
        phot = np.atleast_2d(phot)
        phot = phot[None] if single else phot
        nspec = phot.shape[1]
        if specmin + nspec > self.nspec:
            log.warning("project: specmin+nspec (%d+%d) > psf.nspec %d", specmin, nspec, self.nspec)
        image = np.zeros((phot.shape[0], ymax - ymin, xmax - xmin))
        specmax = min(specmin + nspec, self.nspec)
        # specter projects the wavelengths between rows 0 and npix_y (pixel centres), not the
        # CCD's edges: none of the light of the first half row.
        wspec = wavelength[: specmax - specmin] if wavelength.ndim == 2 else wavelength[None]
        rows = self.wavelength(range(specmin, specmax), np.array([0, self.npix_y]))
        lit = np.any(phot != 0.0, axis=0)
        lit[: specmax - specmin] &= (wspec >= rows[:, :1]) & (wspec <= rows[:, 1:])
        for i, j, ys, xs, pix in self._spots(specmin, specmax, wavelength, xyrange):
            if lit[i, j]:
                for k in range(phot.shape[0]):
                    image[k, ys, xs] += pix * phot[k, i, j]
        return image[0] if single else image

    def projection_matrix(self, spec_range, wavelengths, xyrange, use_cache=None):
        """The sparse matrix A (scipy.sparse CSR, [ny*nx][nspec*nwave]) with
        image = A.dot(phot.ravel()).reshape(ny, nx) over xyrange (xmin, xmax, ymin, ymax)."""
        import scipy.sparse

        specmin, specmax = (spec_range, spec_range + 1) if isinstance(spec_range, numbers.Integral) else spec_range
        xmin, xmax, ymin, ymax = xyrange
        nx, ny, nwave = xmax - xmin, ymax - ymin, len(wavelengths)
        rows, cols, values = [np.zeros(0, int)], [np.zeros(0, int)], [np.zeros(0)]
        for i, j, ys, xs, pix in self._spots(specmin, specmax, wavelengths, xyrange):
            yy, xx = np.mgrid[ys, xs]
            rows.append((yy * nx + xx).ravel())
            cols.append(np.full(pix.size, i * nwave + j))
            values.append(pix.ravel())
        shape = (ny * nx, (specmax - specmin) * nwave)
        entries = (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols)))
        return scipy.sparse.csr_matrix(entries, shape=shape)

    def cache_params(self, spec_range, wavelengths):
        """specter's cache of Legendre values: perfex evaluates its spots directly."""


class GaussHermitePSF(PSF):
    """A GAUSS-HERMITE PSF (specex, PSFVER 1-3)."""

    _type = "GAUSS-HERMITE"
    _box_offset = 0.5

    def _sigma_traces(self, fields):
        """Every parameter's trace by name (GHSIGX and GHSIGY give xsigma and ysigma)."""
        domain = (fields["wavemin"], fields["wavemax"])
        self.coeff = {name: TraceSet(c, domain) for name, c in zip(fields["param_names"], fields["coeff"])}
        self._ghdeg = (fields["ghdegx"], fields["ghdegy"])

    def _value(self, x, y, ispec, wavelength):
        """The PSF's profile (not integrated over pixels) at CCD positions x, y (1-D axes of a
        grid, or 2-D arrays of one shape) of spectrum ispec at wavelength, normalised to sum 1
        over them: the Gauss-Hermite core plus the tails, clipped at 0. For displays."""
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.ndim == 0 or y.ndim == 0:
            raise ValueError("_value: x and y must be 1-D or 2-D arrays")
        if x.ndim != y.ndim:
            raise ValueError(f"_value: x and y must both be 1-D or both 2-D, not {x.ndim}-D and {y.ndim}-D")
        if x.ndim == 1:
            x, y = np.meshgrid(x, y)
        if x.shape != y.shape:
            raise ValueError(f"_value: x {x.shape} and y {y.shape} must have one shape")

        def param(name):
            return self.coeff[name].eval(ispec, wavelength)

        xc, yc = self._x.eval(ispec, wavelength), self._y.eval(ispec, wavelength)
        ux, uy = (x - xc) / param("GHSIGX"), (y - yc) / param("GHSIGY")
        gauss_x, gauss_y = np.exp(-0.5 * ux**2) / np.sqrt(2 * np.pi), np.exp(-0.5 * uy**2) / np.sqrt(2 * np.pi)
        core = np.zeros(x.shape)
        for i in range(self._ghdeg[0] + 1):
            hermite_x = custom_hermitenorm(i, ux) * gauss_x
            for j in range(self._ghdeg[1] + 1):
                core += param(f"GH-{i}-{j}") * hermite_x * custom_hermitenorm(j, uy) * gauss_y
        r2 = ((x - xc) * param("TAILXSCA")) ** 2 + ((y - yc) * param("TAILYSCA")) ** 2
        tails = param("TAILAMP") * r2 / (param("TAILCORE") ** 2 + r2) ** (1 + param("TAILINDE") / 2)
        image = np.clip(core + tails, 0.0, None)
        return image / np.sum(image)


class GaussHermite2PSF(PSF):
    """A GAUSS-HERMITE2 PSF."""

    _type = "GAUSS-HERMITE2"
    _box_offset = 0.0


class SpotGridPSF(PSF):
    """A SPOTGRID PSF (sampled spots interpolated in fibre and wavelength)."""

    _type = "SPOTGRID"


# The class of each format the library reads: the subclass of PSF that requires its PSFTYPE,
# else PSF itself (specter's API over any format perfex.read_psf reads).
_SUBCLASSES = {cls._type: cls for cls in PSF.__subclasses__()}
_CLASSES = {psftype: _SUBCLASSES.get(psftype, PSF) for psftype in perfex.Psf.psftypes()}

# specter's modules of these classes, for code that reaches them as attributes once imported
# (specter.psf.gausshermite.GaussHermitePSF).
gausshermite = gausshermite2 = spotgrid = sys.modules[__name__]
