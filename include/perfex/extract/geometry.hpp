#pragma once
// The patch geometries (Geometry, options.hpp), one header each under extract/geometry/, and the
// one place that chooses among them: with_geometry calls a function with the geometry of an
// option (resolve_geometry first makes an automatic one concrete, by the PSF's format). A
// geometry gives its bundles, its padding rules before planning, its windows, its spot boxes
// and its model fold (docs/library.md, "Adding a patch geometry"); adding one is its header and
// its line in Geometries below.
#include <perfex/error.hpp>
#include <perfex/extract/geometry/gpu_specter.hpp>
#include <perfex/extract/geometry/specter.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/psf/any_psf.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace perfex {
namespace extract {

// Every geometry, one line each.
using Geometries = std::tuple<GpuSpecterGeometry,  // Geometry::gpu_specter
                              SpecterGeometry>;    // Geometry::specter

namespace geometry_detail {

template <class F, std::size_t... I>
decltype(auto) with_geometry(Geometry g, F& f, std::index_sequence<I...>) {
  using Result = decltype(f(std::tuple_element_t<0, Geometries>{}));
  if constexpr (std::is_void_v<Result>) {
    const bool found = ((std::tuple_element_t<I, Geometries>::id == g
                             ? (f(std::tuple_element_t<I, Geometries>{}), true)
                             : false) ||
                        ...);
    if (!found) throw Error(std::string("no patch geometry '") + geometry_name(g) + "'");
  } else {
    std::optional<Result> result;
    ((std::tuple_element_t<I, Geometries>::id == g
          ? (result.emplace(f(std::tuple_element_t<I, Geometries>{})), true)
          : false) ||
     ...);
    if (!result) throw Error(std::string("no patch geometry '") + geometry_name(g) + "'");
    return Result(std::move(*result));
  }
}

}  // namespace geometry_detail

// f(the geometry g names), an object of its type in Geometries; returns what f returns (the
// same type for every geometry). An automatic geometry has no type: resolve_geometry first.
template <class F>
decltype(auto) with_geometry(Geometry g, F&& f) {
  return geometry_detail::with_geometry(
      g, f, std::make_index_sequence<std::tuple_size<Geometries>::value>());
}

// The one rule for an automatic geometry: gpu_specter's for the PSFs gpu_specter reads
// (GAUSS-HERMITE in specex's HDUs PSF, XTRACE and YTRACE, and gpu_specter's PSF dicts), specter's
// for every other format, which specter alone extracts.
inline Geometry automatic_geometry(const psf::AnyPsfData& psf) {
  const auto* gh = psf.get_if<psf::GaussHermitePsfData>();
  return gh && gh->specex_layout() ? Geometry::gpu_specter : Geometry::specter;
}

// An automatic geometry made concrete (automatic_geometry); others are kept. Every front end
// (resolve_request) and extract_frame on PSF data resolve it so.
inline void resolve_geometry(ExtractionOptions& o, const psf::AnyPsfData& psf) {
  if (o.geometry == Geometry::automatic) o.geometry = automatic_geometry(psf);
}

// Where no PSF data tell the format (a plan from a PSF model alone, bundles from the options
// alone), an automatic geometry is gpu_specter's: the format rule's answer for DESI's PSFs.
inline Geometry resolved_geometry(Geometry g) {
  return g == Geometry::automatic ? Geometry::gpu_specter : g;
}

// What the blocks of a geometry's model image hold and how they fold (model_image.hpp).
inline ModelFold model_fold(Geometry g) {
  return with_geometry(resolved_geometry(g),
                       [](auto geometry) { return decltype(geometry)::model_fold; });
}

// The bundles of the request over a PSF of psf_nfib fibres, by its geometry; throws
// RequestError unless the requested fibres are the PSF's.
inline std::vector<BundlePlan> plan_bundles(const ExtractionOptions& o, int psf_nfib) {
  return with_geometry(resolved_geometry(o.geometry),
                       [&](auto geometry) { return geometry.bundles(o, psf_nfib); });
}

}  // namespace extract
}  // namespace perfex
