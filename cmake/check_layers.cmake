# The library's layers include one way (docs/library.md, "Layers"): every public header may
# include only headers of its own layer and of the layers it builds on, so psf/ and the device
# library compile without CFITSIO and perfex.hpp keeps its promise of a FITS-free umbrella.
#
#   cmake -DPERFEX_INCLUDE_DIR=<repository>/include -P cmake/check_layers.cmake
#
# Fails naming each header and the include that points upwards.
cmake_minimum_required(VERSION 3.16)
if(NOT PERFEX_INCLUDE_DIR)
  get_filename_component(PERFEX_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
endif()

# The layer of a header (its path below include/perfex), as a name.
function(perfex_layer_of header out)
  if(header MATCHES "^linalg/reference/")
    set(layer reference)
  elseif(header MATCHES "^(detail|psf|linalg|extract|io)/")
    set(layer ${CMAKE_MATCH_1})
  elseif(header STREQUAL "perfex.hpp")
    set(layer umbrella)
  else()
    set(layer core)
  endif()
  set(${out} ${layer} PARENT_SCOPE)
endfunction()

# What each layer may include.
set(allowed_core core detail)
set(allowed_detail core detail)
set(allowed_psf core detail psf)
set(allowed_linalg core detail linalg)
set(allowed_reference core detail linalg reference)
set(allowed_extract core detail psf linalg extract)
set(allowed_umbrella core detail psf linalg extract)
set(allowed_io core detail psf linalg extract io)

file(GLOB_RECURSE headers RELATIVE "${PERFEX_INCLUDE_DIR}/perfex" "${PERFEX_INCLUDE_DIR}/perfex/*.hpp")
if(NOT headers)
  message(FATAL_ERROR "check_layers: no headers under ${PERFEX_INCLUDE_DIR}/perfex")
endif()
set(upward)
foreach(header IN LISTS headers)
  perfex_layer_of(${header} from)
  file(STRINGS "${PERFEX_INCLUDE_DIR}/perfex/${header}" includes REGEX "^#include <perfex/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include <perfex/([^>]*)>.*" "\\1" target "${line}")
    perfex_layer_of(${target} to)
    if(NOT to IN_LIST allowed_${from})
      list(APPEND upward "perfex/${header} (${from}) includes perfex/${target} (${to})")
    endif()
  endforeach()
endforeach()
if(upward)
  list(JOIN upward "\n  " text)
  message(FATAL_ERROR "check_layers: includes against the layers' order:\n  ${text}")
endif()
list(LENGTH headers count)
message(STATUS "check_layers: ${count} headers include only their own and lower layers")
