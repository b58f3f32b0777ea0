"""specter.extract on perfex: ex2d, specter's frame extraction, run by perfex.extract_frame with
the library's specter geometry (specter's bundles, patch boxes and wavelength padding, and its
model image). specter.extract's names solved in numpy (one patch, row by row) are
perfex.specter.dense's, here too (docs/python.md).
"""

import logging

import numpy as np

import perfex

from .dense import (  # noqa: F401 (specter.extract's names: its ex2d and ex1d modules)
    eigen_compose,
    ex1d,
    ex2d_patch,
    psfabsbias,
    psfbias,
    resolution_from_icov,
    split_bundle,
)
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
