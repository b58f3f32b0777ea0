"""gpu_specter.io on perfex: read_psf, read_img, write_frame, write_model, read_frame and
native_endian with gpu_specter's arguments, returned dicts and files (astropy underneath where
gpu_specter uses fitsio), and the conversion of its PSF dict to a perfex.Psf.

Differences from gpu_specter, by design: headers read are astropy Headers (gpu_specter's are
fitsio FITSHDRs; both are dict-like, and the writers take either); table columns come back in
native byte order; a file that cannot be read (missing, a directory, not FITS, a damaged
header, an HDU missing) is an OSError with perfex's own message, naming the file and HDU
(fitsio's is an OSError naming the HDU): the readers open the file with perfex's checks
(perfex.frames.check_fits) before astropy reads it; the writers' temporary is a unique name
next to the output (gpu_specter's is FILENAME.tmp), removed when writing fails or is
interrupted, and by a signal that ends the process; a write the system refuses names the file
and the system's reason ("File too large").
"""

import contextlib
import io
import os
import re
import stat

import numpy as np

import perfex
from perfex import extras, psf_from_tables  # noqa: F401 (the conversion of read_psf's dict)

from .util import get_logger

# Keywords the writer derives from the data (fitsio's FITSHDR.clean drops the same), plus the
# scaling keywords: the arrays written are never scaled.
_STRUCTURAL = re.compile(
    r"(SIMPLE|EXTEND|XTENSION|BITPIX|NAXIS\d*|PCOUNT|GCOUNT|THEAP|EXTNAME|CHECKSUM|DATASUM"
    r"|BSCALE|BZERO|BLANK|ZIMAGE|ZSIMPLE|ZTENSION|ZBITPIX|ZNAXIS\d*|ZTILE\d+|ZNAME\d+|ZVAL\d+"
    r"|ZCMPTYPE|ZQUANTIZ|ZDITHER0|ZPCOUNT|ZGCOUNT|ZEXTEND)$"
)
_TABLE = re.compile(
    r"(TFIELDS|BUNIT|(TFORM|TTYPE|TDIM|TUNIT|TSCAL|TZERO|TNULL|TDISP|TDMIN|TDMAX"
    r"|TDESC|TROTA|TRPIX|TRVAL|TDELT|TCUNI)\d+)$"
)


def _astropy(module):
    """astropy's `module`: the readers and writers use it where gpu_specter uses fitsio (a
    MissingExtra naming perfex[gpu_specter] when astropy is not installed)."""
    return extras.require(module, "reading and writing files with perfex.gpu_specter", "gpu_specter")


def native_endian(data):
    """data itself when in native byte order, else a byte-swapped copy viewed as native (as
    gpu_specter.io.native_endian)."""
    if data.dtype.isnative:
        return data
    data = data.byteswap()
    return data.view(data.dtype.newbyteorder())


