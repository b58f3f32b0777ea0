"""perfex from Python in ten lines: read a PSF and a preproc image, extract, write the frame.

python3 examples/python/quickstart.py PSF PREPROC FRAME
"""

import sys

import perfex

psf_path, image_path, frame_path = sys.argv[1:4]
psf = perfex.read_psf(psf_path)
img = perfex.read_preproc(image_path)  # float64 pixels, ivar = 0 where MASK & 0x2FF
frame = perfex.extract_frame(
    img.pixels, img.ivar, psf, wavelength="5760,5960,0.8", specmin=0, nspec=25, psferr=0.01, progress=False
)
perfex.write_frame(frame_path, frame, img.path, psf.source)
print(f"{frame}: mean |flux| {float(abs(frame.flux).mean()):.1f} e-/A, {frame.failed_patches} failed patches")
