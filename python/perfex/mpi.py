"""perfex across MPI ranks (mpi4py communicators handed in by the caller, as desispec does).

One frame over the ranks of a communicator (extract_frame): rank 0 resolves the request (the
same checks as perfex-extract) and plans the frame; the plan's patches are dealt in contiguous
ranges of about equal work (the patch linear algebra's flop counts) over the ranks, so any
rank count gets an even share, more ranks than bundles included. Rank 0 sends each rank only
the pixels its patches read; each rank extracts its patches; rank 0 gathers their bins into
the frame, recomputes the frame mask over all fibres and returns the frame. The result is
bitwise the single-process frame for any rank count. A rank that waits (for its pixels, for
the others to finish) sleeps in short polls instead of spinning in MPI.

Many frames (extract_frames, an exposure): the ranks split into groups (comm.Split), each group
extracts its share of the frames as above; a failing frame is reported by name and the others
complete. Every decision that could end a rank early (a bad input, a refused request) is
agreed on by all ranks before any collective that would otherwise wait for it.
"""

import logging
import os
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _perfex
from ._perfex import Error, RequestError
from .extraction import extract_frame as extract_local
from .extraction import progress_callback
from .frames import Frame, check_outputs, frame_mask, write_frame, write_model
from .images import Image, PreprocImage, _as_float64, as_psf, preproc_shape, read_preproc, read_psf
from .options import make_options
from .runtime import check_backend, default_backend, initialize

log = logging.getLogger("perfex")

# How long a waiting rank sleeps between two looks at its pending MPI operation.
_POLL_SECONDS = 0.001


# Rank 0's own work for a frame besides its patches (resolving and planning the request,
# sending each rank its pixels, gathering and placing the bins, the frame mask), as a share of
# the frame's extraction: measured at 5-7 % on 500-fibre frames with 4 to 16 ranks (it grows
# with the ranks it sends to and gathers from). From 15 ranks on, rank 0 only coordinates.
ROOT_OVERHEAD = 0.07


def deal(costs, size, root_overhead=0.0):
    """Contiguous ranges of items with the given costs over size ranks, of about equal total
    cost, rank 0's reduced by root_overhead (a share of the whole; rank 0 gets none when that
    exceeds its share): rank r gets [start[r], start[r+1]). Ranks beyond the items get empty
    ranges."""
    costs = np.asarray(costs, dtype=np.float64)
    if costs.size == 0:
        return [0] * (size + 1)
    root = max(0.0, 1.0 / size - root_overhead) if size > 1 else 1.0
    shares = np.concatenate(([0.0, root], root + (1.0 - root) * np.arange(1, size) / max(1, size - 1)))
    cumulative = np.concatenate(([0.0], np.cumsum(costs)))
    start = np.searchsorted(cumulative, cumulative[-1] * shares[: size + 1], side="left")
    start = np.clip(start, 0, costs.size)
    start[0], start[-1] = 0, costs.size
    return [int(s) for s in np.maximum.accumulate(start)]


def wait_idle(request):
    """Completes an mpi4py request, sleeping between tests (no busy wait); returns its result."""
    while not request.Test():
        time.sleep(_POLL_SECONDS)
    return request.wait() if hasattr(request, "wait") else None


def idle_barrier(comm):
    """A barrier where waiting ranks sleep instead of spinning."""
    wait_idle(comm.Ibarrier())


def agree(comm, error):
    """Raises on every rank when any rank has an error (so no rank waits in a collective): a
    RequestError when every failure is one (a refused request), else an Error."""
    idle_barrier(comm)
    errors = [e for e in comm.allgather(error) if e is not None]
    if errors:
        refused = all(isinstance(e, RequestError) for e in errors)
        text = "; ".join(str(e) for e in errors)
        raise RequestError(text) if refused else Error(text)


def on_root(comm, prepare):
    """prepare() on rank 0 and its result on every rank; an exception there is raised on every
    rank (as RequestError or Error, with its message), none waiting forever."""
    result, error = None, None
    if comm.rank == 0:
        try:
            result = prepare()
        except RequestError as e:
            error = RequestError(str(e))
        except Exception as e:
            error = Error(f"{type(e).__name__}: {e}" if not isinstance(e, Error) else str(e))
    idle_barrier(comm)
    error = comm.bcast(error, root=0)
    if error is not None:
        raise error
    return comm.bcast(result, root=0)


