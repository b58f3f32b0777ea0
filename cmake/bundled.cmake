# Kokkos and CFITSIO built with perfex, for machines that lack them (a Python package installed
# with pip, a Cray node without a Kokkos module): FetchContent from the release archive, or,
# offline, from a local archive (PERFEX_KOKKOS_ARCHIVE, PERFEX_CFITSIO_ARCHIVE) or an unpacked
# source (CMake's own FETCHCONTENT_SOURCE_DIR_KOKKOS, FETCHCONTENT_SOURCE_DIR_CFITSIO). Both are
# static libraries compiled with -fPIC, so that a Python extension carries them inside itself
# and nothing outside it is looked up at run time (python/CMakeLists.txt hides their symbols).
include(FetchContent)

set(PERFEX_KOKKOS_URL
  "https://github.com/kokkos/kokkos/releases/download/4.6.01/kokkos-4.6.01.tar.gz"
  CACHE STRING "Where a bundled Kokkos comes from when no Kokkos is found")
set(PERFEX_KOKKOS_ARCHIVE "$ENV{PERFEX_KOKKOS_ARCHIVE}" CACHE FILEPATH
  "A local Kokkos release archive for the bundled Kokkos (offline machines)")
set(PERFEX_CFITSIO_URL
  "https://heasarc.gsfc.nasa.gov/FTP/software/fitsio/c/cfitsio-4.6.2.tar.gz"
  CACHE STRING "Where a bundled CFITSIO comes from")
set(PERFEX_CFITSIO_ARCHIVE "$ENV{PERFEX_CFITSIO_ARCHIVE}" CACHE FILEPATH
  "A local CFITSIO release archive for the bundled CFITSIO (offline machines)")

# perfex_bundled_source(NAME URL ARCHIVE): declares NAME's source, the local archive first;
# FETCHCONTENT_SOURCE_DIR_<NAME> overrides both, as for any FetchContent project.
function(perfex_bundled_source name url archive)
  string(TOUPPER ${name} upper)
  if(FETCHCONTENT_SOURCE_DIR_${upper})
    if(NOT EXISTS "${FETCHCONTENT_SOURCE_DIR_${upper}}/CMakeLists.txt")
      message(FATAL_ERROR "perfex: FETCHCONTENT_SOURCE_DIR_${upper}="
        "${FETCHCONTENT_SOURCE_DIR_${upper}} holds no CMakeLists.txt: give the unpacked ${name} source")
    endif()
    message(STATUS "perfex: bundled ${name} from ${FETCHCONTENT_SOURCE_DIR_${upper}}")
  elseif(archive)
    if(NOT EXISTS "${archive}")
      message(FATAL_ERROR "perfex: PERFEX_${upper}_ARCHIVE=${archive}: no such file")
    endif()
    set(url "${archive}")
    message(STATUS "perfex: bundled ${name} from ${archive}")
  else()
    message(STATUS "perfex: bundled ${name} from ${url} (offline: PERFEX_${upper}_ARCHIVE or "
                   "FETCHCONTENT_SOURCE_DIR_${upper})")
  endif()
  FetchContent_Declare(${name} URL "${url}")
endfunction()

# Kokkos (Serial, and OpenMP where the compiler has it), C++17, installed with perfex.
function(perfex_bundle_kokkos)
  perfex_bundled_source(kokkos "${PERFEX_KOKKOS_URL}" "${PERFEX_KOKKOS_ARCHIVE}")
  find_package(OpenMP COMPONENTS CXX)
  set(BUILD_SHARED_LIBS OFF)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  set(CMAKE_CXX_STANDARD 17)
  set(Kokkos_ENABLE_SERIAL ON CACHE BOOL "")
  set(Kokkos_ENABLE_OPENMP ${OpenMP_CXX_FOUND} CACHE BOOL "")
  FetchContent_MakeAvailable(kokkos)
endfunction()

# CFITSIO without its network drivers (no curl, TLS or Kerberos libraries in the process), for
# perfex's own programs and the Python package only: not installed.
function(perfex_bundle_cfitsio)
  perfex_bundled_source(cfitsio "${PERFEX_CFITSIO_URL}" "${PERFEX_CFITSIO_ARCHIVE}")
  FetchContent_GetProperties(cfitsio)
  if(NOT cfitsio_POPULATED)
    if(POLICY CMP0169)
      cmake_policy(SET CMP0169 OLD)  # FetchContent_Populate: for add_subdirectory's EXCLUDE_FROM_ALL
    endif()
    FetchContent_Populate(cfitsio)
  endif()
  set(BUILD_SHARED_LIBS OFF)
  set(CMAKE_POLICY_DEFAULT_CMP0077 NEW)  # CFITSIO's option(BUILD_SHARED_LIBS) takes the above
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  set(USE_CURL OFF CACHE BOOL "")
  set(USE_PTHREADS ON CACHE BOOL "")
  set(TESTS OFF CACHE BOOL "")
  set(UTILS OFF CACHE BOOL "")
  add_subdirectory(${cfitsio_SOURCE_DIR} ${cfitsio_BINARY_DIR} EXCLUDE_FROM_ALL)
  target_include_directories(cfitsio INTERFACE $<BUILD_INTERFACE:${cfitsio_SOURCE_DIR}>)
endfunction()
