"""Extracted frames: the Frame dataclass, its files (desispec's data model) and its mask."""

import contextlib
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import _perfex
from .logs import log
from .options import option_defaults


@dataclass(eq=False)
class Frame:
    """An extracted frame in DESI units: flux per Angstrom, its ivar, the desispec mask, the
    resolution band in DIA layout (resolution[f][d][k] = R_f[k - ndiag + d][k]), chi2pix,
    pixmask_fraction, the model image (when requested), the run's statistics and its phases
    with their times (frame.phases: (name, depth, seconds), perfex::<name> profiling regions).

    Returned by perfex.extract_frame and read_frame; written by write_frame.

    Attributes
    ----------
    flux, ivar : numpy.ndarray
        [nspec][nwave]: the flux in electrons per Angstrom and its inverse variance.
    mask : numpy.ndarray
        [nspec][nwave] uint32: desispec's specmask bits (frame_mask).
    wave : numpy.ndarray
        [nwave]: the wavelengths, in Angstrom.
    resolution : numpy.ndarray
        [nspec][2*ndiag+1][nwave]: the resolution band in DIA layout.
    chi2pix, pixmask_fraction : numpy.ndarray
        [nspec][nwave]: desispec's CHI2PIX and PIXMASK_FRACTION.
    specmin : int
        The first fibre.
    model : numpy.ndarray or None
        [npix_y][npix_x]: the model image (extracted with model_image=True), else None.
    options : dict
        The options used, by name (option_defaults' names; psferr resolved).
    npatches, failed_patches : int
        The patches solved, and those that failed (their bins are masked BAD2DFIT | NODATA).
    failed_bins : list of tuple
        (fibre0, nfibres, wave0, nwaves) blocks of bins, frame-relative, whose patch failed.
    nonfinite_pixels : int
        Image pixels whose value or ivar was NaN or infinite, treated as masked.
    seconds : float
        The extraction's time.
    linalg_flops : float
        The patches' linear algebra, in floating-point operations.
    max_band : int
        The widest half-bandwidth of a patch's normal matrix.
    warnings : list of str
        One line per problem met (options clamped, failed patches, bad pixels).
    phases : list of tuple
        (name, depth, seconds) of each phase that made the frame.
    """

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
        """The number of spectra (fibres)."""
        return self.flux.shape[0]

    @property
    def nwave(self):
        """The number of wavelengths."""
        return self.flux.shape[1]

    @property
    def ndiag(self):
        """The resolution band's half-width."""
        return (self.resolution.shape[1] - 1) // 2

    @property
    def fibers(self):
        """The fibre numbers, specmin .. specmin + nspec - 1."""
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
    """Writes the desispec frame file of a frame.

    The HDUs FLUX, IVAR, MASK, WAVELENGTH, RESOLUTION, FIBERMAP, CHI2PIX, PIXMASK_FRACTION,
    written to a temporary name and renamed (a signal that ends the process removes the
    temporary). Warnings (extracted fibres the FIBERMAP lacks) are logged to the 'perfex'
    logger, and recorded in the header.

    Parameters
    ----------
    path : str or os.PathLike
        The frame file (".gz": compressed).
    frame : Frame
        The frame.
    image_path : str or os.PathLike, optional
        The preproc file it was extracted from: its FIBERMAP and header cards are copied when
        the file exists.
    psf_path : str or os.PathLike, optional
        The PSF file it was extracted with, recorded in the header.
    fibermap : str or os.PathLike, optional
        A fibermap file whose FIBERMAP rows specmin.. are the frame's (as
        desi_extract_spectra -f), instead of the image's.

    Raises
    ------
    RequestError
        path is image_path, psf_path or fibermap, or cannot be written (a directory, a missing
        folder).
    Error
        The frame is inconsistent, or writing failed (nothing is left at path then).
    """
    for warning in _perfex.write_frame(_path(path), frame, _path(image_path), _path(psf_path), _path(fibermap)):
        log.warning("%s: %s", os.fsdecode(path), warning)


def write_model(path, frame, image_path=None, psf_path=None):
    """Writes the frame's model image (extract with model_image=True), as write_frame does.

    Parameters
    ----------
    path : str or os.PathLike
        The model image file.
    frame : Frame
        A frame extracted with model_image=True.
    image_path, psf_path : str or os.PathLike, optional
        The inputs, recorded in the header.

    Raises
    ------
    RequestError
        path is image_path or psf_path.
    Error
        The frame has no model image, or writing failed.
    """
    _perfex.write_model(_path(path), frame, _path(image_path), _path(psf_path))


def dependencies(backend=None):
    """The (DEPNAMnn, DEPVERnn) pairs the package's writers record in frames and model images
    (desiutil.depend's cards): perfex, kokkos, perfex-backend when backend is given, numpy."""
    return _perfex.dependencies(backend or "")


def read_frame(path):
    """Reads a frame file (perfex's, desispec's or gpu_specter's).

    Parameters
    ----------
    path : str or os.PathLike
        The frame file.

    Returns
    -------
    Frame
        The settings a foreign file lacks keep their defaults; a missing PIXMASK_FRACTION or
        CHI2PIX HDU reads as zeros.
    """
    return Frame(**_perfex.read_frame(_path(path)))


def frame_mask(chi2pix, pixmask_fraction, ivar, failed_bins=()):
    """desispec's spectrum mask of a whole frame.

    SOMEBADPIX / ALLBADPIX from pixmask_fraction, BAD2DFIT where chi2pix exceeds 5x its
    median over fibres at that wavelength and 5x its median over wavelengths for that fibre,
    NODATA where ivar is 0, and BAD2DFIT | NODATA on failed_bins.

    Parameters
    ----------
    chi2pix, pixmask_fraction, ivar : numpy.ndarray
        [nspec][nwave] arrays of the frame.
    failed_bins : sequence of tuple, default ()
        (fibre0, nfibres, wave0, nwaves) blocks of bins whose patch could not be solved.

    Returns
    -------
    numpy.ndarray
        [nspec][nwave] uint32 mask bits.
    """
    return _perfex.frame_mask(chi2pix, pixmask_fraction, ivar, list(failed_bins))


def check_outputs(outputs, inputs, prefix=""):
    """Checks that outputs can be written without touching the inputs, before any work.

    Two paths are one file by device and inode, or by folder and name before it exists (so
    d/a.fits and d/./a.fits are one file).

    Parameters
    ----------
    outputs, inputs : sequence of (str, path)
        (name, path) pairs; the name is what a message calls the file. Entries whose path is
        empty or None are skipped.
    prefix : str, default ""
        Put before each name in the messages (as "option ").

    Raises
    ------
    RequestError
        An output that cannot be written, or that is an input or an earlier output.
    """
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