def _image_arrays(image, ivar):
    """(pixels, ivar, Image or None, region): C-contiguous float64 arrays of the input (converted
    once when needed), the Image when one was given, and where the arrays sit on the CCD
    ((row0, col0, ccd_rows, ccd_cols), None: they are the CCD)."""
    if isinstance(image, Image):
        if ivar is not None:
            raise TypeError("ivar must not be given with a perfex.Image")
        return image.pixels, image.ivar, image, image.region
    region = None
    if isinstance(image, PreprocImage):
        image, ivar, region = image.pixels, image.ivar, image.region
    if ivar is None:
        raise TypeError("ivar: required with a pixel array")
    pixels, _ = _as_float64(image, "pixels")
    weights, _ = _as_float64(ivar, "ivar")
    if pixels.ndim != 2 or pixels.shape != weights.shape:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {pixels.shape} and {weights.shape}")
    return pixels, weights, None, region


def pack_blocks(array, blocks):
    """The bins of patch blocks (out_fibre0, nkeepfib, kf0, nkeep) of a [nspec][nwave] or
    [nspec][ndiags][nwave] frame array, block after block, as one flat array."""
    parts = [array[f0 : f0 + nf, ..., k0 : k0 + nk].ravel() for f0, nf, k0, nk in blocks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=array.dtype)


def unpack_blocks(flat, blocks, out):
    """pack_blocks' inverse: the bins of flat into their blocks of out."""
    pos = 0
    for f0, nf, k0, nk in blocks:
        target = out[f0 : f0 + nf, ..., k0 : k0 + nk]
        target[...] = flat[pos : pos + target.size].reshape(target.shape)
        pos += target.size
    return out


_BIN_ARRAYS = ("flux", "ivar", "chi2pix", "pixmask_fraction")


