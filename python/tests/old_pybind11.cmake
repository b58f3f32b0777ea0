# CTest python.old_pybind11_refused: configures the project with a pybind11 2.10.3 (Debian 12's
# version, as a stand-in package folder) and expects the configure to stop, naming the version
# it needs and why.  cmake -DSOURCE=... -DWORK=... -DKokkos_ROOT=... -DPython3_EXECUTABLE=... -P
file(REMOVE_RECURSE ${WORK})
file(WRITE ${WORK}/pybind11/pybind11Config.cmake "set(pybind11_FOUND TRUE)\n")
file(WRITE ${WORK}/pybind11/pybind11ConfigVersion.cmake [=[
set(PACKAGE_VERSION 2.10.3)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
]=])
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -DKokkos_ROOT=${Kokkos_ROOT}
    -DPython3_EXECUTABLE=${Python3_EXECUTABLE} -Dpybind11_DIR=${WORK}/pybind11
    -DPERFEX_ENABLE_TESTS=OFF -DPERFEX_ENABLE_TOOLS=OFF -DPERFEX_ENABLE_BENCHMARKS=OFF
    -DPERFEX_ENABLE_CONSUMER_TESTS=OFF -DPERFEX_ENABLE_HEADER_CHECK=OFF -DPERFEX_SIMD=none
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " message "${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the configure with pybind11 2.10.3 succeeded:\n${out}\n${err}")
endif()
foreach(expected IN ITEMS "needs pybind11 >= 2.12; found 2.10.3" "itemsize 0 under numpy 2"
                          "Python 3.14 needs pybind11 >= 3.0" "-DPERFEX_ENABLE_PYTHON=OFF")
  string(FIND "${message}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the configure's message lacks '${expected}':\n${err}")
  endif()
endforeach()
message(STATUS "refused as expected:\n${err}")
