#pragma once
// Test harness: every test case runs on every enabled execution space; the runner's
// --backend option (serial, openmp, cuda or all) selects which of them this process covers.
#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <tuple>

#include <perfex/runtime.hpp>

#include "perfex_test_backends.hpp"

namespace perfex_test {

std::string& selected_backend();  // defined in main.cpp

using perfex::backend_name;

template <class ExecSpace>
bool selected() {
  return selected_backend() == "all" || selected_backend() == backend_name<ExecSpace>();
}

// Folder of the project's shared reference data, or "" (with a Catch warning naming what
// is skipped) when it is not there.
std::string shared_data_dir(const std::string& what);

// The golden data in the repository (tests/data, see its README; PERFEX_TEST_DATA_DIR
// elsewhere) and the DESI PSF they were made with (the package data of perfex.gpu_specter;
// PERFEX_TEST_PSF): always there, never skipped.
std::string golden_data_dir();
std::string golden_psf();

}  // namespace perfex_test

// A test case templated over every enabled backend; TestType is the execution space.
#define PERFEX_BACKEND_TEST_CASE(name, tags) \
  TEMPLATE_LIST_TEST_CASE(name, tags, ::perfex_test::ExecSpaces)
// First statement of such a test case: skip backends this process does not cover.
#define PERFEX_ONLY_SELECTED_BACKEND()                \
  do {                                                \
    if (!::perfex_test::selected<TestType>()) return; \
  } while (0)