def extract_frame(
    comm,
    image,
    ivar=None,
    psf=None,
    *,
    backend=None,
    threads=None,
    progress=None,
    timing=None,
    work=None,
    allow_image_size_mismatch=False,
    **options,
):
    """perfex.extract_frame over the ranks of comm. Every rank calls it; only rank 0's image,
    ivar, psf and options are used (the others may pass None). Rank 0 returns the Frame, the
    other ranks None. timing: a dict that receives time stamps of the stages (gpu_specter's
    keys); work: a dict that receives this rank's share ("patches": the patches it solved,
    "first": the first of them)."""
    from mpi4py import MPI

    start = time.time()
    stamps = timing if isinstance(timing, dict) else {}
    stamps["init-mpi-comm"] = start
    initialize(threads, comm=comm)
    rank, size = comm.rank, comm.size
    pixels = weights = img = region = None

    def prepare():
        nonlocal pixels, weights, img, region
        frame_psf = as_psf(psf)
        nspec_given = "nspec" in options
        opts = make_options(**options)
        name = check_backend(backend or default_backend())
        pixels, weights, img, region = _image_arrays(image, ivar)
        ccd = region[2:] if region else pixels.shape
        resolved, warnings = _perfex.resolve_request(
            opts, frame_psf, ccd[0], ccd[1], True, nspec_given, bool(allow_image_size_mismatch)
        )
        plan = _perfex.plan_frame(frame_psf, resolved, ccd[0], ccd[1], name)
        starts = deal(plan.flops, size, ROOT_OVERHEAD)
        boxes = [plan.pixel_box(starts[r], starts[r + 1]) if starts[r] < starts[r + 1] else None for r in range(size)]
        return dict(
            shape=tuple(ccd),
            psf=frame_psf,
            options=resolved,
            backend=name,
            starts=starts,
            boxes=boxes,
            blocks=plan.blocks(),
            nwave=plan.nwave,
            ndiags=2 * plan.ndiag + 1,
            nspec=resolved["nspec"],
            warnings=warnings,
            nspec_given=nspec_given,
        )

    header = on_root(comm, prepare)
    shape, opts, starts = header["shape"], header["options"], header["starts"]
    first, last = starts[rank], starts[rank + 1]
    if isinstance(work, dict):
        work.update(patches=last - first, first=first)

    # The pixels: each rank gets from rank 0 the rectangle its patches read (single-copy
    # transfers) and holds an image of just that rectangle, placed on the CCD. Rank 0 checks its
    # own image meanwhile.
    boxes = header["boxes"]
    image_error = None
    if rank == 0:
        sends = []
        dr, dc = region[:2] if region else (0, 0)  # rank 0 may hold only the pixels needed
        for r in range(1, size):
            if boxes[r] is not None:
                r0, r1, c0, c1 = boxes[r]
                for tag, array in ((1, pixels), (2, weights)):
                    block = np.ascontiguousarray(array[r0 - dr : r1 - dr, c0 - dc : c1 - dc])
                    sends.append((comm.Isend([block, MPI.DOUBLE], dest=r, tag=tag), block))
        try:
            img = img or Image(pixels, weights, region)
        except Exception as e:  # raised on every rank below, once every rank is there
            image_error = Error(f"rank 0: {e}")
        for request, _ in sends:
            wait_idle(request)
    elif boxes[rank] is not None:
        r0, r1, c0, c1 = boxes[rank]
        pixels, weights = np.empty((r1 - r0, c1 - c0)), np.empty((r1 - r0, c1 - c0))
        for tag, array in ((1, pixels), (2, weights)):
            wait_idle(comm.Irecv([array, MPI.DOUBLE], source=0, tag=tag))
    stamps["init-mpi-bcast"] = stamps["host-to-device"] = time.time()

    local, error = None, image_error
    if (first < last or rank == 0) and error is None:  # rank 0 also when it only coordinates
        try:
            if rank != 0:
                r0, r1, c0, c1 = boxes[rank]
                img = Image(pixels, weights, (r0, c0, shape[0], shape[1]))
            label = f"extract rank 0 (patches {first}-{last - 1} of {starts[-1]})"
            callback = progress_callback(progress, label) if rank == 0 else None
            local = _perfex.extract_frame(
                img._handle,
                header["psf"],
                opts,
                True,
                bool(allow_image_size_mismatch),
                header["backend"],
                callback,
                first,
                last,
            )
        except Exception as e:
            error = Error(f"rank {rank}: {type(e).__name__}: {e}")
    agree(comm, error)
    stamps["extracted-bundles"] = time.time()

    # Each rank's bins, in its patches' order; rank 0 places them by the same plan.
    nwave, ndiags, nspec = header["nwave"], header["ndiags"], header["nspec"]
    blocks = header["blocks"]
    mine = blocks[first:last]
    counts = [
        int(np.sum(blocks[starts[r] : starts[r + 1], 1] * blocks[starts[r] : starts[r + 1], 3])) for r in range(size)
    ]

    def gather(name, ndiag=None):
        send = pack_blocks(local[name], mine) if local is not None else np.empty(0)
        per_bin = 1 if ndiag is None else ndiag
        recv = None
        if rank == 0:
            recv = [np.empty(sum(counts) * per_bin), [c * per_bin for c in counts], MPI.DOUBLE]
        wait_idle(comm.Igatherv([np.ascontiguousarray(send), MPI.DOUBLE], recv, root=0))
        if rank != 0:
            return None
        out = np.zeros((nspec, nwave) if ndiag is None else (nspec, ndiag, nwave))
        # Gatherv puts the ranks' parts in rank order: the plan's patch order.
        return unpack_blocks(recv[0], blocks, out)

    arrays = {name: gather(name) for name in _BIN_ARRAYS}
    arrays["resolution"] = gather("resolution", ndiags)
    model = None
    if opts["model_image"]:
        send = np.zeros(shape) if local is None else local["model"]
        model = np.empty(shape) if rank == 0 else None
        wait_idle(
            comm.Ireduce(
                [np.ascontiguousarray(send), MPI.DOUBLE], [model, MPI.DOUBLE] if rank == 0 else None, op=MPI.SUM, root=0
            )
        )
    keys = ("npatches", "failed_patches", "linalg_flops", "max_band", "warnings", "failed_bins")
    mine_stats = {k: local[k] for k in keys} if local is not None else None
    idle_barrier(comm)
    stats = comm.gather(mine_stats, root=0)
    stamps["staged-bundles"] = stamps["merged-bundles"] = time.time()
    if rank != 0:
        stamps["assembled-frame"] = time.time()
        return None

    warnings = list(header["warnings"])
    for r, s in enumerate(stats):
        if s is None:
            continue
        # Only rank 0 holds the whole image: the others' NaN/Inf counts are of their pixels.
        warnings += [w for w in s["warnings"] if w not in header["warnings"] and (r == 0 or "NaN/Inf" not in w)]
    stats = [s for s in stats if s is not None]
    failed_bins = sorted(tuple(b) for s in stats for b in s["failed_bins"])
    frame = Frame(
        mask=frame_mask(arrays["chi2pix"], arrays["pixmask_fraction"], arrays["ivar"], failed_bins),
        wave=local["wave"],
        specmin=opts["specmin"],
        model=model,
        options=local["options"],
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
    for warning in frame.warnings:
        log.warning("%s", warning)
    stamps["assembled-frame"] = time.time()
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


# How extract_frames reports a frame written with failed patches (their bins masked).
FAILED_PATCHES = "FailedPatches"


def _failed_patches(job, failed, total):
    return (
        f"{FAILED_PATCHES}: {failed} of {total} patches failed; their bins are masked BAD2DFIT | NODATA in {job.output}"
    )


# desi_extract_spectra's option names, for the messages of the command line.
CLI_NAMES = dict(input="-i/--input", psf="-p/--psf", output="-o/--output", model="-m/--model", fibermap="-f/--fibermap")


def check_jobs(jobs):
    """Raises RequestError unless every job's outputs can be written and none is an input or an
    output of any job (the same file by device and inode, or by folder and name): so two
    outputs d/a.fits and d/./a.fits, or a model that is another frame's input, are refused
    before any work."""
    outputs, inputs = [], []
    for n, job in enumerate(jobs, 1):
        where = f" (frame {n}, {job.name})" if len(jobs) > 1 else ""
        outputs += [(CLI_NAMES["output"] + where, job.output), (CLI_NAMES["model"] + where, job.model)]
        inputs += [
            (CLI_NAMES["input"] + where, job.input),
            (CLI_NAMES["psf"] + where, job.psf),
            (CLI_NAMES["fibermap"] + where, job.fibermap),
        ]
    check_outputs(outputs, inputs, prefix="option ")


def _request(options):
    """(options dict, wavelength_given, nspec_given) of the command line's options, where
    wavelength None and nspec None take desi_extract_spectra's PSF-dependent defaults."""
    opts = dict(options)
    wavelength_given = opts.get("wavelength") is not None
    nspec_given = opts.get("nspec") is not None
    if not wavelength_given:
        opts.pop("wavelength", None)
    if not nspec_given:
        opts.pop("nspec", None)
    return make_options(**opts), wavelength_given, nspec_given


def _extract_job(job, group, backend, threads, options):
    """Extracts and writes one frame with the ranks of group (None: this process alone).
    Returns None or the error message (the same on every rank of the group)."""
    rank = 0 if group is None else group.rank
    t0 = time.time()
    opts, wavelength_given, nspec_given = _request(options)
    opts["model_image"] = job.model is not None
    try:
        if group is None or group.size == 1:
            # perfex-extract's whole job: reads only the pixels its patches touch.
            log.info("frame %s: extracting %s with %s", job.name, job.input, job.psf)
            result = _perfex.extract_files(
                job.input,
                job.psf,
                job.output,
                job.model or "",
                job.fibermap or "",
                opts,
                wavelength_given,
                nspec_given,
                False,
                backend,
                progress_callback(None, f"frame {job.name}"),
                lambda w: log.warning("frame %s: %s", job.name, w),
            )
            for w in result["frame_warnings"]:
                log.warning("frame %s: %s", job.name, w)
            log.info(
                "frame %s: %d fibres x %d wavelengths written in %.1f s",
                job.name,
                result["nspec"],
                result["nwave"],
                time.time() - t0,
            )
            if result["failed_patches"]:
                return _failed_patches(job, result["failed_patches"], result["npatches"])
            return None
        pre = psf = None

        def read():
            # perfex-extract's order: the PSF, the request, the plan, then only the pixels the
            # patches read.
            nonlocal pre, psf
            psf = read_psf(job.psf)
            rows, cols = preproc_shape(job.input)
            resolved, _ = _perfex.resolve_request(opts, psf, rows, cols, wavelength_given, nspec_given, False, True)
            box = _perfex.plan_frame(psf, resolved, rows, cols, backend).pixel_box()
            pre = read_preproc(job.input, box=box)
            log.info("frame %s: extracting %s with %s on %d ranks", job.name, job.input, job.psf, group.size)
            return resolved

        resolved = on_root(group, read)
        frame = extract_frame(group, pre, None, psf, backend=backend, threads=threads, **_api_options(resolved))
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    error = None
    if rank == 0:
        try:
            write_frame(job.output, frame, job.input, job.psf, job.fibermap)
            if job.model:
                write_model(job.model, frame, job.input, job.psf)
            log.info(
                "frame %s: %d fibres x %d wavelengths written in %.1f s",
                job.name,
                frame.nspec,
                frame.nwave,
                time.time() - t0,
            )
            if frame.failed_patches:
                error = _failed_patches(job, frame.failed_patches, frame.npatches)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
    idle_barrier(group)
    return group.bcast(error, root=0)


def _overlapped_exposure(jobs, backend, options):
    """The frames of an exposure in one process, I/O overlapped with the extraction: while frame
    i extracts (on the runtime's threads), a reader thread reads frame i+1's pixels (only those
    its patches read) and a writer thread writes frame i-1. The same checks and files as one
    frame at a time; returns each frame's error message or None."""
    from concurrent.futures import ThreadPoolExecutor

    opts, wavelength_given, nspec_given = _request(options)

    def prepare(job):
        """The PSF, the request checked as perfex-extract checks it, and the pixels to read
        (on the caller's thread: the plan runs on the runtime), then the read in the reader."""
        psf = read_psf(job.psf)
        rows, cols = preproc_shape(job.input)
        job_opts = dict(opts, model_image=job.model is not None)
        resolved, warnings = _perfex.resolve_request(
            job_opts, psf, rows, cols, wavelength_given, nspec_given, False, True
        )
        box = _perfex.plan_frame(psf, resolved, rows, cols, backend).pixel_box()
        return psf, resolved, warnings, reader.submit(read_preproc, job.input, 0x2FF, box)

    def write(job, frame):
        write_frame(job.output, frame, job.input, job.psf, job.fibermap)
        if job.model:
            write_model(job.model, frame, job.input, job.psf)

    def failure(e):
        return f"{type(e).__name__}: {e}"

    errors = [None] * len(jobs)
    with ThreadPoolExecutor(1) as reader, ThreadPoolExecutor(1) as writer:
        prepared, pending = {}, None

        def prepare_next(i):
            if i < len(jobs):
                try:
                    prepared[i] = prepare(jobs[i])
                except Exception as e:
                    errors[i] = failure(e)

        def finish(write):
            """Waits for a frame's write (at most one frame is held beyond the current one)."""
            i, job, frame, t0, done = write
            try:
                done.result()
                log.info(
                    "frame %s: %d fibres x %d wavelengths written in %.1f s",
                    job.name,
                    frame.nspec,
                    frame.nwave,
                    time.time() - t0,
                )
                if frame.failed_patches:
                    errors[i] = _failed_patches(job, frame.failed_patches, frame.npatches)
            except Exception as e:
                errors[i] = failure(e)

        prepare_next(0)
        for i, job in enumerate(jobs):
            t0 = time.time()
            prepare_next(i + 1)  # its pixels read while this frame extracts
            if errors[i] is not None:
                continue
            psf, resolved, warnings, image = prepared.pop(i)
            try:
                log.info("frame %s: extracting %s with %s", job.name, job.input, job.psf)
                frame = extract_local(
                    image.result(), psf=psf, backend=backend, progress=False, **_api_options(resolved)
                )
                for w in dict.fromkeys(warnings + frame.warnings):
                    log.warning("frame %s: %s", job.name, w)
            except Exception as e:
                errors[i] = failure(e)
                continue
            if pending is not None:
                finish(pending)
            pending = (i, job, frame, t0, writer.submit(write, job, frame))
        if pending is not None:
            finish(pending)
    return errors


def _api_options(resolved):
    """perfex.extract_frame keywords of a resolved options dict."""
    opts = dict(resolved)
    opts["wavelength"] = (opts.pop("wmin"), opts.pop("wmax"), opts.pop("dw"))
    if opts["psferr"] < 0:
        opts["psferr"] = None
    return opts


def extract_frames(jobs, comm=None, *, backend=None, threads=None, overlap=True, **options):
    """Extracts and writes every FrameJob: alone (comm None) or with the ranks of comm split
    into min(len(jobs), comm.size) groups, group g taking jobs g, g + ngroups, ... Every rank
    returns the list of (job, error message) for the frames that failed (the others were
    written). options: as perfex.extract_frame's; wavelength=None and nspec=None take the
    PSF-dependent defaults of desi_extract_spectra. The jobs' outputs are checked against each
    other and every input before any work (check_jobs). overlap: in one process, read the next
    frame's pixels and write the last frame in background threads while a frame extracts."""
    jobs = list(jobs)
    backend = check_backend(backend or default_backend())
    if comm is None or comm.size == 1:
        check_jobs(jobs)
        initialize(threads)
        if len(jobs) == 1 or not overlap:
            errors = [_extract_job(job, None, backend, threads, options) for job in jobs]
        else:
            errors = _overlapped_exposure(jobs, backend, options)
        failed = []
        for job, error in zip(jobs, errors):
            if error is not None:
                log.error("frame %s: FAILED: %s", job.name, error)
                failed.append((job, error))
        return failed
    on_root(comm, lambda: check_jobs(jobs))
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
        idle_barrier(comm)
        failed = comm.allgather(mine if group.rank == 0 else [])
    finally:
        group.Free()
    return [(jobs[i], e) for part in failed for i, e in part]
