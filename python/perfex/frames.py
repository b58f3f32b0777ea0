"""Extracted frames: the Frame dataclass, its files (desispec's data model) and its mask."""

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import _perfex
from .options import option_defaults

log = logging.getLogger("perfex")


@dataclass(eq=False)
class Frame:
    """An extracted frame in DESI units: flux per Angstrom, its ivar, the desispec mask, the
    resolution band in DIA layout (resolution[f][d][k] = R_f[k - ndiag + d][k]), chi2pix,
    pixmask_fraction, the model image (when requested), the run's statistics and its phases
    with their times (frame.phases: (name, depth, seconds), perfex::<name> profiling regions)."""

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
    failed_bins: list[tuple] = field(default_factory=list)
    nonfinite_pixels: int = 0
    seconds: float = 0.0
    linalg_flops: float = 0.0
    max_band: int = 0
    warnings: list[str] = field(default_factory=list)
    # The phases that made the frame, as the library times them: (name, depth, seconds)
    phases: list[tuple] = field(default_factory=list)

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


def _path(p):
    """A file name as the library takes it: bytes (os.fsencode), whatever the locale's encoding;
    b"" for None."""
    return os.fsencode(p) if p is not None else b""


def write_frame(path, frame, image_path=None, psf_path=None, fibermap=None):
    """Writes the desispec frame file (FLUX, IVAR, MASK, WAVELENGTH, RESOLUTION, FIBERMAP,
    CHI2PIX, PIXMASK_FRACTION); the FIBERMAP and header cards come from image_path when that
    preproc file exists, the FIBERMAP rows specmin.. from the fibermap file when given (as
    desi_extract_spectra -f). Written to a temporary name and renamed (a signal that ends the
    process removes the temporary); never over image_path, psf_path or fibermap
    (perfex.RequestError)."""
    for warning in _perfex.write_frame(_path(path), frame, _path(image_path), _path(psf_path), _path(fibermap)):
        log.warning("%s: %s", os.fsdecode(path), warning)


def write_model(path, frame, image_path=None, psf_path=None):
    """Writes the frame's model image (extract with model_image=True), as write_frame does."""
    _perfex.write_model(_path(path), frame, _path(image_path), _path(psf_path))


def dependencies(backend=None):
    """The (DEPNAMnn, DEPVERnn) pairs the package's writers record in frames and model images
    (desiutil.depend's cards): perfex, kokkos, perfex-backend when backend is given, numpy."""
    return _perfex.dependencies(backend or "")


def read_frame(path):
    """Reads a frame file (perfex's, desispec's or gpu_specter's)."""
    return Frame(**_perfex.read_frame(_path(path)))


def frame_mask(chi2pix, pixmask_fraction, ivar, failed_bins=()):
    """desispec's spectrum mask of a whole frame: SOMEBADPIX, ALLBADPIX, BAD2DFIT, NODATA
    where ivar is 0, and BAD2DFIT | NODATA on failed_bins ((fibre0, nfibres, wave0, nwaves)
    blocks of bins whose patch could not be solved)."""
    return _perfex.frame_mask(chi2pix, pixmask_fraction, ivar, list(failed_bins))


def check_outputs(outputs, inputs, prefix=""):
    """Raises perfex.RequestError unless every output (name, path) can be written and none is
    one of the inputs (name, path) or an earlier output: the same file by device and inode, or
    by folder and name before it exists (so d/a.fits and d/./a.fits are one file)."""
    _perfex.check_outputs([(n, _path(p)) for n, p in outputs if p], [(n, _path(p)) for n, p in inputs if p], prefix)


class OutputSet:
    """The outputs of one job that must change together (a frame and its model image): the
    library's io::OutputSet. open(path) writes path's new content into a hidden temporary next
    to it; commit() renames every one into place, all or none (see docs/python.md). Uncommitted
    temporaries are removed (also by a signal that ends the process), so a failure while writing
    any output leaves every existing one as it was. One file is one output of a set: a second
    name for it (d/./a.fits, a link to it) is a perfex.RequestError naming both."""

    def __init__(self):
        self._set = _perfex.OutputSet()

    @contextlib.contextmanager
    def open(self, path):
        """An open binary file for path's new content; the same output checks as write_frame
        (perfex.RequestError: a directory, a device, a missing folder)."""
        temporary = self._set.start(_path(path))
        try:
            with open(os.fsdecode(temporary), "r+b") as f:  # it exists: never re-created by name
                yield f
        except BaseException:
            self._set.drop(temporary)  # removed
            raise

    def commit(self):
        self._set.commit()

    def discard(self):
        """Removes the temporaries not committed."""
        self._set = _perfex.OutputSet()


@contextlib.contextmanager
def outputs_together():
    """An OutputSet committed when the block ends without an exception (else nothing changes)."""
    outputs = OutputSet()
    try:
        yield outputs
        outputs.commit()
    finally:
        outputs.discard()


def check_fits(path, hdus=(), fd=-1):
    """Opens a FITS file as every perfex reader does and requires the HDUs named: a
    perfex.Error naming the file and HDU otherwise (missing, a directory, not FITS, a damaged
    header, an HDU missing). hdus: the EXTNAMEs, or one as a string. fd: the file as the caller
    holds it open (a descriptor), named path: the file the caller then reads is the one checked."""
    _perfex.check_fits(_path(path), [hdus] if isinstance(hdus, str) else list(hdus), fd)


@contextlib.contextmanager
def atomic_output(path):
    """An open binary file to write path's new content into: a hidden temporary next to the
    target, renamed over it when the block ends without an exception, removed otherwise (and by
    a signal that ends the process, as the C++ writers' temporaries). The same output checks as
    write_frame (perfex.RequestError: a directory, a device, a missing folder)."""
    with outputs_together() as outputs, outputs.open(path) as f:
        yield f
