"""
perfex C++ core (use the perfex package, not this module)
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
from . import testing
__all__: list[str] = ['AtomicOutput', 'Error', 'ExtractionOptions', 'HostImage', 'MAX_HOST_THREADS', 'Plan', 'Psf', 'RequestError', 'backends', 'bundle_ranges', 'check_backend', 'check_outputs', 'concurrency', 'cuda_device_count', 'default_backend', 'device_for_rank', 'device_sharers', 'extract_files', 'extract_frame', 'finalize', 'frame_mask', 'initialize', 'is_forked_child', 'is_initialized', 'options_from_dict', 'options_to_dict', 'plan_frame', 'preproc_shape', 'ranks_sharing_device', 'read_frame', 'read_preproc', 'read_psf', 'resolve_request', 'set_device_sharers', 'shared_device_budget', 'testing', 'write_frame', 'write_model']
class Error(RuntimeError):
    pass
class RequestError(Error):
    pass
class Psf:
    @staticmethod
    def from_dict(arg0: dict) -> Psf:
        ...
    def __getstate__(self) -> dict:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, arg0: dict) -> None:
        ...
    def to_dict(self) -> dict:
        ...
    @property
    def fibermin(self) -> int:
        ...
    @property
    def hsizex(self) -> int:
        ...
    @property
    def hsizey(self) -> int:
        ...
    @property
    def nfib(self) -> int:
        ...
    @property
    def npix_x(self) -> int:
        ...
    @property
    def npix_y(self) -> int:
        ...
    @property
    def param_names(self) -> list[str]:
        ...
    @property
    def psferr(self) -> float:
        ...
    @property
    def source(self) -> str:
        ...
    @property
    def wavemax(self) -> float:
        ...
    @property
    def wavemin(self) -> float:
        ...
class ExtractionOptions:
    decorrelation: str
    model_image: bool
    def __init__(self) -> None:
        ...
    def validate(self) -> None:
        ...
    def wavepad(self) -> int:
        ...
    @property
    def batch_patches(self) -> int:
        ...
    @batch_patches.setter
    def batch_patches(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def bundlesize(self) -> int:
        ...
    @bundlesize.setter
    def bundlesize(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def dw(self) -> float:
        ...
    @dw.setter
    def dw(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def eigen_clip(self) -> float:
        ...
    @eigen_clip.setter
    def eigen_clip(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def memory_budget(self) -> int:
        ...
    @memory_budget.setter
    def memory_budget(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def nspec(self) -> int:
        ...
    @nspec.setter
    def nspec(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def nsubbundles(self) -> int:
        ...
    @nsubbundles.setter
    def nsubbundles(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def nwavestep(self) -> int:
        ...
    @nwavestep.setter
    def nwavestep(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def pixpad_frac(self) -> float:
        ...
    @pixpad_frac.setter
    def pixpad_frac(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def psferr(self) -> float:
        ...
    @psferr.setter
    def psferr(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def regularize(self) -> float:
        ...
    @regularize.setter
    def regularize(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def specmin(self) -> int:
        ...
    @specmin.setter
    def specmin(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def wavepad0(self) -> int:
        ...
    @wavepad0.setter
    def wavepad0(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def wavepad_frac(self) -> float:
        ...
    @wavepad_frac.setter
    def wavepad_frac(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def wmax(self) -> float:
        ...
    @wmax.setter
    def wmax(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def wmin(self) -> float:
        ...
    @wmin.setter
    def wmin(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class HostImage:
    def __init__(self, pixels: numpy.typing.NDArray[numpy.float64], ivar: numpy.typing.NDArray[numpy.float64], row0: typing.SupportsInt | typing.SupportsIndex = 0, col0: typing.SupportsInt | typing.SupportsIndex = 0, ccd_rows: typing.SupportsInt | typing.SupportsIndex = 0, ccd_cols: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    @property
    def in_place(self) -> bool:
        ...
    @property
    def ivar(self) -> numpy.ndarray:
        ...
    @property
    def ivar_address(self) -> int:
        ...
    @property
    def nonfinite_pixels(self) -> int:
        ...
    @property
    def pixels(self) -> numpy.ndarray:
        ...
    @property
    def pixels_address(self) -> int:
        ...
    @property
    def shape(self) -> tuple[int, int]:
        ...
class Plan:
    def blocks(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    def pixel_box(self, first: typing.SupportsInt | typing.SupportsIndex = 0, last: typing.SupportsInt | typing.SupportsIndex = -1) -> typing.Any:
        """
        (row0, row1, col0, col1) of the pixels patches [first, last) read, or None.
        """
    @property
    def ccd_cols(self) -> int:
        ...
    @property
    def ccd_rows(self) -> int:
        ...
    @property
    def flops(self) -> list[float]:
        ...
    @property
    def ndiag(self) -> int:
        ...
    @property
    def npatches(self) -> int:
        ...
    @property
    def nwave(self) -> int:
        ...
    @property
    def options(self) -> dict:
        ...
class AtomicOutput:
    def __init__(self, path: str) -> None:
        ...
    def commit(self) -> None:
        ...
    @property
    def path(self) -> str:
        ...
    @property
    def target(self) -> str:
        ...
def backends() -> list[str]:
    """
    Execution spaces of this build, preferred first.
    """
def bundle_ranges(arg0: dict, arg1: typing.SupportsInt | typing.SupportsIndex) -> list[tuple[int, int]]:
    """
    The requested fibres of each bundle, [lo, hi), in order.
    """
def check_backend(arg0: str, arg1: str) -> None:
    ...
def check_outputs(outputs: collections.abc.Sequence[tuple[str, str]], inputs: collections.abc.Sequence[tuple[str, str]], prefix: str = '') -> None:
    """
    Raises RequestError unless every (name, path) output can be written and none is an input or an earlier output (the same file by device and inode, or by folder and name).
    """
def concurrency(arg0: str) -> int:
    ...
def cuda_device_count() -> int:
    ...
def default_backend(gpu: bool = True) -> str:
    ...
def device_for_rank(local_rank: typing.SupportsInt | typing.SupportsIndex, ndevices: typing.SupportsInt | typing.SupportsIndex, requested: typing.SupportsInt | typing.SupportsIndex = -1) -> int:
    ...
def device_sharers() -> int:
    ...
def extract_files(image: str, psf: str, output: str, model: str, fibermap: str, options: dict, wavelength_given: bool, nspec_given: bool, allow_image_size_mismatch: bool, backend: str, progress: typing.Any = None, warn: typing.Any = None) -> dict:
    """
    perfex-extract's whole job (perfex::io::extract_files), with its option names in messages; returns the run's statistics.
    """
def extract_frame(image: HostImage, psf: Psf, options: dict, nspec_given: bool, allow_image_size_mismatch: bool, backend: str, progress: typing.Any = None, first: typing.SupportsInt | typing.SupportsIndex = 0, last: typing.SupportsInt | typing.SupportsIndex = -1) -> dict:
    """
    Checks the request (resolve_request), plans the frame and extracts its patches [first, last) (all by default).
    """
def finalize() -> None:
    ...
def frame_mask(chi2pix: numpy.ndarray, pixmask_fraction: numpy.ndarray, ivar: numpy.ndarray, failed_bins: typing.Any = []) -> numpy.typing.NDArray[numpy.uint32]:
    ...
def initialize(threads: typing.SupportsInt | typing.SupportsIndex = 0, device: typing.SupportsInt | typing.SupportsIndex = -1) -> str:
    """
    Starts Kokkos with perfex::host_threads' count (threads <= 0: from the environment, capped at 512; a bad thread variable is a RequestError naming it; device: the GPU, -1 Kokkos' default); returns the cap's warning or ''.
    """
def is_forked_child() -> bool:
    """
    Whether this process was forked after the runtime started (the runtime is unusable).
    """
def is_initialized() -> bool:
    ...
def options_from_dict(arg0: dict) -> ExtractionOptions:
    ...
def options_to_dict(arg0: ExtractionOptions) -> dict:
    ...
def plan_frame(psf: Psf, options: dict, ccd_rows: typing.SupportsInt | typing.SupportsIndex, ccd_cols: typing.SupportsInt | typing.SupportsIndex, backend: str) -> Plan:
    """
    The frame's plan for resolved options (resolve_request's), on the host.
    """
def preproc_shape(arg0: str) -> tuple[int, int]:
    ...
def ranks_sharing_device(device: typing.SupportsInt | typing.SupportsIndex, local_size: typing.SupportsInt | typing.SupportsIndex, ndevices: typing.SupportsInt | typing.SupportsIndex) -> int:
    ...
def read_frame(path: str) -> dict:
    ...
def read_preproc(path: str, mask_bits: typing.SupportsInt | typing.SupportsIndex = 767, box: typing.Any = None) -> dict:
    ...
def read_psf(path: str) -> Psf:
    ...
def resolve_request(options: dict, psf: Psf, ccd_rows: typing.SupportsInt | typing.SupportsIndex, ccd_cols: typing.SupportsInt | typing.SupportsIndex, wavelength_given: bool = True, nspec_given: bool = True, allow_image_size_mismatch: bool = False, cli: bool = False) -> tuple[dict, list[str]]:
    """
    perfex::extract::resolve_request: (options dict to extract with, warnings); raises RequestError for a refused request, Error for an image that is not the PSF's CCD.
    """
def set_device_sharers(arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def shared_device_budget(free_bytes: typing.SupportsInt | typing.SupportsIndex, sharers: typing.SupportsInt | typing.SupportsIndex) -> int:
    ...
def write_frame(path: str, frame: typing.Any, image_path: str = '', psf_path: str = '', fibermap: str = '') -> list[str]:
    ...
def write_model(path: str, frame: typing.Any, image_path: str = '', psf_path: str = '') -> list[str]:
    ...
MAX_HOST_THREADS: int = 512
__version__: str = '0.1.0'
