"""One frame over the ranks of an MPI communicator (mpi4py, handed in by the caller as desispec
does): extract_over_ranks.

Rank 0 checks and plans the job (the library's job::check and job::plan: the same checks as
perfex-extract); the plan's patches are dealt in contiguous ranges of about equal work (the
patch linear algebra's flop counts) over the ranks, so any rank count gets an even share, more
ranks than bundles included. Rank 0 sends each rank only the pixels its patches read; each rank
plans the job too and extracts its patches (job::extract of a range); rank 0 gathers their bins
into the frame, recomputes the frame mask over all fibres and returns the frame. The result is
bitwise the single-process frame for any rank count. A rank that waits (for its pixels, for the
others to finish) sleeps in short polls instead of spinning in MPI. An error on any rank is
raised on every rank as its class (perfex.collective).

The driver's phases, each a profiling region, on every rank: mpi::check (rank 0: job::check and
job::plan inside), mpi::scatter, mpi::extract (job::extract inside), mpi::gather, mpi::assemble.
"""

import logging
import time

import numpy as np

from ._perfex import Error
from .collective import RankError, agree, deal, idle_barrier, on_root, pack_blocks, unpack_blocks, wait_idle
from .extraction import check_job, job_of, progress_callback
from .frames import Frame, frame_mask
from .images import Image, PreprocImage, _as_float64, unmasked
from .profiling import PhaseTimes
from .psf import as_psf
from .runtime import initialize

log = logging.getLogger("perfex")

# Rank 0's own work for a frame besides its patches (checking and planning the job, sending
# each rank its pixels, gathering and placing the bins, the frame mask), as a share of the
# frame's extraction: measured at 5-7 % on 500-fibre frames with 4 to 16 ranks (it grows with the
# ranks it sends to and gathers from). From 15 ranks on, rank 0 only coordinates.
ROOT_OVERHEAD = 0.07

_BIN_ARRAYS = ("flux", "ivar", "chi2pix", "pixmask_fraction")


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
    image, ivar = unmasked(image, ivar)
    pixels, _ = _as_float64(image, "pixels")
    weights, _ = _as_float64(ivar, "ivar")
    if pixels.ndim != 2 or pixels.shape != weights.shape:
        raise Error(f"image: pixels and ivar must be 2-D arrays of one shape, got {pixels.shape} and {weights.shape}")
    return pixels, weights, None, region


