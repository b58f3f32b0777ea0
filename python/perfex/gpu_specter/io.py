"""gpu_specter.io's PSF reader and the conversion of its result to a perfex.Psf."""

import numpy as np

from perfex import psf_from_tables  # noqa: F401 (the conversion of read_psf's dict)


def read_psf(filename):
    """A dict of astropy Tables keyed XTRACE, YTRACE and PSF, as gpu_specter.io.read_psf
    returns: PSF is the PSF HDU's table (its header in .meta, PSFERR set to 0.01 when
    absent); XTRACE / YTRACE hold the coefficient image in column X / Y and WAVEMIN/WAVEMAX
    in .meta."""
    from astropy.io import fits
    from astropy.table import Table

    psfdata = {"PSF": Table.read(filename, "PSF")}
    psfdata["PSF"].meta.setdefault("PSFERR", 0.01)
    with fits.open(filename) as hdus:
        for extname in ("XTRACE", "YTRACE"):
            table = Table()
            table[extname[0]] = np.asarray(hdus[extname].data, dtype=np.float64)
            for key in ("WAVEMIN", "WAVEMAX"):
                table.meta[key] = hdus[extname].header[key]
            psfdata[extname] = table
    return psfdata
