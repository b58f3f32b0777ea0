#pragma once
// perfex.extraction's job: one frame's extraction in the library's phases (perfex/extract/
// job.hpp), held between them for the Python drivers (the API, an MPI rank, an exposure):
// job::check when built, job::plan, then job::extract from an image (HostImage or
// CudaArrayImage), of all the plan's patches or a range of them.
#include <perfex/backends.hpp>
#include <perfex/extract/job.hpp>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>

#include "bindings.hpp"
#include "images.hpp"

namespace perfex_py {

namespace job_detail {
// The planned jobs of one backend, one per PSF format.
template <class E, class Formats>
struct BackendJobs;
template <class E, class... F>
struct BackendJobs<E, std::variant<F...>> {
  using type = std::tuple<perfex::extract::PlannedJobOf<E, F>...>;
};
// A variant of every (backend, PSF format)'s planned job.
template <class Backends>
struct PlannedJobs;
template <class... E>
struct PlannedJobs<std::tuple<E...>> {
  template <class... Jobs>
  static std::variant<Jobs...> as_variant(std::tuple<Jobs...>*);
  using type = decltype(as_variant(
      static_cast<decltype(std::tuple_cat(
          std::declval<typename BackendJobs<E, perfex::psf::AnyPsfData::Formats>::type>()...))*>(
          nullptr)));
};
}  // namespace job_detail

class FrameJob : public HoldsKokkos {
 public:
  using Times = std::shared_ptr<perfex::PhaseTimes>;

  // job::check of `request` for a ccd_rows x ccd_cols image on `backend`, its phases timed into
  // `times` (the caller's: its own phases hold the job's). frame_warnings: the frames start
  // with the check's warnings (false: another rank's frame, whose check rank 0 reports).
  FrameJob(const perfex::psf::AnyPsfData& psf, const perfex::extract::Request& request,
           int ccd_rows, int ccd_cols, const perfex::extract::ParameterNames& names,
           const std::string& backend, Times times, bool frame_warnings);
  // A request resolved already (a frame's files: check_files_job, which notes its warnings for
  // the frame file's header, so the frames do not repeat them).
  FrameJob(const perfex::psf::AnyPsfData& psf, perfex::extract::ResolvedRequest resolved,
           int ccd_rows, int ccd_cols, const std::string& backend, Times times);

  // job::plan, once.
  void plan();
  // job::extract of patches [first, last) (last < 0: to the end), planning first if needed;
  // progress: a Python callable(done, total) or None (an exception it raises ends the run);
  // model_blocks: the model image's blocks of the range instead of the image (an MPI rank's).
  template <class Image>
  py::dict extract(Image& image, const py::object& progress, int first, int last,
                   bool model_blocks);

  void release() override { planned_.reset(); }

  const perfex::extract::ResolvedRequest& resolved() const { return resolved_; }
  const std::string& backend() const { return backend_; }
  const perfex::psf::AnyPsfData& psf() const { return psf_; }
  int ccd_rows() const { return ccd_rows_; }
  int ccd_cols() const { return ccd_cols_; }
  // The warnings the frames start with (the check's, or none).
  const std::vector<std::string>& frame_warnings() const;
  // The plan's patches on the host (planning first if needed).
  const std::vector<perfex::extract::PatchDesc>& patches();
  int nwave();
  int ndiag();
  std::vector<double> flops();
  // (row0, row1, col0, col1) of the pixels patches [first, last) read, or None.
  py::object pixel_box(int first, int last);

 private:
  template <class F>
  decltype(auto) with_plan(F&& f);

  perfex::psf::AnyPsfData psf_;
  perfex::extract::ResolvedRequest resolved_;
  int ccd_rows_ = 0, ccd_cols_ = 0;
  std::string backend_;
  Times times_;
  bool frame_warnings_ = true;
  std::optional<typename job_detail::PlannedJobs<perfex::ExecSpaces>::type> planned_;
};

}  // namespace perfex_py
