"""What DESI's layouts need on one CPU machine: GPUs dealt to a node's ranks with the memory
budget shared, device (cupy) arrays understood or refused clearly, images of only the pixels a
frame reads, and exposures whose I/O overlaps the extraction."""

import numpy as np
import perfex
import perfex.mpi
import pytest
from perfex import _perfex
from perfex.images import cuda_array
from perfex.runtime import device_plan

from conftest import FRAME_ARRAYS, assert_frames_identical, data_path

QUICK = dict(wavelength="5760,5900,0.8", specmin=0, nspec=10, psferr=0.01)


def test_gpus_dealt_to_a_nodes_ranks():
    # desi_proc on a GPU node: 2 I/O ranks + 5 workers per GPU, 4 GPUs: 22 ranks.
    plans = [device_plan(rank, 22, 4) for rank in range(22)]
    assert [d for d, _ in plans] == [r % 4 for r in range(22)]
    assert [s for _, s in plans] == [6 if r % 4 < 2 else 5 for r in range(22)]
    assert device_plan(3, 8, 4, requested=1) == (1, 8)  # the user's choice; all may share it
    assert device_plan(0, 1, 0) == (-1, 1)  # no GPU
    with pytest.raises(perfex.RequestError, match="GPU 4 requested, but the node has 4"):
        device_plan(0, 4, 4, requested=4)
    # The default budget: half the free memory over the sharers.
    assert _perfex.shared_device_budget(100 * 2**30, 5) == 10 * 2**30


class FakeCudaArray:
    """An object with __cuda_array_interface__ (cupy's), without a GPU."""

    def __init__(self, shape, typestr="<f8", strides=None):
        self.__cuda_array_interface__ = dict(
            shape=shape, typestr=typestr, strides=strides, data=(0x7F0000001000, False), version=3
        )


class FakeDlpackGpuArray:
    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0


def test_cuda_array_interface_is_read():
    assert cuda_array(FakeCudaArray((4128, 4114)), "pixels") == (0x7F0000001000, (4128, 4114))
    assert cuda_array(FakeCudaArray((10, 20), strides=(160, 8)), "pixels")[1] == (10, 20)
    for bad, match in (
        (FakeCudaArray((4, 5), typestr="<f4"), "float64"),
        (FakeCudaArray((4, 5), strides=(8, 32)), "C-contiguous"),
        (FakeCudaArray((4, 5, 6)), "2-D"),
    ):
        with pytest.raises(perfex.Error, match=match):
            cuda_array(bad, "pixels")


@pytest.mark.skipif("cuda" in perfex.backends(), reason="this build has a CUDA backend")
def test_device_arrays_are_refused_clearly_without_cuda(psf):
    for pixels in (FakeCudaArray((4128, 4114)), FakeDlpackGpuArray()):
        with pytest.raises(perfex.Error, match="GPU memory .* no CUDA backend .*cupy.asnumpy"):
            perfex.extract_frame(pixels, FakeCudaArray((4128, 4114)), psf, progress=False, **QUICK)


def test_image_of_only_the_pixels_read(masked, psf):
    """A preproc read as the frame's pixel box (region) extracts as the whole image does."""
    opts, _ = _perfex.resolve_request(perfex.make_options(**QUICK), psf, psf.npix_y, psf.npix_x)
    box = _perfex.plan_frame(psf, opts, psf.npix_y, psf.npix_x, "serial").pixel_box()
    part = perfex.read_preproc(masked.path, box=box)
    assert part.region == (box[0], box[2], psf.npix_y, psf.npix_x)
    assert part.pixels.shape == (box[1] - box[0], box[3] - box[2])
    assert part.pixels.size < masked.pixels.size / 10
    assert_frames_identical(
        perfex.extract_frame(part, psf=psf, progress=False, **QUICK),
        perfex.extract_frame(masked, psf=psf, progress=False, **QUICK),
    )
    assert perfex.images.preproc_shape(masked.path) == (psf.npix_y, psf.npix_x)


def test_exposure_with_overlapped_io_writes_the_same_frames(clean, masked, psf_path, tmp_path):
    inputs = [clean.path, masked.path, data_path("sim-r0-b0-1.fits.gz")]
    options = dict(wavelength="5760,5900,0.8", specmin=0, nspec=10, psferr=0.01)
    outputs = {}
    for overlap in (False, True):
        jobs = [
            perfex.mpi.FrameJob(
                image,
                psf_path,
                str(tmp_path / f"{overlap}-{n}.fits"),
                model=str(tmp_path / f"{overlap}-m{n}.fits") if n == 1 else None,
            )
            for n, image in enumerate(inputs)
        ]
        assert perfex.mpi.extract_frames(jobs, overlap=overlap, **options) == []
        outputs[overlap] = [perfex.read_frame(j.output) for j in jobs]
    for a, b in zip(outputs[False], outputs[True]):
        assert_frames_identical(a, b, FRAME_ARRAYS)
    fits = pytest.importorskip("astropy.io.fits")
    with fits.open(tmp_path / "False-m1.fits") as a, fits.open(tmp_path / "True-m1.fits") as b:
        # Patches add into the model with atomics: its last bits follow the threads' order.
        assert np.allclose(a[0].data, b[0].data, rtol=1e-12, atol=1e-12 * a[0].data.max())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
