"""Quick-look picture of an extracted frame (matplotlib's Agg canvas: no display needed).

    perfex.plot.quicklook(frame, "frame.png")             # a perfex.Frame or a frame file
    python3 -m perfex.plot frame.fits [-o frame.png] [--fibers 0,24,49]

Three panels: a few fibres' spectra with their 1-sigma errors (masked bins marked), chi2pix
over fibre x wavelength, and the masked bins (desispec mask bits, ivar = 0) over fibre x
wavelength.
"""

import argparse
import os
import sys

import numpy as np

from ._perfex import Error
from .frames import Frame, read_frame

# desispec specmask bits perfex sets (perfex::extract::FrameMaskBits) and the bin state drawn
# for each, in drawing order (a later state wins).
_MASK_STATES = (
    ("SOMEBADPIX (pixmask > 0.5)", "#f2b134"),
    ("BAD2DFIT (chi2pix outlier)", "#d94f3d"),
    ("ALLBADPIX / NODATA (ivar = 0)", "#4b2a78"),
    ("not finite (flux or ivar NaN / Inf)", "#000000"),
)


def mask_states(frame):
    """[nspec][nwave] small ints: 0 good, 1.. the _MASK_STATES index + 1."""
    state = np.zeros(frame.flux.shape, dtype=np.int8)
    mask = np.asarray(frame.mask)
    state[(mask & 1) != 0] = 1
    state[(mask & (1 << 7)) != 0] = 2
    state[((mask & (2 | 1 << 8)) != 0) | (np.asarray(frame.ivar) == 0)] = 3
    return state


def default_fibers(frame, count=3):
    """Indices (into the frame) of `count` fibres spread over the frame."""
    return sorted(set(np.linspace(0, frame.nspec - 1, min(count, frame.nspec)).astype(int)))


