"""Quick-look picture of an extracted frame (matplotlib's Agg canvas: no display needed).

From Python or from the command line::

    perfex.plot.quicklook(frame, "frame.png")             # a perfex.Frame or a frame file
    python3 -m perfex.plot frame.fits [-o frame.png] [--spectra 0,24,49] [--pulls pulls.npy]

Panels: a few fibres with light, their spectra with their 1-sigma errors (masked bins marked),
chi2pix over fibre x wavelength, the masked bins (desispec mask bits, ivar = 0) over fibre x
wavelength and, given the pulls against a known truth (perfex-demo's pulls.npy), their
histogram beside the spectra with the unit normal they follow.
"""

import argparse
import os
import sys

import numpy as np

from . import extras, runtime
from ._perfex import Error, RequestError
from .frames import Frame, atomic_output, check_outputs, read_frame

# desispec specmask bits perfex sets (perfex::extract::FrameMaskBits) and the bin state drawn
# for each, in drawing order (a later state wins).
_MASK_STATES = (
    ("SOMEBADPIX (pixmask > 0.5)", "#f2b134"),
    ("BAD2DFIT (chi2pix outlier)", "#d94f3d"),
    ("ALLBADPIX / NODATA (ivar = 0)", "#4b2a78"),
    ("not finite (flux or ivar NaN / Inf)", "#000000"),
)


def mask_states(frame):
    """The state each bin of a frame is drawn in.

    Parameters
    ----------
    frame : Frame

    Returns
    -------
    numpy.ndarray
        [nspec][nwave] int8: 0 good, 1 SOMEBADPIX, 2 BAD2DFIT, 3 ALLBADPIX / NODATA (or
        ivar 0); a later state wins.
    """
    state = np.zeros(frame.flux.shape, dtype=np.int8)
    mask = np.asarray(frame.mask)
    state[(mask & 1) != 0] = 1
    state[(mask & (1 << 7)) != 0] = 2
    state[((mask & (2 | 1 << 8)) != 0) | (np.asarray(frame.ivar) == 0)] = 3
    return state


def default_spectra(frame, count=3):
    """Indices (into the frame) of count spectra spread over the fibres with light.

    Parameters
    ----------
    frame : Frame
    count : int, default 3

    Returns
    -------
    list of int
        At most count sorted indices spread over the spectra whose median signal-to-noise over
        their unmasked bins is above 1 (over the whole frame when none is).
    """
    flux, ivar = np.asarray(frame.flux), np.asarray(frame.ivar)
    good = np.isfinite(flux) & np.isfinite(ivar) & (ivar > 0)
    snr = np.where(good, flux, 0.0) * np.sqrt(np.where(good, ivar, 0.0))
    lit = np.array([f for f in range(frame.nspec) if good[f].any() and np.median(snr[f, good[f]]) > 1.0], dtype=int)
    if lit.size == 0:
        lit = np.arange(frame.nspec)
    return sorted({int(lit[i]) for i in np.linspace(0, lit.size - 1, min(count, lit.size)).astype(int)})


