"""The numpy API: images, PSFs, options, frames and the single-process extraction."""

import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from . import _perfex
from ._perfex import Error, Psf
from ._runtime import ProgressLog, check_backend, default_backend, initialize

log = logging.getLogger("perfex")

_OPTION_DEFAULTS = _perfex.options_to_dict(_perfex.ExtractionOptions())


def option_defaults():
    """The extraction options by name with their (DESI / gpu_specter) defaults."""
    return dict(_OPTION_DEFAULTS)


def parse_wavelength(wavelength):
    """(wmin, wmax, dw) from "wmin,wmax,dw" or a 3-sequence."""
    if isinstance(wavelength, str):
        parts = wavelength.split(",")
    else:
        try:
            parts = list(wavelength)
        except TypeError:
            parts = []
    try:
        if len(parts) != 3:
            raise ValueError
        return tuple(float(p) for p in parts)
    except ValueError:
        raise Error(f"wavelength: expected 'wmin,wmax,dw', got {wavelength!r}") from None


def make_options(**options):
    """The complete options dict from keyword options: the C++ ExtractionOptions names
    (option_defaults()), plus wavelength="wmin,wmax,dw" (or a tuple) and psferr=None (the
    PSF's PSFERR). An unknown name is a TypeError."""
    opts = option_defaults()
    wavelength = options.pop("wavelength", None)
    if wavelength is not None:
        opts["wmin"], opts["wmax"], opts["dw"] = parse_wavelength(wavelength)
    unknown = sorted(set(options) - set(opts))
    if unknown:
        raise TypeError(
            f"unknown extraction option(s) {', '.join(unknown)}; known: wavelength, "
            + ", ".join(sorted(opts))
        )
    opts.update(options)
    if opts["psferr"] is None:
        opts["psferr"] = -1.0
    return opts


def cxx_options(opts):
    """The validated C++ ExtractionOptions of an options dict (perfex.Error names the bad one)."""
    o = _perfex.options_from_dict(opts)
    o.validate()
    return o


def bundle_ranges(opts, nfib):
    """[lo, hi) fibre range of each bundle the options extract: the unit of MPI work."""
    return [tuple(r) for r in _perfex.bundle_ranges(cxx_options(opts), nfib)]


# ---- inputs -------------------------------------------------------------------------------


def _as_float64(array, name):
    """(array, converted): the array itself when C-contiguous, aligned, native float64; else
    one explicit converted copy."""
    if (
        isinstance(array, np.ndarray)
        and array.dtype == np.float64
        and array.dtype.isnative
        and array.flags.c_contiguous
        and array.flags.aligned
    ):
        return array, False
    if array is None:
        raise TypeError(f"{name}: an array is required")
    try:
        a = np.asarray(array)
    except Exception as e:  # numpy refuses ragged nesting and the like
        raise TypeError(f"{name}: not an array ({e})") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise Error(f"image: {name} must be a 2-D [nrows][ncols] array, got shape {a.shape}")
    log.debug("%s: converting %s %s array to C-contiguous float64 (one copy)", name,
              "C-contiguous" if a.flags.c_contiguous else "non-contiguous", a.dtype)
    return np.ascontiguousarray(a, dtype=np.float64), True


class Image:
    """A CCD image (pixels and inverse variances, ivar 0 = masked) ready for extraction.

    C-contiguous native float64 arrays are used in place (no copy) when every value is finite
    and every ivar >= 0; other dtypes and layouts (e.g. the float32 of preproc files) are
    converted once here; NaN/Inf pixels are masked (counted in nonfinite_pixels), a negative
    ivar is a perfex.Error. Build one to extract the same image several times.
    """

    def __init__(self, pixels, ivar):
        initialize()
        p, converted_p = _as_float64(pixels, "pixels")
        w, converted_w = _as_float64(ivar, "ivar")
        self.converted = converted_p or converted_w
        self._handle = _perfex.HostImage(p, w)

    @property
    def shape(self):
        return tuple(self._handle.shape)

    @property
    def pixels(self):
        """The float64 pixel array the image was built from (the caller's unless converted)."""
        return self._handle.pixels

    @property
    def ivar(self):
        return self._handle.ivar

    @property
    def nonfinite_pixels(self):
        return self._handle.nonfinite_pixels

    @property
    def in_place(self):
        """True when the extraction reads the caller's own arrays (no copy at all)."""
        return self._handle.in_place and not self.converted

    @property
    def data_pointer(self):
        """Address of the pixel values the extraction reads."""
        return self._handle.pixels_address

    def __repr__(self):
        how = "in place" if self.in_place else "copied"
        return f"<perfex.Image {self.shape[0]}x{self.shape[1]}, {how}>"


