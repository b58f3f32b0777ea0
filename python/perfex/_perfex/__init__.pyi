"""
perfex C++ core (use the perfex package, not this module)
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
from . import testing
__all__: list[str] = ['DEFAULT_MASK_BITS', 'Error', 'ExtractionOptions', 'FrameFiles', 'FrameJob', 'HostImage', 'MAX_HOST_THREADS', 'OutputSet', 'Phase', 'PhaseTimes', 'Psf', 'RequestError', 'backends', 'bundle_ranges', 'check_backend', 'check_fits', 'check_outputs', 'closest_name', 'concurrency', 'cuda_device_count', 'default_backend', 'dependencies', 'device_for_rank', 'device_sharers', 'finalize', 'format_phases', 'frame_mask', 'grid_of_values', 'initialize', 'is_forked_child', 'is_initialized', 'options_from_dict', 'options_to_dict', 'preproc_shape', 'ranks_sharing_device', 'read_frame', 'read_preproc', 'read_psf', 'set_device_sharers', 'shared_device_budget', 'testing', 'version_info', 'version_text', 'write_frame', 'write_model', 'write_synthetic_psfs']
class Error(RuntimeError):
    pass
class RequestError(Error):
    pass
class Phase:
    """
    A phase of PhaseTimes.phase(name): a context manager.
    """
    def __enter__(self) -> None:
        ...
    def __exit__(self, arg0: typing.Any, arg1: typing.Any, arg2: typing.Any) -> bool:
        ...
class PhaseTimes:
    """
    The phases of a run (perfex::PhaseTimes), in the order they started, a phase that ran several times once with its total: the library's jobs and the Python drivers time their phases into one, a phase started inside another one level below it.
    """
    def __init__(self) -> None:
        ...
    def __len__(self) -> int:
        ...
    def __repr__(self) -> str:
        ...
    def list(self) -> list:
        """
        The phases as (name, depth, seconds).
        """
    def phase(self, name: str) -> Phase:
        """
        A context manager: the block as phase `name`, inside the profiling region "perfex::<name>", one level below the phases open.
        """
    @property
    def level(self) -> int:
        """
        How many phases are open: the depth of the next one.
        """
class Psf:
    """
    A PSF of any format perfex reads, held by the library.
    
    Made by perfex.read_psf (a file), perfex.psf_from_tables (gpu_specter's dict) or
    Psf.from_dict (to_dict's dict); picklable (MPI ranks receive it so). Read-only.
    
    Attributes
    ----------
    source : str
        The file it was read from, or the source a dict named ("" by default).
    psftype : str
        'GAUSS-HERMITE', 'GAUSS-HERMITE2' or 'SPOTGRID'.
    nfib : int
        The fibres it models.
    npix_x, npix_y : int
        The CCD's columns and rows.
    psferr : float
        The fractional model error (PSFERR; 0.01 when the file has none) that chi2pix takes by
        default.
    wavemin, wavemax : float
        The PSF's wavelength domain, in Angstrom: the ends of the default grid.
    spot_rows, spot_cols : int
        The size of a spot's pixel box.
    hsizex, hsizey : int
        Half the spot box's columns and rows (HSIZEX, HSIZEY of a GAUSS-HERMITE PSF).
    fibermin : int
        The first fibre of a GAUSS-HERMITE PSF (0 for the other formats).
    param_names : list of str
        The Gauss-Hermite parameters' names (empty for SPOTGRID).
    """
    @staticmethod
    def from_dict(arg0: dict) -> Psf:
        ...
    @staticmethod
    def psftypes() -> list[str]:
        """
        The PSFTYPEs of the formats perfex reads, in the library's order (the first is that of a file or dict that names none).
        """
    def __getstate__(self) -> dict:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, arg0: dict) -> None:
        ...
    def specter_xypix(self, fibre: typing.SupportsInt | typing.SupportsIndex, wavelength: typing.SupportsFloat | typing.SupportsIndex, xmin: typing.SupportsInt | typing.SupportsIndex, xmax: typing.SupportsInt | typing.SupportsIndex, ymin: typing.SupportsInt | typing.SupportsIndex, ymax: typing.SupportsInt | typing.SupportsIndex) -> tuple:
        """
        (xslice, yslice): specter's PSF.xypix(fibre, wavelength, xmin, xmax, ymin, ymax)'s slices, the spot's box clipped to the image of columns [xmin, xmax) and rows [ymin, ymax), relative to xmin and ymin (empty where specter's are).
        """
    def specter_xyrange(self, specmin: typing.SupportsInt | typing.SupportsIndex, specmax: typing.SupportsInt | typing.SupportsIndex, wavemin: typing.SupportsFloat | typing.SupportsIndex, wavemax: typing.SupportsFloat | typing.SupportsIndex) -> tuple:
        """
        (xmin, xmax, ymin, ymax): specter's PSF.xyrange((specmin, specmax), (wavemin, wavemax)), the CCD box holding those spectra's spots over that range. A ValueError where specter's fails (none of the range on the CCD).
        """
    def spots(self, fibremin: typing.SupportsInt | typing.SupportsIndex, nfibre: typing.SupportsInt | typing.SupportsIndex, wavelengths: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> tuple:
        """
        (pixels[nfibre][nwave][ny][nx], xcorner[nfibre][nwave], ycorner[nfibre][nwave]): the normalised spots of fibres fibremin.. at every wavelength in one evaluation, each covering CCD columns xcorner.. and rows ycorner.. (not clipped to the CCD), with xypix's refusals.
        """
    def to_dict(self) -> dict:
        ...
    def xypix(self, fibre: typing.SupportsInt | typing.SupportsIndex, wavelength: typing.SupportsFloat | typing.SupportsIndex) -> tuple:
        """
        (xslice, yslice, pixels): the normalised spot of a fibre at a wavelength and the CCD columns and rows it covers (specter's PSF.xypix, not clipped to the CCD). A wavelength outside the fibre's spot domain (the PSF's, extended while the spot stays near the CCD) or not finite is a RequestError.
        """
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
    def psftype(self) -> str:
        ...
    @property
    def source(self) -> str:
        ...
    @property
    def spot_cols(self) -> int:
        ...
    @property
    def spot_rows(self) -> int:
        ...
    @property
    def wavemax(self) -> float:
        ...
    @property
    def wavemin(self) -> float:
        ...
class ExtractionOptions:
    decorrelation: str
    geometry: str
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
    def row_max(self) -> int:
        ...
    @row_max.setter
    def row_max(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def row_min(self) -> int:
        ...
    @row_min.setter
    def row_min(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
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
    def __init__(self, pixels: numpy.typing.NDArray[numpy.float64], ivar: numpy.typing.NDArray[numpy.float64], row0: typing.SupportsInt | typing.SupportsIndex = 0, col0: typing.SupportsInt | typing.SupportsIndex = 0, ccd_rows: typing.SupportsInt | typing.SupportsIndex = 0, ccd_cols: typing.SupportsInt | typing.SupportsIndex = 0, check: bool = True) -> None:
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
class OutputSet:
    def __init__(self) -> None:
        ...
    def commit(self) -> None:
        """
        Renames every temporary over its output, all or none.
        """
    def drop(self, temporary: str) -> None:
        """
        Removes the output whose temporary start gave (its writer failed).
        """
    def start(self, path: str) -> bytes:
        """
        The hidden temporary (bytes) that output path's writer opens and writes (without creating or removing it); RequestError for an output that cannot be written or is already in the set.
        """
class FrameJob:
    def __init__(self, psf: Psf, options: dict, ccd_rows: typing.SupportsInt | typing.SupportsIndex, ccd_cols: typing.SupportsInt | typing.SupportsIndex, wavelength_given: bool = True, nspec_given: bool = True, allow_image_size_mismatch: bool = False, backend: str, times: typing.Any = None, frame_warnings: bool = True) -> None:
        """
        job::check: the request (resolve_request, with the API's parameter names), timed into times (a PhaseTimes; None: the job's own); raises RequestError for a refused request, Error for an image that is not the PSF's CCD. frame_warnings: the frames start with the check's warnings.
        """
    def blocks(self) -> numpy.typing.NDArray[numpy.int32]:
        """
        [npatches][4]: (first kept fibre's frame row, kept fibres, first core bin, core bins).
        """
    def extract(self, image: HostImage, progress: typing.Any = None, first: typing.SupportsInt | typing.SupportsIndex = 0, last: typing.SupportsInt | typing.SupportsIndex = -1, model_blocks: bool = False) -> dict:
        """
        job::extract of patches [first, last) (all by default) from the image; the frame as a dict, its phases the job's so far. model_blocks: the model image's blocks of the range (flat, in 'model_blocks') instead of the image.
        """
    def fold_model_blocks(self, model: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], first: typing.SupportsInt | typing.SupportsIndex, last: typing.SupportsInt | typing.SupportsIndex, blocks: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> None:
        """
        perfex::extract::fold_model_blocks: folds the model blocks of patches [first, last) (as a range's extract returns them) into model, in the plan's order, by the geometry's rule (added, or written over: specter's).
        """
    def model_block_values(self, first: typing.SupportsInt | typing.SupportsIndex, last: typing.SupportsInt | typing.SupportsIndex) -> int:
        """
        Values of the model image's blocks of patches [first, last) (their window pixels).
        """
    def pixel_box(self, first: typing.SupportsInt | typing.SupportsIndex = 0, last: typing.SupportsInt | typing.SupportsIndex = -1) -> typing.Any:
        """
        (row0, row1, col0, col1) of the pixels patches [first, last) read, or None.
        """
    def plan(self) -> None:
        """
        job::plan (once).
        """
    @property
    def backend(self) -> str:
        ...
    @property
    def ccd_shape(self) -> tuple[int, int]:
        ...
    @property
    def flops(self) -> list[float]:
        """
        Each patch's linear algebra flops (patch_flops), in plan order.
        """
    @property
    def frame_warnings(self) -> list[str]:
        """
        The warnings the frames start with: the check's, or none.
        """
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
        """
        The options to extract with (resolved).
        """
    @property
    def psf(self) -> Psf:
        """
        The job's PSF (a copy).
        """
    @property
    def warnings(self) -> list[str]:
        """
        What the check adapted or noticed.
        """
class FrameFiles:
    def __init__(self, image: str, psf: str, output: str, model: str, fibermap: str, options: dict, wavelength_given: bool, nspec_given: bool, allow_image_size_mismatch: bool, backend: str, warn: typing.Any = None, times: typing.Any = None) -> None:
        """
        files::inputs: the outputs checked, the PSF and the image's header read; the phases of these files and of their job timed into times (a PhaseTimes; None: their own).
        """
    def check(self) -> FrameJob:
        """
        job::check: the FrameJob of these files.
        """
    def read_box(self, box: typing.Any) -> dict:
        """
        files::read: only the pixels of box (row0, row1, col0, col1), as read_preproc's dict.
        """
    def write(self, frame: typing.Any) -> None:
        """
        files::write: the frame (and the model when asked for), atomically.
        """
    @property
    def ccd_shape(self) -> tuple[int, int]:
        ...
    @property
    def psf(self) -> Psf:
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
def check_fits(path: str, hdus: collections.abc.Sequence[str] = [], fd: typing.SupportsInt | typing.SupportsIndex = -1) -> None:
    """
    perfex::io::check_fits_file: opens the file as every perfex reader does (fd: the file open as this descriptor, named path) and requires the HDUs named (Error naming the file and HDU).
    """
def check_outputs(outputs: collections.abc.Sequence[tuple[str, str]], inputs: collections.abc.Sequence[tuple[str, str]], prefix: str = '') -> None:
    """
    Raises RequestError unless every (name, path) output can be written and none is an input or an earlier output (the same file by device and inode, or by folder and name).
    """
def closest_name(word: str, names: collections.abc.Sequence[str]) -> str:
    """
    The name of names nearest to word (a mistyped option), or '' when none is near.
    """
def concurrency(arg0: str) -> int:
    ...
def cuda_device_count() -> int:
    ...
def default_backend(gpu: bool = True) -> str:
    ...
def dependencies(backend: str = '') -> list:
    """
    The (DEPNAMnn, DEPVERnn) pairs of the files the Python package writes: perfex, kokkos, perfex-backend (when backend is given), numpy.
    """
def device_for_rank(local_rank: typing.SupportsInt | typing.SupportsIndex, ndevices: typing.SupportsInt | typing.SupportsIndex, requested: typing.SupportsInt | typing.SupportsIndex = -1) -> int:
    ...
def device_sharers() -> int:
    ...
def finalize() -> None:
    ...
def format_phases(phases: typing.Any, title: str) -> str:
    ...
def frame_mask(chi2pix: numpy.ndarray, pixmask_fraction: numpy.ndarray, ivar: numpy.ndarray, failed_bins: typing.Any = []) -> numpy.typing.NDArray[numpy.uint32]:
    ...
def grid_of_values(wave: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], what: str = 'wavelength') -> tuple[float, float, float]:
    """
    perfex::extract::grid_of_values: (wmin, wmax, dw) of a uniform grid given by its values; RequestError naming the first value at fault.
    """
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
def set_device_sharers(arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def shared_device_budget(free_bytes: typing.SupportsInt | typing.SupportsIndex, sharers: typing.SupportsInt | typing.SupportsIndex) -> int:
    ...
def version_info() -> dict:
    """
    The versions of this build, as the tools' --version prints them: {'perfex': ..., 'kokkos': '3.4.1', 'backends': [the default first, ...]}.
    """
def version_text() -> str:
    """
    The tools' --version text: perfex's and Kokkos' versions and the backends, a line each.
    """
def write_frame(path: str, frame: typing.Any, image_path: str = '', psf_path: str = '', fibermap: str = '') -> list:
    ...
def write_model(path: str, frame: typing.Any, image_path: str = '', psf_path: str = '') -> None:
    ...
def write_synthetic_psfs(folder: str, nfib: typing.SupportsInt | typing.SupportsIndex = 25, tailamp: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> list[str]:
    """
    Writes the synthetic DESI-like PSF (psf/synthetic.hpp) in every format perfex reads: GAUSS-HERMITE PSFVER 3 and 2, GAUSS-HERMITE2 and sampled into a SPOTGRID; returns the paths.
    """
DEFAULT_MASK_BITS: int = 767
MAX_HOST_THREADS: int = 512
__version__: str = '0.1.0'
