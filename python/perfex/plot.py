"""Quick-look picture of an extracted frame (matplotlib's Agg canvas: no display needed).

From Python or from the command line::

    perfex.plot.quicklook(frame, "frame.png")             # a perfex.Frame or a frame file
    python3 -m perfex.plot frame.fits [-o frame.png] [--spectra 0,24,49]

Three panels: a few fibres' spectra with their 1-sigma errors (masked bins marked), chi2pix
over fibre x wavelength, and the masked bins (desispec mask bits, ivar = 0) over fibre x
wavelength.
"""

import argparse
import os
import sys

import numpy as np

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
    """Indices (into the frame) of count spectra spread over the frame.

    Parameters
    ----------
    frame : Frame
    count : int, default 3

    Returns
    -------
    list of int
        At most count sorted indices, the first and last spectra among them.
    """
    return sorted(set(np.linspace(0, frame.nspec - 1, min(count, frame.nspec)).astype(int)))


def quicklook(frame, path, spectra=None, title=None, dpi=110):
    """Writes the quick-look PNG of a frame.

    Three kinds of panels: the spectra drawn with their 1-sigma errors (masked bins marked),
    chi2pix over fibre x wavelength, and the masked bins over fibre x wavelength. The picture
    is written atomically (a hidden temporary renamed over path).

    Parameters
    ----------
    frame : Frame, str or os.PathLike
        A perfex.Frame or a frame file (perfex's, desispec's or gpu_specter's).
    path : str or os.PathLike
        The PNG file; a folder gets NAME.png inside it, a name without ".png" gets it
        (output_path).
    spectra : sequence of int, optional
        Frame indices of the spectra to draw, one panel each (default: three spread over the
        frame, default_spectra).
    title : str, optional
        The picture's title (default: the frame file's name, or "perfex frame").
    dpi : int, default 110
        The resolution.

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

    Examples
    --------
    >>> perfex.plot.quicklook(frame, "frame.png", spectra=[0, 24, 49])
    'frame.png'
    """
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
    fig = Figure(figsize=(11, 4.5 + 1.6 * len(spectra)), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(spectra) + 2, 1, sharex=True, height_ratios=[1.0] * len(spectra) + [1.6, 1.6])
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


def main(argv=None):
    """python3 -m perfex.plot: the quick-look PNG of a frame file.

    Parameters
    ----------
    argv : list of str, optional
        ``FRAME [-o OUTPUT] [--spectra I,J,...]`` (None: sys.argv[1:]).

    Returns
    -------
    int
        0 written (the path printed), 1 the frame could not be read or drawn, 2 an output
        refused.
    """
    p = argparse.ArgumentParser(prog="python3 -m perfex.plot", description="Quick-look PNG of a frame file.")
    p.add_argument("frame", help="frame file (perfex, desispec or gpu_specter)")
    p.add_argument("-o", "--output", help="PNG file (default: the frame's name with .png)")
    p.add_argument("--spectra", help="comma-separated frame indices of the spectra to draw")
    args = p.parse_args(argv)
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
        bad = nonfinite_bins(frame)
        if bad:
            print(
                f"{p.prog}: warning: {args.frame}: {bad} bins with a NaN or infinite flux or ivar, drawn as masked",
                file=sys.stderr,
            )
        written = quicklook(frame, output_path(output, name), spectra=spectra, title=os.path.basename(args.frame))
    except (Error, OSError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 1
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
