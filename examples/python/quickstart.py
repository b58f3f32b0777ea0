import perfex

psf = perfex.read_psf("psf-r0-00051060.fits")
img = perfex.read_preproc("preproc-r0-00051060.fits")  # float64, ivar = 0 where MASK & 0x2FF
frame = perfex.extract_frame(
    img.pixels,
    img.ivar,
    psf,  # numpy in, numpy out, GIL released
    wavelength="5760,7620,0.8",
    nspec=50,
    psferr=0.01,
)
perfex.write_frame("frame-r0.fits", frame, img.path, psf.source)
print(frame.flux.shape, frame.failed_patches)  # (50, 2326) 0