@dataclass(eq=False)
class PreprocImage:
    """A DESI preproc image as read by read_preproc (ivar 0 where MASK & mask_bits)."""

    path: str
    pixels: np.ndarray
    ivar: np.ndarray
    masked_pixels: int = 0
    nonfinite_pixels: int = 0
    has_fibermap: bool = False


def read_preproc(path, mask_bits=0x2FF):
    """Reads a preproc image (HDUs IMAGE, IVAR, MASK): float64 arrays, ivar := 0 where
    (MASK & mask_bits) != 0 (DESI's rule: bits 0-7 and 9), NaN/Inf pixels masked."""
    return PreprocImage(**_perfex.read_preproc(os.fspath(path), mask_bits))


def read_psf(path):
    """Reads a specex GaussHermite PSF file (PSFVER 3)."""
    return _perfex.read_psf(os.fspath(path))


def as_psf(psf):
    """A perfex.Psf from a Psf, a file path, or gpu_specter's dict of astropy Tables."""
    if isinstance(psf, Psf):
        return psf
    if isinstance(psf, (str, bytes, os.PathLike)):
        return read_psf(os.fsdecode(psf))
    if isinstance(psf, dict) and "PSF" in psf:
        from .gpu_specter.io import psf_from_tables

        return psf_from_tables(psf)
    raise TypeError(
        f"psf: expected a perfex.Psf, a PSF file name or gpu_specter's PSF dict, got {type(psf).__name__}"
    )


def as_image(image, ivar=None):
    """An Image from an Image, a PreprocImage, or (pixels, ivar) arrays."""
    if isinstance(image, (Image, PreprocImage)):
        if ivar is not None:
            raise TypeError("ivar must not be given with a perfex.Image or PreprocImage")
        return image if isinstance(image, Image) else Image(image.pixels, image.ivar)
    if ivar is None:
        raise TypeError("ivar: required with a pixel array")
    return Image(image, ivar)


# ---- frames -------------------------------------------------------------------------------


@dataclass(eq=False)
class Frame:
    """An extracted frame in DESI units: flux per Angstrom, its ivar, the desispec mask, the
    resolution band in DIA layout (resolution[f][d][k] = R_f[k - ndiag + d][k]), chi2pix,
    pixmask_fraction, the model image (when requested) and the run's statistics."""

    flux: np.ndarray  # [nspec][nwave]
    ivar: np.ndarray  # [nspec][nwave]
    mask: np.ndarray  # [nspec][nwave] uint32 desispec specmask bits
    wave: np.ndarray  # [nwave]
    resolution: np.ndarray  # [nspec][2*ndiag+1][nwave]
    chi2pix: np.ndarray  # [nspec][nwave]
    pixmask_fraction: np.ndarray  # [nspec][nwave]
    specmin: int = 0
    model: Optional[np.ndarray] = None  # [npix_y][npix_x]
    options: dict = field(default_factory=option_defaults)
    npatches: int = 0
    failed_patches: int = 0
    # (fibre0, nfibres, wave0, nwaves) blocks of bins, frame-relative, whose patch failed
    failed_bins: List[tuple] = field(default_factory=list)
    nonfinite_pixels: int = 0
    seconds: float = 0.0
    linalg_flops: float = 0.0
    max_band: int = 0
    warnings: List[str] = field(default_factory=list)

    @property
    def nspec(self):
        return self.flux.shape[0]

    @property
    def nwave(self):
        return self.flux.shape[1]

    @property
    def ndiag(self):
        return (self.resolution.shape[1] - 1) // 2

    @property
    def fibers(self):
        return np.arange(self.specmin, self.specmin + self.nspec)

    def __repr__(self):
        return (
            f"<perfex.Frame fibres {self.specmin}-{self.specmin + self.nspec - 1} x "
            f"{self.nwave} wavelengths {self.wave[0]:.1f}-{self.wave[-1]:.1f} A>"
        )


