"""specter.extract on perfex: ex2d, specter's frame extraction, run by perfex.extract_frame with
the library's specter geometry (specter's bundles, patch boxes and wavelength padding, and its
model image), and specter's small dense helpers for one patch (docs/python.md).
"""

import logging

import numpy as np

import perfex

from .psf import PSF, psf_of

log = logging.getLogger("perfex")


def _perfex_psf(psf):
    """The perfex.Psf of a specter drop-in PSF, a perfex.Psf or a PSF file name."""
    return psf.perfex_psf if isinstance(psf, PSF) else perfex.as_psf(psf)


def resolution_ndiag(psf, specmin, nspec, dw):
    """specter's number of resolution diagonals on each side: 9 sigma of the widest spot
    (PSF.wdisp at three spectra and three wavelengths) in bins of dw, at most half the spot."""
    ndiag = 0
    for ispec in (specmin, specmin + nspec // 2, specmin + nspec - 1):
        for w in (psf.wmin, 0.5 * (psf.wmin + psf.wmax), psf.wmax):
            ndiag = max(ndiag, int(round(9.0 * float(psf.wdisp(ispec, w)) / dw)))
    spot = psf.pix(0, (psf.wmin_all + psf.wmax_all) / 2.0).shape
    return min(ndiag, spot[0] // 2, spot[1] // 2)


def _on_ccd(array, xyrange, ccd_shape, fill):
    """The CCD-sized array holding `array` at xyrange (xmin, xmax, ymin, ymax)."""
    xmin, xmax, ymin, ymax = xyrange
    full = np.full(ccd_shape, fill, dtype=np.float64)
    full[ymin:ymax, xmin:xmax] = array
    return full


def ex2d(
    image,
    imageivar,
    psf,
    specmin,
    nspec,
    wavelengths,
    xyrange=None,
    regularize=0.0,
    ndecorr=False,
    bundlesize=25,
    nsubbundles=1,
    wavesize=50,
    full_output=False,
    verbose=False,
    debug=False,
    psferr=None,
    pixpad_frac=0.8,
    wavepad_frac=0.2,
):
    """Extracts spectra specmin..specmin+nspec-1 of image (inverse variance imageivar, 0 =
    masked) with psf at wavelengths (a uniform grid), as specter.extract.ex2d.

    image covers the CCD, or the box xyrange = (xmin, xmax, ymin, ymax) of it (an image smaller
    than the CCD without xyrange: its first rows and columns, as in specter), the patches' rows
    then clipped to the box's as specter clips them. regularize,
    bundlesize, nsubbundles, wavesize (wavelength bins per patch), psferr (None: the PSF's),
    pixpad_frac and wavepad_frac are perfex.extract_frame's regularize, bundlesize,
    nsubbundles, nwavestep, psferr, pixpad_frac and wavepad_frac; ndecorr=True decorrelates the
    noise of all the fibres of a patch together (decorrelation='noise'). verbose logs progress
    to perfex's logger (perfex.logs). debug (specter opens an IPython shell) is ignored with a warning.

    Returns (flux, ivar, resolution_data): flux per Angstrom [nspec][nwave], its inverse
    variance, and the resolution band [nspec][2*ndiag+1][nwave] with specter's ndiag (9 sigma
    of the widest spot in bins, at most half a spot). With full_output, the dict of those
    (flux, ivar, resolution_data) and modelimage (image's shape), pixmask_fraction and chi2pix.
    """
    perfex.options.check_value("nwavestep", wavesize, "wavesize")
    pxpsf = _perfex_psf(psf)
    grid = perfex.options.grid_of_values(np.asarray(wavelengths, dtype=np.float64), "wavelengths")
    if debug:
        log.warning("ex2d: debug=True ignored (specter opens an IPython shell; perfex.specter does not)")
    pixels, ivar, xyrange = _image_on_ccd(image, imageivar, xyrange, (pxpsf.npix_y, pxpsf.npix_x))
    # specter clips its patches' rows to the image's box, not to the CCD.
    rows = {} if xyrange is None else dict(row_min=xyrange[2], row_max=xyrange[3])
    frame = perfex.extract_frame(
        pixels,
        ivar,
        pxpsf,
        wavelength=grid,
        specmin=specmin,
        nspec=nspec,
        bundlesize=bundlesize,
        nsubbundles=nsubbundles,
        nwavestep=wavesize,
        regularize=regularize,
        psferr=psferr,
        pixpad_frac=pixpad_frac,
        wavepad_frac=wavepad_frac,
        decorrelation="noise" if ndecorr else "signal",
        geometry="specter",
        model_image=bool(full_output),
        progress=None if verbose else False,
        **rows,
    )
    specter_psf = psf if isinstance(psf, PSF) else psf_of(pxpsf)
    rdata = _specter_band(frame.resolution, resolution_ndiag(specter_psf, specmin, nspec, grid[2]))
    if not full_output:
        return frame.flux, frame.ivar, rdata
    model = frame.model
    if xyrange is not None:
        xmin, xmax, ymin, ymax = xyrange
        model = model[ymin:ymax, xmin:xmax]
    return dict(
        flux=frame.flux,
        ivar=frame.ivar,
        resolution_data=rdata,
        modelimage=model,
        pixmask_fraction=frame.pixmask_fraction,
        chi2pix=frame.chi2pix,
    )


def _image_on_ccd(image, imageivar, xyrange, ccd):
    """(pixels, ivar, xyrange) on the PSF's CCD (rows, columns): image and imageivar as given
    when they cover it, else placed in their box xyrange (an image smaller than the CCD without
    xyrange: its first rows and columns, as specter reads it), ivar 0 elsewhere."""
    image = np.asarray(image, dtype=np.float64)
    imageivar = np.asarray(imageivar, dtype=np.float64)
    if image.shape != imageivar.shape:
        raise perfex.RequestError(f"imageivar: shape {imageivar.shape} differs from image's {image.shape}")
    if xyrange is None and image.ndim == 2 and image.shape != ccd:
        if image.shape[0] <= ccd[0] and image.shape[1] <= ccd[1]:
            xyrange = (0, image.shape[1], 0, image.shape[0])
    if xyrange is None:
        return image, imageivar, None
    xmin, xmax, ymin, ymax = (int(v) for v in xyrange)
    if image.shape != (ymax - ymin, xmax - xmin) or xmin < 0 or ymin < 0 or xmax > ccd[1] or ymax > ccd[0]:
        raise perfex.RequestError(
            f"xyrange {tuple(xyrange)}: must be a box of the PSF's {ccd[0]} x {ccd[1]} CCD of the image's "
            f"shape {image.shape}"
        )
    box = (xmin, xmax, ymin, ymax)
    return _on_ccd(image, box, ccd, 0.0), _on_ccd(imageivar, box, ccd, 0.0), box


def _specter_band(band, ndiag):
    """The resolution band [nspec][2*ndiag+1][nwave] of specter's width ndiag from perfex's
    (cut, or zero-padded where specter's is wider)."""
    centre = (band.shape[1] - 1) // 2
    if ndiag <= centre:
        return band[:, centre - ndiag : centre + ndiag + 1, :]
    rdata = np.zeros((band.shape[0], 2 * ndiag + 1, band.shape[2]))
    rdata[:, ndiag - centre : ndiag + centre + 1, :] = band
    return rdata


# ---- one patch, solved densely (Bolton & Schlegel 2010; the spec's section 6) ---------------
# The library solves patches inside perfex.extract_frame and binds no single-patch solver: these
# are specter's small dense helpers, in numpy, for its tests and for studies of one patch.

# Eigenvalues not above this fraction of the largest are raised to it, as specter: the condition
# number stays within what 64-bit floating point resolves (spec 6.4).
_EIGEN_FLOOR = 10.0 * np.finfo(np.float64).eps


def eigen_compose(w, v, invert=False, sqr=False):
    """specter's eigen_compose: the symmetric matrix v diag(f(w)) v^T of eigenvalues w[n] and
    eigenvectors v[n][n] (as scipy.linalg.eigh returns them), f(w) = w, or sqrt(w) with sqr,
    inverted with invert. As specter, f(w) becomes the floor, 10 eps times f(max(w)), where the
    value compared with it is not above it: f(w) with invert, w itself without (so with sqr a w
    in (0, floor] takes the floor though its square root is larger); negative w always do."""
    w = np.asarray(w, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # sqrt of negatives: NaN, never kept
        values = np.sqrt(w) if sqr else w
        floor = _EIGEN_FLOOR * (np.sqrt(np.max(w)) if sqr else np.max(w))
        values = np.where((values if invert else w) > floor, values, floor)
        if invert:
            values = 1.0 / values
    return v @ (values[:, None] * v.T)


def resolution_from_icov(icov, decorr=None):
    """The resolution matrix R[n][n] of inverse covariance icov[n][n] (dense or scipy.sparse) and the inverse variance
    of R's reconvolved flux, (R, ivar[n]) (B&S eq. 11-16): Q = icov^(1/2) (decorrelated noise),
    or with decorr = the sizes of consecutive blocks (one per spectrum), Q = the block-diagonal
    of C_bb^(-1/2) with C = icov^(-1) (decorrelated signal); R = Q with rows scaled to sum 1,
    ivar = Q's row sums squared. As specter: icov symmetrised, C's blocks taken as they are
    (eigh reads their lower triangles), eigenvalues floored by eigen_compose."""
    import scipy.linalg

    icov = np.asarray(icov.toarray() if hasattr(icov, "toarray") else icov, dtype=np.float64)
    if icov.ndim != 2 or icov.shape[0] != icov.shape[1]:
        raise ValueError(f"resolution_from_icov: icov must be square, got shape {icov.shape}")
    w, v = scipy.linalg.eigh(0.5 * (icov + icov.T))
    if decorr is None:
        q = eigen_compose(w, v, sqr=True)
    else:
        sizes = np.asarray(decorr, dtype=int)
        if np.any(sizes <= 0) or sizes.sum() != icov.shape[0]:
            raise ValueError(f"resolution_from_icov: decorr {list(sizes)} must split the {icov.shape[0]} unknowns")
        cov = eigen_compose(w, v, invert=True)
        q = np.zeros_like(icov)
        for start, stop in zip(np.cumsum(sizes) - sizes, np.cumsum(sizes)):
            wb, vb = scipy.linalg.eigh(cov[start:stop, start:stop])
            q[start:stop, start:stop] = eigen_compose(wb, vb, invert=True, sqr=True)
    norm = q.sum(axis=1)
    return (1.0 / norm)[:, None] * q, norm**2


def _patch_box(image, ivar, psf, specmin, nspec, wavelengths, xyrange):
    """(xyrange, image and ivar in it): image and ivar are the CCD, or with xyrange the box."""
    image, ivar = np.asarray(image, dtype=np.float64), np.asarray(ivar, dtype=np.float64)
    if image.shape != ivar.shape:
        raise ValueError(f"ivar: shape {ivar.shape} differs from image's {image.shape}")
    if xyrange is None:
        xyrange = psf.xyrange((specmin, specmin + nspec), wavelengths)
        xmin, xmax, ymin, ymax = xyrange
        return xyrange, image[ymin:ymax, xmin:xmax], ivar[ymin:ymax, xmin:xmax]
    xmin, xmax, ymin, ymax = xyrange
    if image.shape != (ymax - ymin, xmax - xmin):
        raise ValueError(f"xyrange {tuple(xyrange)}: image shape {image.shape} is not the box's")
    return tuple(xyrange), image, ivar


def ex2d_patch(
    image, ivar, psf, specmin, nspec, wavelengths, xyrange=None, full_output=False, regularize=0.0, ndecorr=False,
    use_cache=None,
):  # fmt: skip
    """Extracts spectra specmin..specmin+nspec-1 at wavelengths[nwave] from one patch: image
    and ivar (0 = masked) are the CCD, or with xyrange (xmin, xmax, ymin, ymax) that box of it.
    Weighted least squares with the projection matrix A of psf, unknowns whose flux weight
    sum(ivar A) is under 1e-4 of the largest held to 0 by a pseudo-observation (strength
    regularize for the others), then decorrelated: per spectrum (signal) or, with ndecorr,
    across all (noise). use_cache is accepted and ignored.

    Returns (flux, ivar, R): the reconvolved flux[nspec][nwave] (photons per bin), its inverse
    variance (0 where no pixel saw the bin, or all pixels were masked) and the dense resolution
    matrix R[nspec*nwave][nspec*nwave]. With full_output a dict of those (flux, ivar, R) and
    xflux (the deconvolved flux), A (scipy.sparse), iCov (the inverse covariance) and
    options."""
    wavelengths = np.asarray(wavelengths, dtype=np.float64)
    nwave = len(wavelengths)
    xyrange, pixels, weights = _patch_box(image, ivar, psf, specmin, nspec, wavelengths, xyrange)
    a = psf.projection_matrix((specmin, specmin + nspec), wavelengths, xyrange)
    pixels, weights = pixels.ravel(), weights.ravel()
    weighted = a.T.multiply(weights).tocsr()  # A^T W
    icov = (weighted @ a).toarray()
    fluxweight = np.asarray(weighted.sum(axis=1)).ravel()
    all_masked = not np.any(weights > 0) or not np.any(icov)
    if all_masked:
        icov = 1e-8 * np.eye(nspec * nwave)
    else:
        floor = 1e-4 * fluxweight.max()
        strength = np.where(fluxweight < floor, floor - fluxweight, regularize)
        icov[np.diag_indices_from(icov)] += strength**2
    import scipy.linalg

    xflux = scipy.linalg.solve(icov, weighted @ pixels, assume_a="pos").reshape(nspec, nwave)
    r, fluxivar = resolution_from_icov(icov, decorr=None if ndecorr else [nwave] * nspec)
    flux = (r @ xflux.ravel()).reshape(nspec, nwave)
    fluxivar = fluxivar.reshape(nspec, nwave)
    fluxivar[np.isclose(fluxweight.reshape(nspec, nwave), 0.0) | all_masked] = 0.0
    if not full_output:
        return flux, fluxivar, r
    options = dict(
        specmin=specmin, nspec=nspec, wavelengths=wavelengths, xyrange=xyrange, regularize=regularize, ndecorr=ndecorr
    )
    return dict(flux=flux, ivar=fluxivar, R=r, xflux=xflux, A=a, iCov=icov, options=options)


def split_bundle(bundlesize, n):
    """Splits fibres 0..bundlesize-1 into n consecutive sub-bundles, as specter does: each of
    bundlesize // n fibres, the r remaining fibres one each to the last sub-bundle and to the
    first r - 1. Returns (subbundles, extract_subbundles), lists of index arrays, each extract_subbundles[i]
    being subbundles[i] with one more fibre on each side that has a neighbour."""
    if not 1 <= n <= bundlesize:
        raise ValueError(f"split_bundle: cannot split {bundlesize} fibres into {n} sub-bundles (1 to {bundlesize})")
    base, extra = divmod(bundlesize, n)
    sizes = np.full(n, base)
    if extra:
        sizes[-1] += 1
        sizes[: extra - 1] += 1
    subbundles = np.split(np.arange(bundlesize), np.cumsum(sizes)[:-1])
    extract = [np.arange(max(sub[0] - 1, 0), min(sub[-1] + 2, bundlesize)) for sub in subbundles]
    return subbundles, extract


def psfabsbias(p1, p2, wave, phot, ispec=0, readnoise=3.0):
    """The flux bias of spectrum ispec, photons phot[nwave] at wave[nwave], seen by p1 but
    extracted with p2 (noiseless image, pixel variance readnoise^2 + signal): (bias[nwave],
    R), bias = extracted reconvolved flux - R phot, R the resolution matrix of p1's patch."""
    wave = np.asarray(wave, dtype=np.float64)
    phot = np.asarray(phot, dtype=np.float64)
    spectrum = (ispec, ispec + 1)
    xyrange = p1.xyrange(spectrum, (wave[0], wave[-1]))
    image = p1.projection_matrix(spectrum, wave, xyrange) @ phot
    xmin, xmax, ymin, ymax = xyrange
    image = image.reshape(ymax - ymin, xmax - xmin)
    ivar = 1.0 / (readnoise**2 + image)
    truth = ex2d_patch(image, ivar, p1, ispec, 1, wave, xyrange=xyrange)[2]
    flux = ex2d_patch(image, ivar, p2, ispec, 1, wave, xyrange=xyrange)[0].ravel()
    return flux - truth @ phot, truth


def psfbias(p1, p2, wave, phot, ispec=0, readnoise=3.0):
    """psfabsbias relative to the reconvolved truth: bias[nwave] = extracted flux / (R phot) - 1."""
    absbias, r = psfabsbias(p1, p2, wave, phot, ispec=ispec, readnoise=readnoise)
    return absbias / (r @ np.asarray(phot, dtype=np.float64))


# ---- row-by-row extraction --------------------------------------------------------------------


def ex1d(img, mask, psf, readnoise=2.5, specrange=None, yrange=None, nspec_per_group=20, debug=False, model=False):
    """Row-by-row weighted extraction, as specter's ex1d: spectra specrange = (specmin, specmax)
    (default all) over CCD rows yrange = (ymin, ymax) (default all) of img, mask != 0 marking
    bad pixels, in groups of nspec_per_group spectra. In each row each spectrum's cross-section
    is a pixel-integrated Gaussian (its xsigma, centred on its trace at the row's wavelength,
    cut at 5 sigma) over the group's columns (from midway to the previous spectrum's trace to
    midway to the next's); the fluxes are the weighted least-squares fit, weighted first by
    readnoise^-2 and then by 1 / (readnoise^2 + the first fit's model). Returns (spectra[nspec]
    [ny], specivar[nspec][ny]: the diagonal of the fit's inverse covariance), and the model
    image (img's shape) with model. debug is ignored with a warning."""
    from .util import gausspix

    img = np.asarray(img, dtype=np.float64)
    mask = np.asarray(mask)
    if img.shape != mask.shape:
        raise ValueError(f"ex1d: mask shape {mask.shape} differs from img's {img.shape}")
    if debug:
        log.warning("ex1d: debug=True ignored (specter stops at each row; perfex.specter does not)")
    specmin, specmax = (0, psf.nspec) if specrange is None else specrange
    ymin, ymax = (0, psf.npix_y) if yrange is None else yrange
    rows = np.arange(ymin, ymax)
    spectra = np.zeros((specmax - specmin, ymax - ymin))
    specivar = np.zeros_like(spectra)
    imgmodel = np.zeros_like(img)
    for first in range(specmin, specmax, nspec_per_group):
        last = min(specmax, first + nspec_per_group)  # exclusive
        centres, sigmas = [], []
        for ispec in range(first, last):
            wave = psf.wavelength(ispec, y=rows)
            centres.append(psf.x(ispec, wave))
            sigmas.append(psf.xsigma(ispec, wave))
        for k, row in enumerate(rows):
            wave = psf.wavelength(first, y=row)
            xmin = 0 if first == 0 else int(0.5 * (psf.x(first - 1, wave) + psf.x(first, wave)))
            xmax = psf.npix_x if last >= psf.nspec else int(0.5 * (psf.x(last - 1, wave) + psf.x(last, wave)) + 1)
            profile = np.zeros((last - first, xmax - xmin))
            for i in range(last - first):
                x0, sigma = centres[i][k], sigmas[i][k]
                lo, hi = max(xmin, int(x0 - 5 * sigma)), min(xmax, int(x0 + 5 * sigma + 1))
                profile[i, lo - xmin : hi - xmin] = gausspix(np.arange(lo, hi), x0, sigma)
            good = mask[row, xmin:xmax] == 0
            pixels = img[row, xmin:xmax]
            weights = good / readnoise**2
            for _ in range(2):
                icov = (profile * weights) @ profile.T
                flux = np.linalg.solve(icov, profile @ (weights * pixels))
                fit = flux @ profile
                weights = good / (readnoise**2 + fit)
            spectra[first - specmin : last - specmin, k] = flux
            specivar[first - specmin : last - specmin, k] = np.diag(icov)
            imgmodel[row, xmin:xmax] = fit
    return (spectra, specivar, imgmodel) if model else (spectra, specivar)
