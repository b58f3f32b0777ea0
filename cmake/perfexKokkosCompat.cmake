# Repairs for Kokkos CMake packages that do not work as shipped (Debian 12's Trilinos build):
# Kokkos::kokkos points at a missing include directory, and Kokkos Kernels defines no
# Kokkos::kokkoskernels target. Harmless for a correct Kokkos install.
if(TARGET Kokkos::kokkos)
  get_target_property(_perfex_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_perfex_fix OFF)
  foreach(_d IN LISTS _perfex_kokkos_inc)
    if(NOT _d MATCHES "^\\$<" AND NOT EXISTS "${_d}")
      set(_perfex_fix ON)
    endif()
  endforeach()
  if(_perfex_fix AND Kokkos_INCLUDE_DIRS)
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
  endif()
endif()
if(NOT TARGET Kokkos::kokkoskernels)
  # Kokkos Kernels' batched dense routines are header-only: its headers are all we need.
  find_path(PERFEX_KOKKOSKERNELS_INCLUDE_DIR KokkosBatched_Gemm_Decl.hpp
    HINTS ${KokkosKernels_INCLUDE_DIRS} ${Kokkos_INCLUDE_DIRS} PATH_SUFFIXES trilinos)
  if(NOT PERFEX_KOKKOSKERNELS_INCLUDE_DIR)
    message(FATAL_ERROR "perfex: Kokkos Kernels headers not found (set KokkosKernels_ROOT or Kokkos_ROOT)")
  endif()
  add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkoskernels PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${PERFEX_KOKKOSKERNELS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Kokkos::kokkos)
endif()