def quicklook(frame, path, spectra=None, title=None, dpi=110, pulls=None):
    """Writes the quick-look PNG of a frame.

    Parameters
    ----------
    frame : perfex.Frame or str
        The frame, or a frame file's name.
    path : str or os.PathLike
        The PNG to write (a folder: NAME.png in it; ``.png`` is added when missing). It is
        written atomically (a hidden temporary renamed over path), never over the frame file.
    spectra : list of int, optional
        Frame indices of the spectra to draw, one panel each (default: three spread over the
        fibres with light, see default_spectra).
    title : str, optional
        The picture's title (default: the frame file's name).
    dpi : int, optional
        Resolution.
    pulls : array_like, optional
        Pulls against a known truth, (flux - R.truth) * sqrt(ivar) per bin (perfex-demo's
        pulls.npy): their histogram is drawn beside the spectra with the unit normal.

    Returns
    -------
    str
        The path written.

    Raises
    ------
    RequestError
        path is the frame file or cannot be written.
    ValueError
        A spectrum index outside the frame.
    perfex.extras.MissingExtra
        matplotlib is not installed (``pip install 'perfex[plot]'``).

    Examples
    --------
    >>> perfex.plot.quicklook(frame, "frame.png", spectra=[0, 24, 49])
    'frame.png'
    """
    extras.require("matplotlib", "perfex.plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    name, source = "frame", None
    if not isinstance(frame, Frame):
        source = os.fspath(frame)
        name = os.path.splitext(os.path.basename(source))[0]
        title = title or os.path.basename(source)
        frame = read_frame(frame)
    path = output_path(path, name)
    check_outputs([("output", path)], [("frame", source)])
    spectra = default_spectra(frame) if spectra is None else list(spectra)
    for f in spectra:
        if not 0 <= f < frame.nspec:
            raise ValueError(f"spectra: {f} is not an index of this frame's {frame.nspec} spectra")
    bins = _Bins(frame)
    fig = Figure(figsize=(11 if pulls is None else 14, 4.5 + 1.6 * len(spectra)), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = _panels(fig, len(spectra), pulls)
    for n, (ax, f) in enumerate(zip(axes, spectra)):
        _draw_spectrum(ax, bins, f, _COLORS[n % len(_COLORS)])
    chi = _draw_chi2pix(fig, axes[-2], bins)
    _draw_mask(axes[-1], bins)
    for f in spectra:  # where the drawn spectra sit in the maps
        for ax in axes[-2:]:
            ax.axhline(frame.specmin + f, color="white" if ax is axes[-2] else "#888888", lw=0.5, ls=":")
    nmasked = int((bins.states > 0).sum())
    median_chi = float(np.median(chi)) if chi.size else 0.0
    fig.suptitle(
        f"{title or 'perfex frame'}: fibres {frame.specmin}-{frame.specmin + frame.nspec - 1}, "
        f"{bins.wave[0]:.1f}-{bins.wave[-1]:.1f} Å, {nmasked} masked bins "
        f"({100.0 * nmasked / max(1, bins.states.size):.2g} %), median chi2pix {median_chi:.3g}"
        + (f", {int(bins.nonfinite.sum())} non-finite bins" if bins.nonfinite.any() else ""),
        fontsize=10,
    )
    with atomic_output(path) as f:
        fig.savefig(f, format="png")
    return path


_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _panels(fig, nspectra, pulls):
    """The axes of the spectra, chi2pix and the mask, one column sharing wavelengths; with pulls,
    their histogram in a second column beside the spectra."""
    heights = [1.0] * nspectra + [1.6, 1.6]
    if pulls is None:
        return fig.subplots(nspectra + 2, 1, sharex=True, height_ratios=heights)
    grid = fig.add_gridspec(nspectra + 2, 2, height_ratios=heights, width_ratios=[4.0, 1.3])
    axes = [fig.add_subplot(grid[0, 0])]
    axes += [fig.add_subplot(grid[i, 0], sharex=axes[0]) for i in range(1, nspectra + 2)]
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
    _draw_pulls(fig.add_subplot(grid[:nspectra, 1]), pulls)
    return axes


def _draw_pulls(ax, pulls):
    """The histogram of the pulls (a log scale shows the tails) with the unit normal."""
    pulls = np.asarray(pulls, dtype=float).ravel()
    pulls = pulls[np.isfinite(pulls)]
    edges = np.linspace(-5.0, 5.0, 51)
    ax.hist(np.clip(pulls, edges[0], edges[-1]), bins=edges, density=True, color="#1f77b4", alpha=0.6)
    x = np.linspace(edges[0], edges[-1], 201)
    ax.plot(x, np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi), color="black", lw=1, label="N(0, 1)")
    rms = float(np.sqrt(np.mean(pulls**2))) if pulls.size else float("nan")
    mean = float(np.mean(pulls)) if pulls.size else float("nan")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 1.0)
    ax.set_title(f"pulls against the truth: {pulls.size:,} bins\nRMS {rms:.4f}, mean {mean:+.4f}", fontsize=9)
    ax.set_xlabel("(flux − R·truth)·√ivar")
    ax.legend(loc="upper right", fontsize=8)