def _check_fits(filename, *extnames, fd=-1):
    """perfex's checks of a FITS file and its HDUs (the library's, as every perfex reader makes
    them), as an OSError with the library's message; file objects are left to astropy. fd: the
    file open as this descriptor (_checked)."""
    if not isinstance(filename, (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(filename)
    try:
        perfex.frames.check_fits(path, extnames, fd)
    except perfex.Error as e:
        raise (OSError if os.path.lexists(path) else FileNotFoundError)(str(e)) from None


@contextlib.contextmanager
def _checked(filename, *extnames):
    """What astropy opens for filename, after _check_fits: a regular file opened once, that the
    checks and astropy both read (whatever a writer renames over the name meanwhile, each
    reading by name could meet another file, or none); else the name, or a file object as
    given."""
    fd = -1
    if isinstance(filename, (str, bytes, os.PathLike)):
        try:  # O_NONBLOCK: a FIFO is refused by the checks, never waited on
            fd = os.open(filename, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            pass  # missing, unreadable: the checks' messages name it
    if fd >= 0 and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        fd = -1
    with os.fdopen(fd, "rb") if fd >= 0 else contextlib.nullcontext(filename) as f:
        _check_fits(filename, *extnames, fd=fd)
        yield f


def _read_checked(filename):
    """perfex.read_psf of a PSF file: every check of the library (HDUs, keywords, values, a
    truncated HDU and by how much), an OSError with its message naming the file and HDU."""
    try:
        return perfex.read_psf(os.fsdecode(filename))
    except perfex.Error as e:
        raise OSError(str(e)) from None


def _hdu(hdus, filename, extname):
    try:
        return hdus[extname]
    except KeyError:
        raise OSError(f"{filename}: extension not found: {extname}") from None


def _table_array(hdu):
    """A binary table HDU's rows as a numpy structured array (values scaled, as fitsio reads)."""
    Table = _astropy("astropy.table").Table

    if hdu.data is None:
        return None
    return np.ma.getdata(Table(hdu.data).as_array())


def read_psf(filename):
    """A dict of astropy Tables keyed XTRACE, YTRACE and PSF, as gpu_specter.io.read_psf
    returns: PSF is the PSF HDU's table (its header in .meta, PSFERR set to 0.01 when
    absent); XTRACE / YTRACE hold the coefficient image in column X / Y and WAVEMIN/WAVEMAX
    in .meta.

    The other formats perfex reads (GAUSS-HERMITE PSFVER 1-2, GAUSS-HERMITE2, SPOTGRID), which
    gpu_specter does not: a dict with PSF, an empty Table whose .meta has PSFTYPE, WAVEMIN,
    WAVEMAX, PSFERR, NPIX_X and NPIX_Y (what desispec reads of it), and "perfex", the
    perfex.Psf that core.extract_frame extracts with."""
    fits = _astropy("astropy.io.fits")
    Table = _astropy("astropy.table").Table

    _check_fits(filename)
    if not _specex_layout(filename):
        psf = _read_checked(filename)
        table = Table()
        table.meta.update(
            PSFTYPE=psf.psftype,
            WAVEMIN=psf.wavemin,
            WAVEMAX=psf.wavemax,
            PSFERR=psf.psferr,
            NPIX_X=psf.npix_x,
            NPIX_Y=psf.npix_y,
        )
        return {"PSF": table, "perfex": psf}

    _check_fits(filename, "PSF", "XTRACE", "YTRACE")
    _read_checked(filename)  # a truncated or damaged HDU named before astropy reads it
    psfdata = {"PSF": Table.read(filename, "PSF")}
    if "PSFERR" not in psfdata["PSF"].meta:
        get_logger().debug("PSFERR not found in PSF meta. Setting to 0.01")
        psfdata["PSF"].meta["PSFERR"] = 0.01
    with fits.open(filename) as hdus:
        for extname in ("XTRACE", "YTRACE"):
            hdu = _hdu(hdus, filename, extname)
            table = Table()
            table[extname[0]] = native_endian(np.asarray(hdu.data))
            for key in ("WAVEMIN", "WAVEMAX"):
                if key not in hdu.header:
                    raise KeyError(f"{filename}: HDU {extname} has no keyword {key}")
                table.meta[key] = hdu.header[key]
            psfdata[extname] = table
    return psfdata


def _specex_layout(filename):
    """Whether a PSF file is specex's GAUSS-HERMITE PSFVER 3 layout (a PSF HDU), gpu_specter's;
    a GAUSS-HERMITE file with neither a PSF HDU nor an older PSFVER counts as one, so that its
    missing PSF HDU is what the error names."""
    import warnings

    fits = _astropy("astropy.io.fits")

    # Only the primary header and the HDU names: a truncated file is named by _read_checked.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(filename) as hdus:
            header = hdus[0].header
            if str(header.get("PSFTYPE", "GAUSS-HERMITE")).strip() != "GAUSS-HERMITE":
                return False
            try:
                older = int(float(str(header.get("PSFVER", 3)).strip())) < 3
            except ValueError:
                older = False
            return "PSF" in hdus or not older


def read_img(filename):
    """A preproc image as gpu_specter.io.read_img returns it: dict image and ivar (native
    float64; ivar 0 wherever MASK != 0), imagehdr (the IMAGE header), mask (the MASK HDU's
    array), fibermap (the FIBERMAP rows) and fibermaphdr. HDUs IMAGE, IVAR, MASK and FIBERMAP
    are required."""
    fits = _astropy("astropy.io.fits")

    with _checked(filename, "IMAGE", "IVAR", "MASK", "FIBERMAP") as f, fits.open(f, memmap=False) as hdus:
        image = _hdu(hdus, filename, "IMAGE")
        ivar = _hdu(hdus, filename, "IVAR")
        mask = _hdu(hdus, filename, "MASK")
        fibermap = _hdu(hdus, filename, "FIBERMAP")
        imgdata = dict(
            image=native_endian(np.asarray(image.data).astype("f8")),
            ivar=native_endian(np.asarray(ivar.data).astype("f8")),
            imagehdr=image.header.copy(),
            mask=native_endian(np.array(mask.data)),
        )
        if imgdata["mask"].shape != imgdata["ivar"].shape:
            raise ValueError(f"{filename}: MASK has shape {imgdata['mask'].shape}, IVAR {imgdata['ivar'].shape}")
        imgdata["ivar"][imgdata["mask"] != 0] = 0.0
        imgdata["fibermap"] = _table_array(fibermap)
        imgdata["fibermaphdr"] = fibermap.header.copy()
    return imgdata


def _header(cards, table=False):
    """An astropy Header of the cards of an astropy Header, a fitsio FITSHDR, a dict or None,
    without the keywords the writer derives from the data."""
    fits = _astropy("astropy.io.fits")

    if cards is None:
        records = []
    elif isinstance(cards, fits.Header):
        records = [(card.keyword, card.value, card.comment) for card in cards.cards]
    elif hasattr(cards, "records"):  # fitsio.FITSHDR
        records = [(r["name"], r.get("value"), r.get("comment", "")) for r in cards.records()]
    else:
        records = [(key, value, "") for key, value in dict(cards).items()]
    header = fits.Header()
    for key, value, comment in records:
        key = str(key).upper()
        if _STRUCTURAL.match(key) or (table and _TABLE.match(key)):
            continue
        header.append((key, value, comment), bottom=True)  # bottom: the cards keep their order
    return header


class _Stream(io.RawIOBase):
    """A file as astropy sees a stream: it writes arrays through write(), where a short write
    raises the system's reason (EFBIG "File too large", ENOSPC); on a real file it calls
    numpy's tofile, whose error says only "N requested and M written"."""

    def __init__(self, f):
        super().__init__()
        self._f, self.name = f, f.name

    def writable(self):
        return True

    def write(self, data):
        return self._f.write(data)


def _write_atomically(filename, hdus, outputs=None):
    """Writes the HDUs to a temporary file next to filename, then renames it over filename:
    a reader sees the old file or the complete new one; the temporary is removed on any
    failure, interruption or signal (perfex.frames.atomic_output). outputs: a
    perfex.frames.OutputSet that renames it together with the job's other outputs instead. A
    failed write is an OSError naming the file and the system's reason."""
    fits = _astropy("astropy.io.fits")

    try:
        with perfex.frames.atomic_output(filename) if outputs is None else outputs.open(filename) as f:
            fits.HDUList(hdus).writeto(_Stream(f), checksum=True)
    except OSError as e:
        # astropy re-raises the system's error without its errno: the first one that has it.
        cause, seen = e, e
        while seen is not None and not cause.errno:
            seen = seen.__cause__ or seen.__context__
            cause = seen if isinstance(seen, OSError) and seen.errno else cause
        message = f"cannot write {os.fspath(filename)}: {cause.strerror or cause}"
        raise (OSError(cause.errno, message) if cause.errno else OSError(message)) from e


def _image(data, extname, header=None, primary=False):
    fits = _astropy("astropy.io.fits")

    kind = fits.PrimaryHDU if primary else fits.ImageHDU
    hdu = kind(data=None if data is None else np.asarray(data), header=_header(header))
    hdu.header["EXTNAME"] = extname
    return hdu


def _item(frame, key, dtype=None):
    """frame[key] (a KeyError naming the key when absent), as an array of dtype when given."""
    if key not in frame:
        raise KeyError(f"frame: missing '{key}'")
    value = frame[key]
    if dtype is None or value is None:
        return value
    return np.asarray(value).astype(dtype)


def write_frame(filename, frame, dtype=np.float32):
    """Writes a frame dict (gpu_specter.core.extract_frame's, plus imagehdr, fibermap and
    fibermaphdr) as gpu_specter.io.write_frame: HDUs FLUX (primary, with imagehdr's cards),
    IVAR, MASK, WAVELENGTH, RESOLUTION, FIBERMAP (a table with fibermaphdr's cards, empty when
    fibermap is None) and CHI2PIX; FLUX, IVAR, RESOLUTION and CHI2PIX as dtype, MASK and
    WAVELENGTH as given. Atomic: written to a temporary, then renamed."""
    _write_atomically(filename, _frame_hdus(frame, dtype))


def _frame_hdus(frame, dtype=np.float32):
    """write_frame's HDUs of a frame dict."""
    fits = _astropy("astropy.io.fits")

    fibermap = _item(frame, "fibermap")
    if fibermap is None:
        table = _image(None, "FIBERMAP", _item(frame, "fibermaphdr"))
    else:
        table = fits.BinTableHDU(data=fibermap, header=_header(_item(frame, "fibermaphdr"), table=True))
        table.header["EXTNAME"] = "FIBERMAP"
    return [
        _with_dependencies(_image(_item(frame, "specflux", dtype), "FLUX", _item(frame, "imagehdr"), primary=True)),
        _image(_item(frame, "specivar", dtype), "IVAR"),
        _image(_item(frame, "specmask"), "MASK"),
        _image(_item(frame, "wave"), "WAVELENGTH"),
        _image(_item(frame, "Rdiags", dtype), "RESOLUTION"),
        table,
        _image(_item(frame, "chi2pix", dtype), "CHI2PIX"),
    ]


def write_model(filename, frame):
    """Writes frame['modelimage'] as the primary HDU MODEL with frame['imagehdr']'s cards (as
    gpu_specter.io.write_model). Atomic: written to a temporary, then renamed."""
    _write_atomically(filename, _model_hdus(frame))


def _model_hdus(frame):
    return [_with_dependencies(_image(_item(frame, "modelimage"), "MODEL", _item(frame, "imagehdr"), primary=True))]


def _with_dependencies(hdu):
    """hdu with the DEPNAMnn/DEPVERnn cards of perfex's writers (desiutil.depend.setdep's
    layout: a name already in imagehdr's cards keeps its nn, else the first free nn), the
    drop-in named too. The frame dict does not say which backend extracted it."""
    header = hdu.header
    for name, value in [*perfex.frames.dependencies(), ("perfex.gpu_specter", perfex.__version__)]:
        for i in range(100):
            namekey, verkey = f"DEPNAM{i:02d}", f"DEPVER{i:02d}"
            if namekey not in header or header[namekey] == name:
                header[namekey] = name
                header[verkey] = value
                break
    return hdu


def write_together(frame, output=None, model=None):
    """write_frame(output, frame) and write_model(model, frame) as outputs that change together:
    both are renamed into place once both are written (a full disk while writing the model
    leaves the old frame and model); None skips one. spex writes through it."""
    with perfex.frames.outputs_together() as outputs:
        if output is not None:
            _write_atomically(output, _frame_hdus(frame), outputs)
        if model is not None:
            _write_atomically(model, _model_hdus(frame), outputs)


def read_frame(filename):
    """A frame file's arrays as gpu_specter.io.read_frame returns them: dict flux, ivar, wave,
    mask, resolution, fibermap (the FIBERMAP rows) and chi2pix, in the file's dtypes (native
    byte order)."""
    fits = _astropy("astropy.io.fits")

    extnames = ("FLUX", "IVAR", "WAVELENGTH", "MASK", "RESOLUTION", "FIBERMAP", "CHI2PIX")
    with _checked(filename, *extnames) as f, fits.open(f, memmap=False) as hdus:

        def image(extname):
            data = _hdu(hdus, filename, extname).data
            return None if data is None else native_endian(np.array(data))

        fibermap = _hdu(hdus, filename, "FIBERMAP")
        return dict(
            flux=image("FLUX"),
            ivar=image("IVAR"),
            wave=image("WAVELENGTH"),
            mask=image("MASK"),
            resolution=image("RESOLUTION"),
            fibermap=_table_array(fibermap) if isinstance(fibermap, fits.BinTableHDU) else None,
            chi2pix=image("CHI2PIX"),
        )
