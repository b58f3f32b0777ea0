#!/usr/bin/env python3
"""Compares extracted frames HDU by HDU: identical bits, or by how much they differ.

    python3 scripts/compare_frames.py A.fits B.fits [C.fits ...]

Every frame after the first is compared with the first, on the fibres and wavelengths they
share (a reference of more fibres is cut to the frame's): FLUX as |dflux| sqrt(ivar) (in sigma),
IVAR, RESOLUTION and CHI2PIX relative to the first's largest |value| per fibre and wavelength,
MASK and PIXMASK_FRACTION (when present) bit for bit. "identical" means every bit is equal.
Model images (perfex-extract -m: an image HDU MODEL, no FLUX) are compared HDU by HDU.
Needs numpy and astropy (Debian's python3-numpy, python3-astropy).
"""

import sys

import numpy as np
from astropy.io import fits


def hdus(path):
    with fits.open(path, memmap=False) as f:
        out = {}
        for h in f:
            name = h.name.upper()
            table = isinstance(h, fits.BinTableHDU) and not isinstance(h, fits.CompImageHDU)
            if h.data is not None and not table:
                out[name] = np.asarray(h.data, dtype=np.float64)
        return out


def rel(a, b):
    scale = np.maximum(np.abs(b), 1e-300)
    return float(np.max(np.abs(a - b) / scale)) if a.size else 0.0


def compare_images(ref_path, path, ref, got):
    """Model images (write_model's MODEL HDU): identical bits, or the largest difference
    relative to the reference's largest |value|."""
    lines = []
    for name in ref:
        if name not in got:
            lines.append(f"  {name}: missing")
            continue
        a, b = got[name], ref[name]
        if a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64)):
            lines.append(f"  {name}: identical")
        elif a.shape != b.shape:
            lines.append(f"  {name}: shape {a.shape}, expected {b.shape}")
        else:
            d = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))
            n = int(np.count_nonzero(a != b))
            lines.append(f"  {name}: max difference / max |value| {d:.3g} ({n} of {a.size} values differ)")
    print(f"{path} vs {ref_path} (image HDUs):")
    print("\n".join(lines))


def compare(ref_path, path):
    ref, got = hdus(ref_path), hdus(path)
    if "FLUX" not in ref:
        return compare_images(ref_path, path, ref, got)
    nspec = min(ref["FLUX"].shape[0], got["FLUX"].shape[0])
    nwave = min(ref["FLUX"].shape[1], got["FLUX"].shape[1])

    def cut(x):
        return x[:nspec, ..., :nwave]

    lines = []
    for name in ("FLUX", "IVAR", "MASK", "RESOLUTION", "CHI2PIX", "PIXMASK_FRACTION"):
        if name not in ref or name not in got:
            continue
        a, b = cut(got[name]), cut(ref[name])
        same = a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))
        if same:
            lines.append(f"  {name}: identical")
            continue
        if name == "FLUX":
            ivar = cut(ref["IVAR"])
            d = float(np.max(np.abs(a - b) * np.sqrt(ivar)))
            n = int(np.count_nonzero(a != b))
            lines.append(f"  FLUX: max |dflux| sqrt(ivar) {d:.3g} sigma ({n} of {a.size} values differ)")
        elif name in ("MASK",):
            lines.append(f"  {name}: {int(np.count_nonzero(a != b))} of {a.size} values differ")
        else:
            n = int(np.count_nonzero(a != b))
            lines.append(f"  {name}: max relative {rel(a, b):.3g} ({n} of {a.size} values differ)")
    print(f"{path} vs {ref_path} ({nspec} fibres x {nwave} wavelengths):")
    print("\n".join(lines))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    for path in sys.argv[2:]:
        compare(sys.argv[1], path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
