// perfex-extract: spectro-perfectionism extraction of a DESI preproc image with a GaussHermite
// PSF, with desi_extract_spectra's options (see --help). Writes a desispec frame file.
#include "cli.hpp"

int main(int argc, char* argv[]) { return perfex::cli::extract_main(argc, argv); }
