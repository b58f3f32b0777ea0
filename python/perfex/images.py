"""CCD images (numpy, used in place or converted once; arrays on the GPU) and preproc files."""

import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _perfex
from ._perfex import Error
from .logs import log
from .runtime import initialize


def cuda_array(array, name):
    """(data pointer, shape) of an object with __cuda_array_interface__ (cupy, numba, torch):
    a C-contiguous 2-D float64 array in GPU memory, or a perfex.Error naming what is not."""
    iface = array.__cuda_array_interface__
    try:
        shape = tuple(int(n) for n in iface["shape"])
        typestr = iface["typestr"]
        pointer, _ = iface["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise Error(f"{name}: malformed __cuda_array_interface__ ({e})") from None
    if len(shape) != 2:
        raise Error(f"{name}: a CUDA array of shape {shape}; expected 2-D [nrows][ncols]")
    if typestr not in ("<f8", "=f8"):
        raise Error(
            f"{name}: a CUDA array of type {typestr}; perfex reads float64 ('<f8') in "
            "place (convert with .astype('float64'))"
        )
    strides = iface.get("strides")
    if strides is not None and tuple(strides) != (8 * shape[1], 8):
        raise Error(
            f"{name}: a CUDA array with strides {tuple(strides)}; perfex reads C-contiguous "
            "arrays in place (cupy.ascontiguousarray)"
        )
    if iface.get("mask") is not None:
        raise Error(f"{name}: masked CUDA arrays are not supported")
    return int(pointer), shape


def _gpu_array(array):
    """True for an array in GPU memory: __cuda_array_interface__, or DLPack on a CUDA device."""
    if hasattr(array, "__cuda_array_interface__"):
        return True
    device = getattr(array, "__dlpack_device__", None)
    return callable(device) and device()[0] in (2, 3)  # kDLCUDA, kDLCUDAHost


def device_image(pixels, ivar):
    """The handle of an image whose arrays are in GPU memory (cupy): used in place on the cuda
    backend; refused, with what to do instead, where this build has none."""
    from .runtime import backends

    if "cuda" not in backends():
        raise Error(
            "image: the arrays are in GPU memory (cupy), but this perfex build has no CUDA "
            f"backend ({', '.join(backends())}): pass numpy arrays (cupy.asnumpy) or build "
            "perfex with a CUDA Kokkos"
        )
    for name, a in (("pixels", pixels), ("ivar", ivar)):
        if not hasattr(a, "__cuda_array_interface__"):
            raise Error(
                f"{name}: a GPU array without __cuda_array_interface__ (DLPack only): pass "
                "a cupy array (cupy.from_dlpack)"
            )
    (p, shape_p), (w, shape_w) = cuda_array(pixels, "pixels"), cuda_array(ivar, "ivar")
    if shape_p != shape_w:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {shape_p} and {shape_w}")
    return _perfex.CudaArrayImage(p, w, shape_p[0], shape_p[1], (pixels, ivar))


def unmasked(pixels, ivar):
    """(pixels, ivar) with the masks of numpy masked arrays applied: where either array is
    masked, ivar is 0 (and the pixel 0, so that a masked NaN counts as no bad pixel). Plain
    arrays are returned as they are."""
    if not (np.ma.isMaskedArray(pixels) or np.ma.isMaskedArray(ivar)):
        return pixels, ivar
    shapes = np.shape(pixels), np.shape(ivar)
    if shapes[0] != shapes[1]:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {shapes[0]} and {shapes[1]}")
    mask = np.ma.getmaskarray(pixels) | np.ma.getmaskarray(ivar)
    p, _ = _as_float64(np.ma.getdata(pixels), "pixels")
    w, _ = _as_float64(np.ma.getdata(ivar), "ivar")
    p, w = np.where(mask, 0.0, p), np.where(mask, 0.0, w)
    log.info("masked arrays: %d masked pixels given ivar 0", int(np.count_nonzero(mask)))
    return p, w


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
    log.debug(
        "%s: converting %s %s array to C-contiguous float64 (one copy)",
        name,
        "C-contiguous" if a.flags.c_contiguous else "non-contiguous",
        a.dtype,
    )
    return np.ascontiguousarray(a, dtype=np.float64), True


class Image:
    """A CCD image (pixels and inverse variances, ivar 0 = masked) ready for extraction.

    C-contiguous native float64 arrays are used in place (no copy) when every value is finite
    and every ivar >= 0 (so are cupy arrays on the cuda backend, through
    __cuda_array_interface__); other dtypes and layouts (e.g. the float32 of preproc files) are
    converted once here; NaN/Inf pixels are masked (counted in nonfinite_pixels), a negative
    ivar is a perfex.Error. An extraction checks again, at each call, only the pixels its
    patches read (the job's pixel box), so changing the arrays later is seen; NaN/Inf pixels
    there are masked in a copy of that box alone, and frame.nonfinite_pixels counts them. Build
    one to extract the same image several times.

    Parameters
    ----------
    pixels : array_like
        The pixel values, 2-D [nrows][ncols]; numpy masked arrays give ivar 0 where masked.
    ivar : array_like
        Their inverse variances, of the same shape (0: a masked pixel).
    region : tuple of int, optional
        (row0, col0, ccd_rows, ccd_cols) when the arrays are a rectangle of a larger CCD;
        None: they are the CCD.
    check : bool, optional
        Check every pixel now (the default); False: when first asked (nonfinite_pixels,
        in_place, data_pointer), so that an image built only to be extracted is read only where
        its patches are.

    Raises
    ------
    Error
        Arrays that are not 2-D or of different shapes, a negative ivar, GPU arrays where
        this build has no CUDA backend.
    TypeError
        An argument that is not a real numeric array.
    """

    def __init__(self, pixels, ivar, region=None, *, check=True):
        initialize()
        if _gpu_array(pixels) or _gpu_array(ivar):
            self.converted, self.region = False, None
            self._handle = device_image(pixels, ivar)
            return
        pixels, ivar = unmasked(pixels, ivar)
        p, converted_p = _as_float64(pixels, "pixels")
        w, converted_w = _as_float64(ivar, "ivar")
        self.converted = converted_p or converted_w
        # region: (row0, col0, ccd_rows, ccd_cols) when the arrays are a rectangle of the CCD.
        self.region = region
        self._handle = _perfex.HostImage(p, w, *(region or ()), check=check)

    @property
    def shape(self):
        """(nrows, ncols) of the arrays."""
        return tuple(self._handle.shape)

    @property
    def pixels(self):
        """The float64 pixel array the image was built from (the caller's unless converted)."""
        return self._handle.pixels

    @property
    def ivar(self):
        """The float64 inverse variance array the image was built from."""
        return self._handle.ivar

    @property
    def nonfinite_pixels(self):
        """Pixels whose value or ivar is NaN or infinite: masked by the extraction."""
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
    """A DESI preproc image as read by read_preproc (ivar 0 where MASK & mask_bits).

    Pass it to perfex.extract_frame as it is (no ivar).

    Attributes
    ----------
    path : str
        The file read.
    pixels, ivar : numpy.ndarray
        float64 [nrows][ncols]: the IMAGE and IVAR HDUs, ivar 0 where masked.
    masked_pixels : int
        Pixels with (MASK & mask_bits) != 0.
    nonfinite_pixels : int
        Pixels whose value or ivar was NaN or infinite (masked: value 0, ivar 0).
    has_fibermap : bool
        The file has a FIBERMAP HDU.
    region : tuple of int or None
        (row0, col0, ccd_rows, ccd_cols) when only a rectangle of the CCD was read, else None.
    """

    path: str
    pixels: np.ndarray
    ivar: np.ndarray
    masked_pixels: int = 0
    nonfinite_pixels: int = 0
    has_fibermap: bool = False
    # (row0, col0, ccd_rows, ccd_cols) when only a rectangle of the CCD was read, else None
    region: Optional[tuple] = None


def read_preproc(path, mask_bits=_perfex.DEFAULT_MASK_BITS, box=None):
    """Reads a DESI preproc image (HDUs IMAGE, IVAR, MASK).

    The arrays are float64, ivar := 0 where (MASK & mask_bits) != 0, and NaN/Inf pixels are
    masked. Without a MASK HDU only IVAR = 0 marks bad pixels; compressed (.fits.gz) files are
    read too.

    Parameters
    ----------
    path : str or os.PathLike
        The preproc file.
    mask_bits : int, default DEFAULT_MASK_BITS (0x2FF)
        The MASK bits that mask a pixel; the default is DESI's rule (bits 0-7 and 9).
    box : tuple of int, optional
        (row0, row1, col0, col1): read only those rows and columns (the result's region says
        where they sit on the CCD); None reads the whole image.

    Returns
    -------
    PreprocImage

    Raises
    ------
    Error
        A file that cannot be read, a missing IMAGE or IVAR HDU, a negative ivar.
    """
    return PreprocImage(**_perfex.read_preproc(os.fsencode(path), mask_bits, box))


def preproc_shape(path):
    """(rows, cols) of a preproc image's CCD, from its header alone."""
    return tuple(_perfex.preproc_shape(os.fsencode(path)))


def as_image(image, ivar=None):
    """An Image from an Image, a PreprocImage, or (pixels, ivar) arrays: one built here is
    checked where an extraction reads it (Image(check=False))."""
    if isinstance(image, (Image, PreprocImage)):
        if ivar is not None:
            raise TypeError("ivar must not be given with a perfex.Image or PreprocImage")
        if isinstance(image, Image):
            return image
        return Image(image.pixels, image.ivar, image.region, check=False)
    if ivar is None:
        raise TypeError("ivar: required with a pixel array")
    return Image(image, ivar, check=False)


def image_arrays(image, ivar=None):
    """(pixels, ivar, Image or None, region) of an Image, a PreprocImage or (pixels, ivar)
    arrays, without building an Image: C-contiguous float64 arrays (converted once when needed),
    the Image when one was given, and where the arrays sit on the CCD ((row0, col0, ccd_rows,
    ccd_cols), or None: they are the CCD). An MPI rank 0 sends other ranks their pixels from
    these while it builds its own Image."""
    if isinstance(image, Image):
        if ivar is not None:
            raise TypeError("ivar must not be given with a perfex.Image")
        return image.pixels, image.ivar, image, image.region
    region = None
    if isinstance(image, PreprocImage):
        image, ivar, region = image.pixels, image.ivar, image.region
    if ivar is None:
        raise TypeError("ivar: required with a pixel array")
    image, ivar = unmasked(image, ivar)
    pixels, _ = _as_float64(image, "pixels")
    weights, _ = _as_float64(ivar, "ivar")
    if pixels.ndim != 2 or pixels.shape != weights.shape:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {pixels.shape} and {weights.shape}")
    return pixels, weights, None, region