class _Bins:
    """A frame's bins as drawn: wavelengths, flux and ivar (0 where not finite), each bin's mask
    state (mask_states; bins whose flux or ivar is not finite, from a damaged or foreign frame,
    drawn as masked) and the maps' extent (bin edges: a frame of one wavelength still spans one
    bin, of 1 A when it is alone)."""

    def __init__(self, frame):
        self.frame, self.wave = frame, frame.wave
        flux, ivar = np.asarray(frame.flux), np.asarray(frame.ivar)
        self.states = mask_states(frame)
        self.nonfinite = ~(np.isfinite(flux) & np.isfinite(ivar))
        self.states[self.nonfinite] = len(_MASK_STATES)
        self.flux = np.where(self.nonfinite, 0.0, flux)
        self.ivar = np.where(self.nonfinite, 0.0, ivar)
        wave = self.wave
        half = 0.5 * ((wave[-1] - wave[0]) / (wave.size - 1) if wave.size > 1 else 1.0)
        self.extent = [wave[0] - half, wave[-1] + half, frame.specmin - 0.5, frame.specmin + frame.nspec - 0.5]


def _draw_spectrum(ax, bins, f, color):
    """Spectrum f with its 1-sigma band, its masked bins marked."""
    wave, flux, ivar = bins.wave, bins.flux[f], bins.ivar[f]
    good = ivar > 0
    sigma = np.where(good, 1 / np.sqrt(np.where(good, ivar, 1)), np.nan)
    ax.fill_between(wave, flux - sigma, flux + sigma, color=color, alpha=0.35, lw=0, label="±1σ")
    ax.plot(wave, np.where(good, flux, np.nan), color=color, lw=0.6, label=f"fibre {bins.frame.specmin + f}")
    bad = bins.states[f] > 0
    if bad.any():
        ax.plot(wave[bad], flux[bad], "x", color="#d94f3d", ms=6, label="masked")
    # Robust limits: the continuum and its errors stay readable next to bright sky lines.
    if good.any():
        lo, hi = np.percentile(flux[good], [0.5, 99.0])
        pad = 0.15 * (hi - lo if hi > lo else max(abs(hi), 1.0))
        ax.set_ylim(lo - pad, hi + 3 * pad)
    ax.set_ylabel("e⁻/Å")
    ax.legend(loc="upper right", fontsize=8, ncol=3)


def _draw_chi2pix(fig, ax, bins):
    """chi2pix over fibre x wavelength (log scale); returns chi2pix (0 where not finite)."""
    from matplotlib.colors import LogNorm

    chi = np.asarray(bins.frame.chi2pix, dtype=float)
    chi = np.where(np.isfinite(chi), chi, 0.0)
    positive = chi[chi > 0]
    lo, hi = np.percentile(positive, [1, 99.9]) if positive.size else (0.1, 10.0)
    im = ax.imshow(
        np.clip(chi, lo, None),
        aspect="auto",
        origin="lower",
        extent=bins.extent,
        interpolation="nearest",
        cmap="viridis",
        norm=LogNorm(vmin=lo, vmax=max(hi, lo * 10)),
    )
    fig.colorbar(im, ax=ax, label="chi2pix", pad=0.01)
    ax.set_ylabel("fibre")
    return chi


