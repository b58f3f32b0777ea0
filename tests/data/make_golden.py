"""Cuts the golden data of tests/data from the project's reference data (../shared/data, see its
README): a small clean preproc image and the gpu_specter and specter extractions of it, and
gpu_specter's model image, each the part of the reference files that the small request gives.

    PYTHONPATH=build/python python3 tests/data/make_golden.py [SHARED_DATA] [OUT]

The small request: fibres 0-9 (bundle 0's first two sub-bundles: bundlesize 25, nsubbundles 2),
5760-6159.2 A (500 bins, ten 50-bin patches), DESI's other defaults, psferr 0.01. Its patches
are those of the reference extraction (fibres 0-49, 5760-6760 A, nsubbundles 5) that give
these bins, with the same solved fibres, wavelengths and pixel windows, so the reference
files' bins are its bins (perfex checks this itself: `check`). The image keeps only the pixels
those patches read (zero elsewhere); the model only the pixels no other patch of the reference
frame reaches (columns left of the windows of fibres 10-49, rows above those of bins 500-1250).
"""

import inspect
import os
import sys

import numpy as np
import perfex
import perfex.extraction
from astropy.io import fits

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PSF = os.path.join(REPO, "python", "perfex", "gpu_specter", "test", "data", "psf-r0-00051060.fits")
SMALL = dict(wavelength="5760,6159.2,0.8", specmin=0, nspec=10, bundlesize=25, nsubbundles=2, psferr=0.01)
NFIB, NWAVE = 10, 500
FRAME_HDUS = ("FLUX", "IVAR", "RESOLUTION", "CHI2PIX", "PIXMASK_FRACTION")


def box(psf, **request):
    """(row0, row1, col0, col1) of the pixels a request's patches read."""
    return perfex.extraction.check_job(psf, (psf.npix_y, psf.npix_x), backend="serial", **request).pixel_box()


def compressed(data, name, header=None):
    """A lossless tile-compressed image HDU (64 rows per tile: a reader of a few rows
    decompresses only theirs). astropy 5.3 renamed tile_size (FITS order) tile_shape."""
    tile = (min(64, data.shape[0]), data.shape[1])
    if "tile_shape" in inspect.signature(fits.CompImageHDU.__init__).parameters:
        size = dict(tile_shape=tile)
    else:
        size = dict(tile_size=tile[::-1])
    return fits.CompImageHDU(data, header=header, name=name, compression_type="GZIP_2", quantize_level=0.0, **size)


def cut_image(shared, psf, out):
    r0, r1, c0, c1 = box(psf, **SMALL)
    with fits.open(os.path.join(shared, "sim-r0-b0-1.fits.gz")) as hdus:
        header = hdus["IMAGE"].header.copy()
        image, ivar = np.zeros_like(hdus["IMAGE"].data), np.zeros_like(hdus["IVAR"].data)
        image[r0:r1, c0:c1] = hdus["IMAGE"].data[r0:r1, c0:c1]
        ivar[r0:r1, c0:c1] = hdus["IVAR"].data[r0:r1, c0:c1]
        mask = np.zeros_like(hdus["MASK"].data)
        fibermap = hdus["FIBERMAP"].data[:NFIB]
    for key in (
        "SIMPLE",
        "EXTEND",
        "BITPIX",
        "NAXIS",
        "NAXIS1",
        "NAXIS2",
        "CHECKSUM",
        "DATASUM",
        "RECTROW0",
        "RECTROW1",
        "RECTCOL0",
        "RECTCOL1",
        "RECTMARG",
    ):
        header.remove(key, ignore_missing=True)
    header["CUTFROM"] = ("sim-r0-b0-1.fits.gz", "see tests/data/README.md")
    header["CUTROW0"], header["CUTROW1"] = r0, r1
    header["CUTCOL0"], header["CUTCOL1"] = c0, c1
    header["NSPEC"] = NFIB
    fits.HDUList(
        [
            fits.PrimaryHDU(),
            compressed(image, "IMAGE", header),
            compressed(ivar, "IVAR"),
            compressed(mask, "MASK"),
            fits.BinTableHDU(fibermap, name="FIBERMAP"),
        ]
    ).writeto(out, overwrite=True, checksum=True)