def extract_over_ranks(
    comm,
    image,
    ivar=None,
    psf=None,
    *,
    backend=None,
    threads=None,
    progress=None,
    phases=None,
    work=None,
    allow_image_size_mismatch=False,
    job=None,
    log_warnings=True,
    **options,
):
    """perfex.extract_frame over the ranks of comm. Every rank calls it; only rank 0's image,
    ivar, psf and options are used (the others may pass None). Rank 0 returns the Frame (its
    phases: rank 0's), the other ranks None. phases: a list that receives this rank's phases
    (name, depth, seconds); work: a dict that receives this rank's share ("patches": the patches
    it solved, "first": the first of them); job: rank 0's job, checked and planned already for
    this image (a frame's files: perfex.files), instead of the options (psf: the job's)."""
    from mpi4py import MPI

    start = time.time()
    initialize(threads, comm=comm)
    rank, size = comm.rank, comm.size
    times = PhaseTimes()
    pixels = weights = img = region = None
    local_job = job

    def prepare():
        nonlocal pixels, weights, img, region, local_job, job_phases
        pixels, weights, img, region = _image_arrays(image, ivar)
        frame_psf = as_psf(psf)
        if local_job is None:
            ccd = region[2:] if region else pixels.shape
            local_job = check_job(
                frame_psf, ccd, backend=backend, allow_image_size_mismatch=allow_image_size_mismatch, **options
            )
        local_job.plan()
        starts = deal(local_job.flops, size, ROOT_OVERHEAD)
        boxes = [
            local_job.pixel_box(starts[r], starts[r + 1]) if starts[r] < starts[r + 1] else None for r in range(size)
        ]
        return dict(
            shape=local_job.ccd_shape,
            psf=frame_psf,
            options=local_job.options,
            backend=local_job.backend,
            starts=starts,
            boxes=boxes,
            blocks=local_job.blocks(),
            nwave=local_job.nwave,
            ndiags=2 * local_job.ndiag + 1,
            warnings=local_job.warnings,
        )

    # The job's phases run here, nested in this driver's: those of a given job before this call
    # are its caller's.
    job_phases = len(job.phases) if job is not None else 0
    with times.phase("mpi::check"):
        header = on_root(comm, prepare)
    if rank == 0:
        times.extend(local_job.phases[job_phases:], 1)
        job_phases = len(local_job.phases)
    shape, opts, starts = header["shape"], header["options"], header["starts"]
    first, last = starts[rank], starts[rank + 1]
    if isinstance(work, dict):
        work.update(patches=last - first, first=first)

    # The pixels: each rank gets from rank 0 the rectangle its patches read (single-copy
    # transfers) and holds an image of just that rectangle, placed on the CCD. Rank 0 checks its
    # own image meanwhile.
    boxes = header["boxes"]
    error = None
    with times.phase("mpi::scatter"):
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
                error = RankError.of(e, f"rank 0: {e}")
            for request, _ in sends:
                wait_idle(request)
        elif boxes[rank] is not None:
            r0, r1, c0, c1 = boxes[rank]
            pixels, weights = np.empty((r1 - r0, c1 - c0)), np.empty((r1 - r0, c1 - c0))
            for tag, array in ((1, pixels), (2, weights)):
                wait_idle(comm.Irecv([array, MPI.DOUBLE], source=0, tag=tag))

    local = None
    with times.phase("mpi::extract"):
        if (first < last or rank == 0) and error is None:  # rank 0 also when it only coordinates
            try:
                if rank != 0:
                    r0, r1, c0, c1 = boxes[rank]
                    img = Image(pixels, weights, (r0, c0, shape[0], shape[1]))
                    local_job = job_of(header["psf"], shape, opts, header["backend"], allow_image_size_mismatch)
                label = f"extract rank 0 (patches {first}-{last - 1} of {starts[-1]})"
                callback = progress_callback(progress, label) if rank == 0 else None
                # Ranks other than 0 return their model's blocks, which rank 0 adds after its own.
                local = local_job.extract(img._handle, callback, first, last, model_blocks=rank != 0)
            except Exception as e:
                error = RankError.of(e, f"rank {rank}: {e}")
        agree(comm, error)
    if local is not None:
        times.extend(local["phases"][job_phases:], 1)

    with times.phase("mpi::gather"):
        # Each rank's bins, in its patches' order; rank 0 places them by the same plan.
        nwave, ndiags, nspec = header["nwave"], header["ndiags"], opts["nspec"]
        blocks = header["blocks"]
        mine = blocks[first:last]
        counts = [
            int(np.sum(blocks[starts[r] : starts[r + 1], 1] * blocks[starts[r] : starts[r + 1], 3]))
            for r in range(size)
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
            # Rank 0's image holds the patches from the plan's first; it adds the other ranks'
            # blocks, rank after rank, in the plan's order: the one-process image to the last bit.
            send = local.get("model_blocks") if local is not None and rank != 0 else None
            send = np.ascontiguousarray(np.empty(0) if send is None else send)
            recv = sizes = None
            if rank == 0:
                sizes = [0] + [local_job.model_block_values(starts[r], starts[r + 1]) for r in range(1, size)]
                recv = [np.empty(sum(sizes)), sizes, MPI.DOUBLE]
            wait_idle(comm.Igatherv([send, MPI.DOUBLE], recv, root=0))
            if rank == 0:
                model = local["model"]
                offsets = np.cumsum([0] + sizes)
                for r in range(1, size):
                    local_job.fold_model_blocks(model, starts[r], starts[r + 1], recv[0][offsets[r] : offsets[r + 1]])
        keys = ("npatches", "failed_patches", "linalg_flops", "max_band", "warnings", "failed_bins")
        mine_stats = {k: local[k] for k in keys} if local is not None else None
        idle_barrier(comm)
        stats = comm.gather(mine_stats, root=0)

    frame = None
    with times.phase("mpi::assemble"):
        if rank == 0:
            frame = _assemble(header, local, arrays, model, stats)
    if isinstance(phases, list):
        phases[:] = times.tuples()
    if frame is not None:
        frame.phases = times.tuples()
        frame.seconds = time.time() - start
        if log_warnings:
            for warning in frame.warnings:
                log.warning("%s", warning)
    return frame


def _assemble(header, local, arrays, model, stats):
    """Rank 0's frame from the gathered bins and every rank's statistics: the warnings of the
    check and of each rank (the NaN/Inf counts only of rank 0, which holds the whole image), the
    failed bins, and the frame mask over all fibres."""
    warnings = list(header["warnings"])
    for r, s in enumerate(stats):
        if s is None:
            continue
        warnings += [w for w in s["warnings"] if w not in header["warnings"] and (r == 0 or "NaN/Inf" not in w)]
    stats = [s for s in stats if s is not None]
    failed_bins = sorted(tuple(b) for s in stats for b in s["failed_bins"])
    return Frame(
        mask=frame_mask(arrays["chi2pix"], arrays["pixmask_fraction"], arrays["ivar"], failed_bins),
        wave=local["wave"],
        specmin=header["options"]["specmin"],
        model=model,
        options=local["options"],
        npatches=sum(s["npatches"] for s in stats),
        failed_patches=sum(s["failed_patches"] for s in stats),
        failed_bins=failed_bins,
        nonfinite_pixels=local["nonfinite_pixels"],
        linalg_flops=sum(s["linalg_flops"] for s in stats),
        max_band=max(s["max_band"] for s in stats),
        warnings=warnings,
        **arrays,
    )
