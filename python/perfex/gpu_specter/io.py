"""gpu_specter.io's PSF reader and the conversion of its result to a perfex.Psf."""

import numpy as np

from .._core import Error, Psf


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


def psf_from_tables(psfdata, source=""):
    """A perfex.Psf from gpu_specter's PSF dict (read_psf above or gpu_specter.io.read_psf)."""
    try:
        table, xtrace, ytrace = psfdata["PSF"], psfdata["XTRACE"], psfdata["YTRACE"]
    except KeyError as e:
        raise Error(f"PSF dict: missing {e.args[0]}") from None
    meta = {str(k).upper(): v for k, v in table.meta.items()}

    def key(name, default=None):
        if name in meta:
            return meta[name]
        if default is None:
            raise Error(f"PSF dict: the PSF table's meta has no {name}")
        return default

    names = [n.decode() if isinstance(n, bytes) else str(n) for n in table["PARAM"]]
    fields = dict(
        source=source,
        fibermin=int(key("FIBERMIN", 0)),
        hsizex=int(key("HSIZEX")),
        hsizey=int(key("HSIZEY")),
        ghdegx=int(key("GHDEGX")),
        ghdegy=int(key("GHDEGY")),
        legdeg=int(key("LEGDEG")),
        npix_x=int(key("NPIX_X")),
        npix_y=int(key("NPIX_Y")),
        psferr=float(key("PSFERR", 0.01)),
        wavemin=float(key("WAVEMIN")),
        wavemax=float(key("WAVEMAX")),
        xtrace=np.asarray(xtrace["X"], dtype=np.float64),
        xtrace_wavemin=float(xtrace.meta["WAVEMIN"]),
        xtrace_wavemax=float(xtrace.meta["WAVEMAX"]),
        ytrace=np.asarray(ytrace["Y"], dtype=np.float64),
        ytrace_wavemin=float(ytrace.meta["WAVEMIN"]),
        ytrace_wavemax=float(ytrace.meta["WAVEMAX"]),
        param_names=[n.rstrip() for n in names],
        coeff=np.asarray(table["COEFF"], dtype=np.float64),
    )
    return Psf.from_dict(fields)