def cut_frame(shared, peer, out):
    with fits.open(os.path.join(shared, f"ref-{peer}-sim-r0-b0-1.fits")) as hdus:
        header = hdus[0].header.copy()
        header["CUTFROM"] = (f"ref-{peer}-sim-r0-b0-1.fits", "fibres 0-9, bins 0-499")
        header["WAVEGRID"], header["NSPEC"], header["NWAVE"] = SMALL["wavelength"], NFIB, NWAVE
        header["NSUBBUND"] = SMALL["nsubbundles"]
        for key in ("WAVEMAX", "NPATCH", "WINROW0", "WINROW1", "WINCOL0", "WINCOL1", "CALL"):
            header.remove(key, ignore_missing=True)
        parts = [fits.PrimaryHDU(header=header)]
        for name in FRAME_HDUS:
            data = np.ascontiguousarray(hdus[name].data[:NFIB, ..., :NWAVE])
            parts.append(fits.CompImageHDU(data, name=name, compression_type="GZIP_2", quantize_level=0.0))
        parts.append(fits.ImageHDU(hdus["WAVELENGTH"].data[:NWAVE], name="WAVELENGTH"))
    fits.HDUList(parts).writeto(out, overwrite=True, checksum=True)


def cut_model(shared, psf, out):
    rows = box(psf, **dict(SMALL, wavelength="6160,6760,0.8"))[0]  # bins 500-1250's windows
    cols = box(psf, **dict(SMALL, specmin=10, nspec=40, nsubbundles=5))[2]  # fibres 10-49's
    with fits.open(os.path.join(shared, "ref-gpuspecter-sim-r0-b0-1-model.fits")) as hdus:
        hdu = next(h for h in hdus if h.data is not None)
        y0, x0 = int(hdu.header["Y0"]), int(hdu.header["X0"])
        cut = np.ascontiguousarray(hdu.data[: rows - y0, : cols - x0])
    header = fits.Header()
    header["CUTFROM"] = ("ref-gpuspecter-sim-r0-b0-1-model.fits", "the model of fibres 0-9 alone")
    header["Y0"], header["X0"] = (y0, "CCD row of the first row"), (x0, "CCD column of the first")
    fits.HDUList([fits.PrimaryHDU(), compressed(cut, "MODEL", header)]).writeto(out, overwrite=True, checksum=True)


def check(shared, psf, folder):
    """The cuts are what the small request extracts: perfex's frame of the small image equals
    perfex's frame of the whole reference image on those bins, to rounding."""
    small = perfex.extract_frame(
        perfex.read_preproc(os.path.join(folder, "preproc-r0-small.fits")), psf=psf, progress=False, **SMALL
    )
    whole = perfex.extract_frame(
        perfex.read_preproc(os.path.join(shared, "sim-r0-b0-1.fits.gz")),
        psf=psf,
        progress=False,
        wavelength="5760,6760,0.8",
        specmin=0,
        nspec=50,
        psferr=0.01,
    )
    for name in ("flux", "ivar", "resolution", "chi2pix", "pixmask_fraction"):
        a = getattr(small, name)
        b = getattr(whole, name)[:NFIB, ..., :NWAVE]
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max()), name
    print("check: the small request's bins are the reference frame's")


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data")
    folder = sys.argv[2] if len(sys.argv) > 2 else HERE
    perfex.initialize()
    psf = perfex.read_psf(PSF)
    cut_image(shared, psf, os.path.join(folder, "preproc-r0-small.fits"))
    for peer in ("gpuspecter", "specter"):
        cut_frame(shared, peer, os.path.join(folder, f"ref-{peer}-small.fits"))
    cut_model(shared, psf, os.path.join(folder, "ref-gpuspecter-small-model.fits"))
    with open(os.path.join(shared, "psf-eval-r0-00051060.fits"), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "psf-eval-r0-00051060.fits"), "wb") as f:
        f.write(data)
    check(shared, psf, folder)


if __name__ == "__main__":
    main()