def write_frame(path, frame, image_path=None, psf_path=None):
    """Writes the desispec frame file (FLUX, IVAR, MASK, WAVELENGTH, RESOLUTION, FIBERMAP,
    CHI2PIX, PIXMASK_FRACTION); the FIBERMAP and header cards come from image_path when that
    preproc file exists. Written to a temporary name and renamed."""
    for warning in _perfex.write_frame(os.fspath(path), frame, os.fspath(image_path or ""),
                                       os.fspath(psf_path or "")):
        log.warning("%s: %s", os.fspath(path), warning)


def write_model(path, frame, image_path=None, psf_path=None):
    """Writes the frame's model image (extract with model_image=True)."""
    _perfex.write_model(os.fspath(path), frame, os.fspath(image_path or ""), os.fspath(psf_path or ""))


def read_frame(path):
    """Reads a frame file (perfex's, desispec's or gpu_specter's)."""
    return Frame(**_perfex.read_frame(os.fspath(path)))


def frame_mask(chi2pix, pixmask_fraction, ivar, failed_bins=()):
    """desispec's spectrum mask of a whole frame: SOMEBADPIX, ALLBADPIX, BAD2DFIT, NODATA
    where ivar is 0, and BAD2DFIT | NODATA on failed_bins ((fibre0, nfibres, wave0, nwaves)
    blocks of bins whose patch could not be solved)."""
    return _perfex.frame_mask(chi2pix, pixmask_fraction, ivar, list(failed_bins))


# ---- extraction ---------------------------------------------------------------------------


def progress_callback(progress, label="extract"):
    """The C++ progress callback for progress=None (log), False (none) or a callable."""
    if progress is None:
        return ProgressLog(label)
    if progress is False:
        return None
    if not callable(progress):
        raise TypeError("progress must be None (log), False or a callable(done, total)")
    return progress


def extract_frame(image, ivar=None, psf=None, *, comm=None, backend=None, threads=None,
                  progress=None, **options):
    """Extracts the spectra of a CCD image with a GaussHermite PSF; returns a Frame.

    image, ivar: 2-D arrays (ivar 0 = masked pixel; apply the preproc MASK first, as
    read_preproc does), or a perfex.Image / PreprocImage alone. psf: a perfex.Psf, a PSF file
    name or gpu_specter's PSF dict. options: by name with the DESI defaults (option_defaults();
    wavelength="wmin,wmax,dw", specmin, nspec, bundlesize, nsubbundles, nwavestep, psferr,
    regularize, decorrelation, model_image, ...). backend: 'openmp', 'serial' or 'cuda' (default
    the first of backends()); threads: host threads of the process (first call only).
    progress: None logs to the 'perfex' logger, False is silent, or a callable(done, total).
    comm: an mpi4py communicator: bundles are dealt over its ranks (perfex.mpi.extract_frame);
    rank 0 returns the frame, the others None.
    """
    if comm is not None and comm.size > 1:
        from . import mpi

        return mpi.extract_frame(comm, image, ivar, psf, backend=backend, threads=threads,
                                 progress=progress, **options)
    initialize(threads)
    psf = as_psf(psf)
    opts = make_options(**options)
    cxx = cxx_options(opts)
    img = as_image(image, ivar)
    backend = check_backend(backend or default_backend())
    result = _perfex.extract_frame(img._handle, psf, cxx, backend, progress_callback(progress))
    return Frame(**result)
