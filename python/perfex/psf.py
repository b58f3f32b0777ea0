"""PSFs: specex GaussHermite files, perfex.Psf, or gpu_specter's dict of astropy Tables."""

import os

import numpy as np

from . import _perfex
from ._perfex import Error, Psf


def read_psf(path):
    """Reads a PSF file of any format perfex reads.

    The format is chosen by the file's PSFTYPE and PSFVER as specter's load_psf chooses it:
    GAUSS-HERMITE (specex, PSFVER 1-3), GAUSS-HERMITE2 or SPOTGRID.

    Parameters
    ----------
    path : str or os.PathLike
        The PSF file.

    Returns
    -------
    Psf

    Raises
    ------
    Error
        A file that cannot be read, or of another PSFTYPE (named).
    """
    return _perfex.read_psf(os.fsencode(path))


def psf_from_tables(psfdata, source=""):
    """A perfex.Psf from gpu_specter's PSF dict.

    Parameters
    ----------
    psfdata : dict
        gpu_specter.io.read_psf's dict of astropy Tables keyed PSF, XTRACE and YTRACE, with
        their meta (HSIZEX, GHDEGX, LEGDEG, NPIX_X, WAVEMIN, ...).
    source : str, default ""
        The name the Psf gives as its source.

    Returns
    -------
    Psf

    Raises
    ------
    TypeError
        psfdata is not a dict.
    Error
        A table, column or meta key missing (named).
    """

    def need(mapping, key, what):
        try:
            return mapping[key]
        except (KeyError, TypeError, ValueError):
            raise Error(f"PSF dict: {what} has no {key}") from None

    if not isinstance(psfdata, dict):
        raise TypeError(f"psf: expected gpu_specter's PSF dict, got {type(psfdata).__name__}")
    table = need(psfdata, "PSF", "the dict")
    xtrace = need(psfdata, "XTRACE", "the dict")
    ytrace = need(psfdata, "YTRACE", "the dict")
    meta = {str(k).upper(): v for k, v in getattr(table, "meta", {}).items()}

    def key(name, default=None):
        if name in meta:
            return meta[name]
        if default is None:
            raise Error(f"PSF dict: the PSF table's meta has no {name}")
        return default

    names = [n.decode() if isinstance(n, bytes) else str(n) for n in need(table, "PARAM", "the PSF table")]
    fields = dict(
        source=source,
        origin="gpu_specter PSF dict",
        params_at="table 'PSF'",
        xtrace_at="table 'XTRACE'",
        ytrace_at="table 'YTRACE'",
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
        xtrace=np.asarray(need(xtrace, "X", "the XTRACE table"), dtype=np.float64),
        xtrace_wavemin=float(need(getattr(xtrace, "meta", {}), "WAVEMIN", "the XTRACE table's meta")),
        xtrace_wavemax=float(need(getattr(xtrace, "meta", {}), "WAVEMAX", "the XTRACE table's meta")),
        ytrace=np.asarray(need(ytrace, "Y", "the YTRACE table"), dtype=np.float64),
        ytrace_wavemin=float(need(getattr(ytrace, "meta", {}), "WAVEMIN", "the YTRACE table's meta")),
        ytrace_wavemax=float(need(getattr(ytrace, "meta", {}), "WAVEMAX", "the YTRACE table's meta")),
        param_names=[n.rstrip() for n in names],
        coeff=np.asarray(need(table, "COEFF", "the PSF table"), dtype=np.float64),
    )
    return Psf.from_dict(fields)


def as_psf(psf):
    """A perfex.Psf from a Psf, a file path, or gpu_specter's dict of astropy Tables.

    Parameters
    ----------
    psf : Psf, str, bytes, os.PathLike or dict
        A Psf (returned as it is), a PSF file (read_psf), or gpu_specter's PSF dict
        (psf_from_tables; perfex.gpu_specter.io.read_psf's dict gives its Psf).

    Returns
    -------
    Psf

    Raises
    ------
    TypeError
        Any other type.
    """
    if isinstance(psf, Psf):
        return psf
    if isinstance(psf, (str, bytes, os.PathLike)):
        return read_psf(os.fsdecode(psf))
    if isinstance(psf, dict):
        if isinstance(psf.get("perfex"), Psf):  # perfex.gpu_specter.io.read_psf of another format
            return psf["perfex"]
        return psf_from_tables(psf)
    raise TypeError(f"psf: expected a perfex.Psf, a PSF file name or gpu_specter's PSF dict, got {type(psf).__name__}")
