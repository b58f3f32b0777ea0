"""perfex across MPI ranks (mpi4py communicators handed in by the caller, as desispec does).

One frame over the ranks of a communicator (extract_frame): the frame's bundles (the unit of
independent work) are dealt in contiguous blocks over the ranks; rank 0's PSF and options are
broadcast, and rank 0 sends each rank the block of pixels its bundles' spots reach (a rank
receives about its share of the image, not all of it); each
rank extracts its block with perfex; rank 0 gathers the rows (Gatherv, in fibre order),
recomputes the frame mask over all fibres and returns the frame. The result is bitwise the
single-process frame for any rank count.

Many frames (extract_frames, an exposure): the ranks split into groups (comm.Split), each
group extracts its share of the frames as above; a failing frame is reported by name and the
others complete.
"""

import logging
import os
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _perfex
from ._core import (
    Error,
    Frame,
    Image,
    PreprocImage,
    _as_float64,
    as_psf,
    bundle_ranges,
    cxx_options,
    frame_mask,
    make_options,
    progress_callback,
    read_preproc,
    read_psf,
    write_frame,
    write_model,
)
from ._runtime import check_backend, default_backend, initialize

log = logging.getLogger("perfex")


def deal(nitems, size):
    """Contiguous blocks of nitems over size ranks: rank r gets [start[r], start[r+1]); the
    first ranks get the larger blocks, ranks beyond nitems get none."""
    return [-(-r * nitems // size) for r in range(size + 1)]


def pixel_box(psf, opts, lo, hi, shape):
    """(r0, r1, c0, c1): the rows and columns the extraction of fibres [lo, hi) can read: the
    spot boxes (HSIZEX / HSIZEY each side of the traces) of their whole bundles (padding fibres
    come from the bundle) over the padded wavelength grid, with as much again for margin,
    within the CCD. None when that is empty."""
    d = psf.to_dict()
    bundlesize = opts["bundlesize"]
    f0 = lo // bundlesize * bundlesize
    f1 = min(-(-hi // bundlesize) * bundlesize, psf.nfib)
    wavepad = opts["wavepad0"] + int(opts["wavepad0"] * opts["wavepad_frac"])
    dw = opts["dw"]
    wave = np.linspace(opts["wmin"] - (wavepad + 1) * dw,
                       opts["wmax"] + (wavepad + opts["nwavestep"] + 1) * dw, 1024)
    box = []
    for axis, half, size in (("y", d["hsizey"], shape[0]), ("x", d["hsizex"], shape[1])):
        wmin, wmax = d[f"{axis}trace_wavemin"], d[f"{axis}trace_wavemax"]
        trace = np.polynomial.legendre.legval(2 * (wave - wmin) / (wmax - wmin) - 1,
                                              d[f"{axis}trace"][f0:f1].T)
        margin = 2 * half + 2
        box += [max(0, int(np.floor(trace.min())) - margin),
                min(size, int(np.ceil(trace.max())) + margin + 1)]
    return tuple(box) if box[1] > box[0] and box[3] > box[2] else None


def _image_arrays(image, ivar):
    """(pixels, ivar, Image or None): C-contiguous float64 arrays of the input (converted once
    when needed), and the Image when one was given."""
    if isinstance(image, Image):
        if ivar is not None:
            raise TypeError("ivar must not be given with a perfex.Image")
        return image.pixels, image.ivar, image
    if isinstance(image, PreprocImage):
        image, ivar = image.pixels, image.ivar
    if ivar is None:
        raise TypeError("ivar: required with a pixel array")
    pixels, _ = _as_float64(image, "pixels")
    weights, _ = _as_float64(ivar, "ivar")
    if pixels.ndim != 2 or pixels.shape != weights.shape:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {pixels.shape} "
                    f"and {weights.shape}")
    return pixels, weights, None


def _agree(comm, error):
    """Raises on every rank when any rank has an error (so no rank waits in a collective)."""
    errors = [e for e in comm.allgather(error) if e is not None]
    if errors:
        raise Error("; ".join(errors))


def extract_frame(comm, image, ivar=None, psf=None, *, backend=None, threads=None,
                  progress=None, timing=None, **options):
    """perfex.extract_frame over the ranks of comm. Every rank calls it; only rank 0's image,
    ivar, psf and options are used (the others may pass None). Rank 0 returns the Frame, the
    other ranks None. timing: a dict that receives time stamps of the stages (gpu_specter's
    keys)."""
    from mpi4py import MPI

    start = time.time()
    stamps = timing if isinstance(timing, dict) else {}
    stamps["init-mpi-comm"] = start
    initialize(threads, comm=comm)
    rank, size = comm.rank, comm.size

    # Rank 0 resolves the inputs; a problem there is raised on every rank.
    header, img, error = None, None, None
    if rank == 0:
        try:
            psf = as_psf(psf)
            opts = make_options(**options)
            ranges = bundle_ranges(opts, psf.nfib)
            backend = check_backend(backend or default_backend())
            pixels, weights, img = _image_arrays(image, ivar)
            start_of = deal(len(ranges), size)
            blocks = [ranges[start_of[r]:start_of[r + 1]] for r in range(size)]
            boxes = [pixel_box(psf, opts, b[0][0], b[-1][1], pixels.shape) if b and r else None
                     for r, b in enumerate(blocks)]
            header = dict(shape=pixels.shape, psf=psf, options=opts, ranges=ranges,
                          backend=backend, blocks=blocks, boxes=boxes)
        except Exception as e:
            error = e
    error = comm.bcast(error, root=0)
    if error is not None:
        raise error
    header = comm.bcast(header, root=0)
    shape, opts, ranges = header["shape"], header["options"], header["ranges"]

    # The image: each rank gets from rank 0 the pixels its bundles' spots can reach, as
    # contiguous blocks (single-copy transfers), and holds an image that ends with them (rows
    # and columns before the block are zeros; perfex reads none of them). Rank 0 checks its own
    # image meanwhile.
    blocks, boxes = header["blocks"], header["boxes"]
    image_error = None
    if rank == 0:
        sends = []
        for r in range(1, size):
            if boxes[r] is not None:
                r0, r1, c0, c1 = boxes[r]
                for tag, array in ((1, pixels), (2, weights)):
                    block = np.ascontiguousarray(array[r0:r1, c0:c1])
                    sends.append((comm.Isend([block, MPI.DOUBLE], dest=r, tag=tag), block))
        try:
            img = img or Image(pixels, weights)
        except Exception as e:  # raised on every rank below, once every rank is there
            image_error = f"rank 0: {type(e).__name__}: {e}"
        MPI.Request.Waitall([request for request, _ in sends])
    elif boxes[rank] is not None:
        r0, r1, c0, c1 = boxes[rank]
        pixels, weights = np.zeros((r1, c1)), np.zeros((r1, c1))
        block = np.empty((r1 - r0, c1 - c0))
        for tag, array in ((1, pixels), (2, weights)):
            comm.Recv([block, MPI.DOUBLE], source=0, tag=tag)
            array[r0:r1, c0:c1] = block
    stamps["init-mpi-bcast"] = stamps["host-to-device"] = time.time()

    # This rank's contiguous block of bundles.
    mine = blocks[rank]
    counts = [b[-1][1] - b[0][0] if b else 0 for b in blocks]
    local, error = None, image_error
    if mine and error is None:
        try:
            if rank != 0:
                img = Image(pixels, weights)
            lopts = dict(opts, specmin=mine[0][0], nspec=mine[-1][1] - mine[0][0])
            label = f"extract rank 0 (fibres {mine[0][0]}-{mine[-1][1] - 1})"
            callback = progress_callback(progress, label) if rank == 0 else None
            local = _perfex.extract_frame(img._handle, header["psf"], cxx_options(lopts),
                                          header["backend"], callback)
        except Exception as e:
            error = f"rank {rank}: {type(e).__name__}: {e}"
    _agree(comm, error)
    stamps["extracted-bundles"] = time.time()

    # Rank 0 (which always has work) knows the grid; the rows come in rank = fibre order.
    geometry = (local["wave"].size, local["resolution"].shape[1]) if rank == 0 else None
    nwave, nband = comm.bcast(geometry, root=0)
    nspec = sum(counts)

    def gather(name, row):
        send = local[name] if local is not None else np.empty(0, dtype=np.float64)
        recv = None
        if rank == 0:
            out = np.empty((nspec,) + row, dtype=np.float64)
            recv = [out, [c * int(np.prod(row)) for c in counts], MPI.DOUBLE]
        comm.Gatherv([np.ascontiguousarray(send), MPI.DOUBLE], recv, root=0)
        return recv[0] if rank == 0 else None

    arrays = {name: gather(name, (nwave,))
              for name in ("flux", "ivar", "chi2pix", "pixmask_fraction")}
    arrays["resolution"] = gather("resolution", (nband, nwave))
    model = None
    if opts["model_image"]:
        send = np.zeros(shape, dtype=np.float64)
        if local is not None:
            part = local["model"]
            send[:part.shape[0], :part.shape[1]] = part
        model = np.empty(shape, dtype=np.float64) if rank == 0 else None
        comm.Reduce([send, MPI.DOUBLE], [model, MPI.DOUBLE] if rank == 0 else None,
                    op=MPI.SUM, root=0)
    keys = ("npatches", "failed_patches", "linalg_flops", "max_band", "warnings")
    mine_stats = None
    if local is not None:
        mine_stats = {k: local[k] for k in keys}
        shift = mine[0][0] - opts["specmin"]  # this rank's first fibre in the frame
        mine_stats["failed_bins"] = [(f0 + shift, nf, k0, nk)
                                     for f0, nf, k0, nk in local["failed_bins"]]
    stats = comm.gather(mine_stats, root=0)
    stamps["staged-bundles"] = time.time()
    if rank != 0:
        return None

    warnings = list(local["warnings"])
    for s in stats[1:]:
        if s is not None:  # the other ranks' NaN/Inf counts are of their columns only
            warnings += [w for w in s["warnings"] if "NaN/Inf" not in w]
    stats = [s for s in stats if s is not None]
    failed_bins = [b for s in stats for b in s["failed_bins"]]
    frame = Frame(
        mask=frame_mask(arrays["chi2pix"], arrays["pixmask_fraction"], arrays["ivar"],
                        failed_bins),
        wave=local["wave"],
        specmin=ranges[0][0],
        model=model,
        options=dict(local["options"], specmin=opts["specmin"], nspec=opts["nspec"]),
        npatches=sum(s["npatches"] for s in stats),
        failed_patches=sum(s["failed_patches"] for s in stats),
        failed_bins=failed_bins,
        nonfinite_pixels=local["nonfinite_pixels"],
        seconds=time.time() - start,
        linalg_flops=sum(s["linalg_flops"] for s in stats),
        max_band=max(s["max_band"] for s in stats),
        warnings=warnings,
        **arrays,
    )
    stamps["merged-bundles"] = stamps["assembled-frame"] = time.time()
    return frame


# ---- many frames ------------------------------------------------------------------------------


@dataclass
class FrameJob:
    """One frame of an exposure: preproc image, PSF, output frame file, optional model file and
    fibermap file (whose FIBERMAP rows [specmin, specmin + nspec) replace the frame's)."""

    input: str
    psf: str
    output: str
    model: Optional[str] = None
    fibermap: Optional[str] = None

    @property
    def name(self):
        return os.path.basename(self.output)


def psf_default_options(psf, options):
    """desi_extract_spectra's PSF-dependent defaults: wavelength None -> the PSF's
    WAVEMIN,WAVEMAX with dw 0.8; nspec None -> 500 (at most the PSF's fibres from specmin)."""
    opts = dict(options)
    if opts.get("wavelength") is None:
        opts["wavelength"] = (psf.wavemin, psf.wavemax, 0.8)
    if opts.get("nspec") is None:
        opts["nspec"] = max(1, min(500, psf.nfib - opts.get("specmin", 0)))
    return opts


def replace_fibermap(path, fibermap_file, specmin, nspec):
    """Replaces the FIBERMAP HDU of a frame file by rows [specmin, specmin + nspec) of the
    FIBERMAP of fibermap_file (desi_extract_spectra -f), through a temporary file."""
    try:
        from astropy.io import fits
    except ImportError:
        raise Error("-f/--fibermap needs astropy (Debian: python3-astropy)") from None
    tmp = f"{path}.fibermap-tmp"
    try:
        with fits.open(fibermap_file) as fm, fits.open(path) as frame:
            if "FIBERMAP" not in fm:
                raise Error(f"fibermap file '{fibermap_file}' has no FIBERMAP HDU")
            data = fm["FIBERMAP"].data
            if len(data) < specmin + nspec:
                raise Error(f"fibermap file '{fibermap_file}': FIBERMAP has {len(data)} rows, "
                            f"fibres {specmin}-{specmin + nspec - 1} need {specmin + nspec}")
            rows = data[specmin:specmin + nspec]
            table = fits.BinTableHDU(data=rows, header=fm["FIBERMAP"].header, name="FIBERMAP")
            hdus = fits.HDUList([table if h.name == "FIBERMAP" else h for h in frame])
            hdus.writeto(tmp, checksum=True, overwrite=True)
        os.replace(tmp, path)
    except OSError as e:
        raise Error(f"fibermap file '{fibermap_file}': {e}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _extract_job(job, group, backend, threads, options):
    """Extracts and writes one frame with the ranks of group (None: this process alone).
    Returns None or the error message (the same on every rank of the group)."""
    rank = 0 if group is None else group.rank
    t0 = time.time()
    pre = psf = opts = None
    error = None
    if rank == 0:
        try:
            psf = read_psf(job.psf)
            pre = read_preproc(job.input)
            opts = psf_default_options(psf, options)
            opts["model_image"] = job.model is not None
            log.info("frame %s: extracting %s with %s%s", job.name, job.input, job.psf,
                     "" if group is None else f" on {group.size} ranks")
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
    if group is not None:
        error = group.bcast(error, root=0)
    if error is not None:
        return error
    try:
        frame = (
            extract_frame(group, pre, None, psf, backend=backend, threads=threads, **(opts or {}))
            if group is not None and group.size > 1
            else _local_extract(pre, psf, backend, threads, opts)
        )
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    if rank == 0:
        try:
            if job.fibermap:  # the whole frame file, or none
                tmp = os.path.join(os.path.dirname(job.output) or ".", f".{job.name}.perfex-tmp")
                try:
                    write_frame(tmp, frame, job.input, job.psf)
                    replace_fibermap(tmp, job.fibermap, frame.specmin, frame.nspec)
                    os.replace(tmp, job.output)
                finally:
                    if os.path.exists(tmp):
                        os.remove(tmp)
            else:
                write_frame(job.output, frame, job.input, job.psf)
            if job.model:
                write_model(job.model, frame, job.input, job.psf)
            for w in frame.warnings:
                log.warning("frame %s: %s", job.name, w)
            log.info("frame %s: %d fibres x %d wavelengths written in %.1f s", job.name,
                     frame.nspec, frame.nwave, time.time() - t0)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
    return error if group is None else group.bcast(error, root=0)


def _local_extract(pre, psf, backend, threads, opts):
    from ._core import extract_frame as extract_local

    return extract_local(pre, None, psf, backend=backend, threads=threads, **opts)


def extract_frames(jobs, comm=None, *, backend=None, threads=None, **options):
    """Extracts and writes every FrameJob: alone (comm None) or with the ranks of comm split
    into min(len(jobs), comm.size) groups, group g taking jobs g, g + ngroups, ... Every rank
    returns the list of (job, error message) for the frames that failed (the others were
    written). options: as perfex.extract_frame's; wavelength=None and nspec=None take the
    PSF-dependent defaults of desi_extract_spectra (psf_default_options)."""
    jobs = list(jobs)
    if comm is None or comm.size == 1:
        initialize(threads)
        failed = []
        for job in jobs:
            error = _extract_job(job, None, backend, threads, options)
            if error is not None:
                log.error("frame %s: FAILED: %s", job.name, error)
                failed.append((job, error))
        return failed
    initialize(threads, comm=comm)
    ngroups = max(1, min(len(jobs), comm.size))
    color = comm.rank * ngroups // comm.size
    group = comm.Split(color, comm.rank)
    try:
        mine = []
        for i in range(color, len(jobs), ngroups):
            error = _extract_job(jobs[i], group, backend, threads, options)
            if error is not None and group.rank == 0:
                log.error("frame %s: FAILED: %s", jobs[i].name, error)
            if error is not None:
                mine.append((i, error))
        failed = comm.allgather(mine if group.rank == 0 else [])
    finally:
        group.Free()
    return [(jobs[i], e) for part in failed for i, e in part]
