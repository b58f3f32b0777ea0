"""specter's extractions that the library does not bind, in numpy: one patch solved densely
(ex2d_patch, with specter's helpers around it: eigen_compose, resolution_from_icov, split_bundle,
psfbias, psfabsbias) and the row-by-row extraction (ex1d), for specter's tests and for studies
of one patch. perfex.specter.extract, which stands for specter.extract, holds them too.
"""

import logging

import numpy as np

log = logging.getLogger("perfex")


# ---- one patch, solved densely (Bolton & Schlegel 2010; the spec's section 6) ---------------
# The library solves patches inside perfex.extract_frame and binds no single-patch solver.

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