def quicklook(frame, path, fibers=None, title=None, dpi=110):
    """Writes the quick-look PNG of frame (a perfex.Frame or a frame file name) to path;
    fibers: frame indices of the spectra to draw, one panel each (default: three spread over
    the frame).
    Returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    name = "frame"
    if not isinstance(frame, Frame):
        name = os.path.splitext(os.path.basename(os.fspath(frame)))[0]
        title = title or os.path.basename(os.fspath(frame))
        frame = read_frame(frame)
    path = output_path(path, name)
    fibers = default_fibers(frame) if fibers is None else list(fibers)
    for f in fibers:
        if not 0 <= f < frame.nspec:
            raise ValueError(f"fibers: {f} is not an index of this frame's {frame.nspec} spectra")
    wave, flux, ivar = frame.wave, np.asarray(frame.flux), np.asarray(frame.ivar)
    states = mask_states(frame)
    # Bins whose flux or ivar is not finite (a damaged or foreign frame) are drawn as masked.
    nonfinite = ~(np.isfinite(flux) & np.isfinite(ivar))
    states[nonfinite] = len(_MASK_STATES)
    flux = np.where(nonfinite, 0.0, flux)
    ivar = np.where(nonfinite, 0.0, ivar)
    extent = [wave[0], wave[-1], frame.specmin - 0.5, frame.specmin + frame.nspec - 0.5]

    fig = Figure(figsize=(11, 4.5 + 1.6 * len(fibers)), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(fibers) + 2, 1, sharex=True, height_ratios=[1.0] * len(fibers) + [1.6, 1.6])
    ax_chi, ax_mask = axes[-2], axes[-1]

    colors = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    for n, (ax, f) in enumerate(zip(axes, fibers)):
        c = colors[n % len(colors)]
        good = ivar[f] > 0
        sigma = np.where(good, 1 / np.sqrt(np.where(good, ivar[f], 1)), np.nan)
        ax.fill_between(wave, flux[f] - sigma, flux[f] + sigma, color=c, alpha=0.35, lw=0, label="±1σ")
        ax.plot(wave, np.where(good, flux[f], np.nan), color=c, lw=0.6, label=f"fibre {frame.specmin + f}")
        bad = states[f] > 0
        if bad.any():
            ax.plot(wave[bad], flux[f][bad], "x", color="#d94f3d", ms=6, label="masked")
        # Robust limits: the continuum and its errors stay readable next to bright sky lines.
        if good.any():
            lo, hi = np.percentile(flux[f][good], [0.5, 99.0])
            pad = 0.15 * (hi - lo if hi > lo else max(abs(hi), 1.0))
            ax.set_ylim(lo - pad, hi + 3 * pad)
        ax.set_ylabel("e⁻/Å")
        ax.legend(loc="upper right", fontsize=8, ncol=3)

    chi = np.asarray(frame.chi2pix, dtype=float)
    chi = np.where(np.isfinite(chi), chi, 0.0)
    positive = chi[chi > 0]
    lo, hi = np.percentile(positive, [1, 99.9]) if positive.size else (0.1, 10.0)
    im = ax_chi.imshow(
        np.clip(chi, lo, None),
        aspect="auto",
        origin="lower",
        extent=extent,
        interpolation="nearest",
        cmap="viridis",
        norm=LogNorm(vmin=lo, vmax=max(hi, lo * 10)),
    )
    fig.colorbar(im, ax=ax_chi, label="chi2pix", pad=0.01)
    ax_chi.set_ylabel("fibre")

    # Masked bins as markers: an image would drop isolated bins when it is downsampled.
    counts = []
    for i, (_, c) in enumerate(_MASK_STATES):
        f, k = np.nonzero(states == i + 1)
        counts.append(f.size)
        ax_mask.scatter(wave[k], frame.specmin + f, s=18, marker="s", color=c, lw=0)
    ax_mask.set_ylim(extent[2], extent[3])
    ax_mask.set_facecolor("#f4f4f4")
    ax_mask.legend(
        [Patch(color=c) for _, c in _MASK_STATES],
        [f"{name}: {k} bins" for (name, _), k in zip(_MASK_STATES, counts)],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25),
        fontsize=8,
        ncol=3,
        frameon=False,
    )  # below the axes: it must not hide a masked bin
    ax_mask.set_ylabel("fibre")
    ax_mask.set_xlabel("wavelength [Å]")
    for f in fibers:  # where the drawn spectra sit in the maps
        for ax in (ax_chi, ax_mask):
            ax.axhline(frame.specmin + f, color="white" if ax is ax_chi else "#888888", lw=0.5, ls=":")

    nmasked = int((states > 0).sum())
    median_chi = float(np.median(chi)) if chi.size else 0.0
    fig.suptitle(
        f"{title or 'perfex frame'}: fibres {frame.specmin}-{frame.specmin + frame.nspec - 1}, "
        f"{wave[0]:.1f}-{wave[-1]:.1f} Å, {nmasked} masked bins "
        f"({100.0 * nmasked / max(1, states.size):.2g} %), median chi2pix {median_chi:.3g}"
        + (f", {int(nonfinite.sum())} non-finite bins" if nonfinite.any() else ""),
        fontsize=10,
    )
    fig.savefig(path, format="png")
    return path


def nonfinite_bins(frame):
    """Number of bins whose flux or ivar is NaN or infinite."""
    return int((~(np.isfinite(frame.flux) & np.isfinite(frame.ivar))).sum())


def output_path(path, name="frame"):
    """Where quicklook writes for `path`: a folder gets NAME.png inside it, a name without the
    .png ending gets it."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, name + ".png")
    elif not path.lower().endswith(".png"):
        path += ".png"
    return path


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m perfex.plot", description="Quick-look PNG of a frame file.")
    p.add_argument("frame", help="frame file (perfex, desispec or gpu_specter)")
    p.add_argument("-o", "--output", help="PNG file (default: the frame's name with .png)")
    p.add_argument("--fibers", help="comma-separated frame indices of the spectra to draw")
    args = p.parse_args(argv)
    output = args.output or os.path.splitext(args.frame)[0] + ".png"
    fibers = None
    if args.fibers:
        try:
            fibers = [int(f) for f in args.fibers.split(",")]
        except ValueError:
            p.error(f"--fibers: expected integers, got '{args.fibers}'")
    try:
        frame = read_frame(args.frame)
        bad = nonfinite_bins(frame)
        if bad:
            print(
                f"{p.prog}: warning: {args.frame}: {bad} bins with a NaN or infinite flux or ivar, drawn as masked",
                file=sys.stderr,
            )
        name = os.path.splitext(os.path.basename(args.frame))[0]
        written = quicklook(frame, output_path(output, name), fibers=fibers, title=os.path.basename(args.frame))
    except (Error, OSError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 1
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
