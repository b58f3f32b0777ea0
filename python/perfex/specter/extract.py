"""specter.extract on perfex: ex2d, specter's frame extraction, run by perfex.extract_frame.

The patches are perfex's (gpu_specter's geometry: each sub-bundle's wavelength steps padded by
`wavepad` bins and its pixel box by pixpad_frac of a spot), not specter's (whose padding in
wavelength follows the trace's dispersion at each patch): the two agree as gpu_specter and
specter do, to a few hundredths of sigma at patch boundaries (docs/python.md).
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
    than the CCD without xyrange: its first rows and columns, as in specter). regularize,
    bundlesize, nsubbundles, wavesize (wavelength bins per patch), psferr (None: the PSF's),
    pixpad_frac and wavepad_frac are perfex.extract_frame's regularize, bundlesize,
    nsubbundles, nwavestep, psferr, pixpad_frac and wavepad_frac; ndecorr=True decorrelates the
    noise of all the fibres of a patch together (decorrelation='noise'). verbose logs progress
    to the 'perfex' logger. debug (specter opens an IPython shell) is ignored with a warning.

    Returns (flux, ivar, resolution_data): flux per Angstrom [nspec][nwave], its inverse
    variance, and the resolution band [nspec][2*ndiag+1][nwave] with specter's ndiag (9 sigma
    of the widest spot in bins, at most half a spot). With full_output, the dict of those
    (flux, ivar, resolution_data) and modelimage (image's shape), pixmask_fraction and chi2pix.
    """
    pxpsf = _perfex_psf(psf)
    wavelengths = np.asarray(wavelengths, dtype=np.float64)
    grid = perfex._perfex.grid_of_values(wavelengths, "wavelengths")
    image = np.asarray(image, dtype=np.float64)
    imageivar = np.asarray(imageivar, dtype=np.float64)
    if image.shape != imageivar.shape:
        raise perfex.RequestError(f"imageivar: shape {imageivar.shape} differs from image's {image.shape}")
    ccd = (pxpsf.npix_y, pxpsf.npix_x)
    if debug:
        log.warning("ex2d: debug=True ignored (specter opens an IPython shell; perfex.specter does not)")
    if (
        xyrange is None
        and image.ndim == 2
        and image.shape != ccd
        and image.shape[0] <= ccd[0]
        and image.shape[1] <= ccd[1]
    ):
        # specter reads a smaller image as the CCD's first rows and columns.
        xyrange = (0, image.shape[1], 0, image.shape[0])
    if xyrange is not None:
        xmin, xmax, ymin, ymax = (int(v) for v in xyrange)
        if image.shape != (ymax - ymin, xmax - xmin) or xmin < 0 or ymin < 0 or xmax > ccd[1] or ymax > ccd[0]:
            raise perfex.RequestError(
                f"xyrange {tuple(xyrange)}: must be a box of the PSF's {ccd[0]} x {ccd[1]} CCD of the image's "
                f"shape {image.shape}"
            )
        pixels, ivar = _on_ccd(image, xyrange, ccd, 0.0), _on_ccd(imageivar, xyrange, ccd, 0.0)
    else:
        pixels, ivar = image, imageivar
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
        model_image=bool(full_output),
        progress=None if verbose else False,
    )
    specter_psf = psf if isinstance(psf, PSF) else psf_of(pxpsf)
    ndiag = resolution_ndiag(specter_psf, specmin, nspec, grid[2])
    band = frame.resolution
    centre = (band.shape[1] - 1) // 2
    if ndiag <= centre:
        rdata = band[:, centre - ndiag : centre + ndiag + 1, :]
    else:
        rdata = np.zeros((band.shape[0], 2 * ndiag + 1, band.shape[2]))
        rdata[:, ndiag - centre : ndiag + centre + 1, :] = band
    if not full_output:
        return frame.flux, frame.ivar, rdata
    model = frame.model
    if xyrange is not None:
        model = model[ymin:ymax, xmin:xmax]
    return dict(
        flux=frame.flux,
        ivar=frame.ivar,
        resolution_data=rdata,
        modelimage=model,
        pixmask_fraction=frame.pixmask_fraction,
        chi2pix=frame.chi2pix,
    )