def _draw_mask(ax, bins):
    """The masked bins over fibre x wavelength, as markers (an image would drop isolated bins
    when it is downsampled), with their counts in a legend below the axes (where it hides none)."""
    from matplotlib.patches import Patch

    counts = []
    for i, (_, c) in enumerate(_MASK_STATES):
        f, k = np.nonzero(bins.states == i + 1)
        counts.append(f.size)
        ax.scatter(bins.wave[k], bins.frame.specmin + f, s=18, marker="s", color=c, lw=0)
    ax.set_ylim(bins.extent[2], bins.extent[3])
    ax.set_facecolor("#f4f4f4")
    ax.legend(
        [Patch(color=c) for _, c in _MASK_STATES],
        [f"{name}: {k} bins" for (name, _), k in zip(_MASK_STATES, counts)],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25),
        fontsize=8,
        ncol=3,
        frameon=False,
    )
    ax.set_ylabel("fibre")
    ax.set_xlabel("wavelength [Å]")
    ax.set_xlim(bins.extent[0], bins.extent[1])  # shared by every panel


def nonfinite_bins(frame):
    """The number of bins of a frame whose flux or ivar is NaN or infinite.

    Parameters
    ----------
    frame : Frame

    Returns
    -------
    int
    """
    return int((~(np.isfinite(frame.flux) & np.isfinite(frame.ivar))).sum())


def output_path(path, name="frame"):
    """Where quicklook writes for path.

    Parameters
    ----------
    path : str or os.PathLike
        A folder gets NAME.png inside it, a name without the .png ending gets it.
    name : str, default "frame"

    Returns
    -------
    str
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, name + ".png")
    elif not path.lower().endswith(".png"):
        path += ".png"
    return path


def main(argv=None, prog="python3 -m perfex.plot"):
    """python3 -m perfex.plot: the quick-look PNG of a frame file.

    Parameters
    ----------
    argv : list of str, optional
        ``FRAME [-o OUTPUT] [--spectra I,J,...] [--pulls NPY]`` (None: sys.argv[1:]).
    prog : str, default "python3 -m perfex.plot"
        The program's name in messages.

    Returns
    -------
    int
        0 written (the path printed), 1 the frame could not be read or drawn, 2 refused (a bad
        command line, an output refused, matplotlib missing: one line naming the extra).
    """
    return extras.run_command(_main, argv, prog)


def command():
    """The console script perfex_plot (pip install puts it on PATH)."""
    return main(prog=os.path.basename(sys.argv[0]))


def _main(argv, prog):
    p = argparse.ArgumentParser(prog=prog, description="Quick-look PNG of a frame file.")
    runtime.add_version_option(p)
    p.add_argument("frame", help="frame file (perfex, desispec or gpu_specter)")
    p.add_argument("-o", "--output", help="PNG file (default: the frame's name with .png)")
    p.add_argument(
        "--spectra", help="comma-separated frame indices of the spectra to draw (default: fibres with light)"
    )
    p.add_argument("--pulls", metavar="NPY", help="pulls against a known truth to histogram (perfex-demo's pulls.npy)")
    args = p.parse_args(argv)
    extras.require("matplotlib", prog)
    output = args.output or os.path.splitext(args.frame)[0] + ".png"
    spectra = None
    if args.spectra:
        try:
            spectra = [int(f) for f in args.spectra.split(",")]
        except ValueError:
            p.error(f"--spectra: expected integers, got '{args.spectra}'")
    name = os.path.splitext(os.path.basename(args.frame))[0]
    try:  # refused first: an output that cannot be written, or that is the frame file
        check_outputs([("-o/--output", output_path(output, name))], [("frame", args.frame)])
    except RequestError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        frame = read_frame(args.frame)
        pulls = None if args.pulls is None else np.load(args.pulls)
        bad = nonfinite_bins(frame)
        if bad:
            print(
                f"{p.prog}: warning: {args.frame}: {bad} bins with a NaN or infinite flux or ivar, drawn as masked",
                file=sys.stderr,
            )
        written = quicklook(
            frame, output_path(output, name), spectra=spectra, title=os.path.basename(args.frame), pulls=pulls
        )
    except (Error, OSError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 1
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
