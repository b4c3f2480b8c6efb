// Python bindings for the INT8 scan.
//
// The per-query path (scan_topk_i8) is on the SLB's hot loop, where a scan of 250 rows takes ~1 us, so the
// binding avoids every conversion that could copy: arguments arrive as plain handles, are checked with
// direct flag/dtype reads, and kernels read numpy's buffers in place. Anything unexpected is a ValueError
// naming the argument; nothing is cast or copied silently.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../scan/dispatch.h"
#include "../scan/topk.h"
#include "array_checks.h"
#include "bindings.h"

namespace py = pybind11;
using nexus::scan::IsaKernel;
using nexus::scan::ScanArgs;

namespace nexus::python {
namespace {

using npy = py::detail::npy_api;

// Checks a numpy array argument: exact dtype (native byte order), rank, C-contiguous, aligned and
// (when written) writeable. `want` describes the expectation for the error message.
py::array checked(py::handle h, const char* fn, const char* name, int type_num, int ndim, const char* want,
                  bool writeable = false) {
    if (!py::isinstance<py::array>(h)) {
        fail(fn, std::string(name) + " must be a numpy.ndarray (" + want + "), got " +
                     std::string(py::str(py::type::handle_of(h).attr("__name__"))));
    }
    auto a = py::reinterpret_borrow<py::array>(h);
    const py::dtype dt = a.dtype();
    if (dt.num() != type_num || dt.byteorder() == kSwappedOrder || a.ndim() != ndim) {
        fail(fn, std::string(name) + " must be " + want + ", got " + describe(a));
    }
    const int flags = a.flags();
    if (!(flags & npy::NPY_ARRAY_C_CONTIGUOUS_) || !(flags & npy::NPY_ARRAY_ALIGNED_)) {
        fail(fn, std::string(name) + " must be C-contiguous and aligned (use np.ascontiguousarray)");
    }
    if (writeable && !(flags & npy::NPY_ARRAY_WRITEABLE_)) fail(fn, std::string(name) + " must be writeable");
    return a;
}

const IsaKernel& resolve_isa(py::handle isa, const char* fn) {
    if (isa.is_none()) return nexus::scan::active_isa();
    if (!py::isinstance<py::str>(isa)) fail(fn, "isa must be a str or None");
    const auto name = isa.cast<std::string>();
    const IsaKernel* k = nexus::scan::find_isa(name);
    if (k == nullptr) {
        fail(fn, "ISA '" + name + "' is not available on this machine (available: " +
                     nexus::scan::available_isa_names() + ")");
    }
    return *k;
}

// Validated scan inputs. `out` is left null for the caller to fill in.
ScanArgs scan_args(const char* fn, py::handle matrix, py::handle row_scales, py::handle query, float query_scale) {
    const py::array m = checked(matrix, fn, "matrix", npy::NPY_BYTE_, 2, "an int8 array of shape (N, d)");
    const auto n = static_cast<std::size_t>(m.shape(0));
    const auto d = static_cast<std::size_t>(m.shape(1));
    if (d == 0 || d > nexus::scan::kMaxDim) {
        fail(fn, "d = matrix.shape[1] must be in [1, " + std::to_string(nexus::scan::kMaxDim) + "], got " +
                     std::to_string(d));
    }
    const py::array s = checked(row_scales, fn, "row_scales", npy::NPY_FLOAT_, 1, "a float32 array of shape (N,)");
    if (static_cast<std::size_t>(s.shape(0)) != n) {
        fail(fn, "row_scales has " + std::to_string(s.shape(0)) + " entries, matrix has " + std::to_string(n) + " rows");
    }
    const py::array q = checked(query, fn, "query", npy::NPY_BYTE_, 1, "an int8 array of shape (d,)");
    if (static_cast<std::size_t>(q.shape(0)) != d) {
        fail(fn, "query has length " + std::to_string(q.shape(0)) + ", matrix rows have d = " + std::to_string(d));
    }
    return ScanArgs{static_cast<const std::int8_t*>(m.data()), static_cast<const float*>(s.data()), n, d,
                    static_cast<const std::int8_t*>(q.data()), query_scale, nullptr};
}

std::size_t checked_k(py::ssize_t k, const char* fn) {
    if (k < 0) fail(fn, "k must be >= 0, got " + std::to_string(k));
    return static_cast<std::size_t>(k);
}

py::array scan_i8(py::handle matrix, py::handle row_scales, py::handle query, float query_scale, py::handle out,
                  py::handle isa) {
    constexpr const char* fn = "scan_i8";
    ScanArgs args = scan_args(fn, matrix, row_scales, query, query_scale);
    const IsaKernel& kernel = resolve_isa(isa, fn);
    py::array result;
    if (out.is_none()) {
        result = py::array_t<float>(static_cast<py::ssize_t>(args.n));
    } else {
        result = checked(out, fn, "out", npy::NPY_FLOAT_, 1, "a float32 array of shape (N,)", true);
        if (static_cast<std::size_t>(result.shape(0)) != args.n) {
            fail(fn, "out has length " + std::to_string(result.shape(0)) + ", expected N = " + std::to_string(args.n));
        }
    }
    args.out = static_cast<float*>(result.mutable_data());
    {
        py::gil_scoped_release nogil;
        kernel.scan(args);
    }
    return result;
}

py::tuple topk_py(py::handle scores, py::ssize_t k_in) {
    constexpr const char* fn = "topk_f32";
    const py::array s = checked(scores, fn, "scores", npy::NPY_FLOAT_, 1, "a float32 array of shape (N,)");
    const std::size_t n = static_cast<std::size_t>(s.shape(0));
    const std::size_t k = std::min(checked_k(k_in, fn), n);
    py::array_t<std::int64_t> indices(static_cast<py::ssize_t>(k));
    py::array_t<float> values(static_cast<py::ssize_t>(k));
    // No GIL release: selection over a few thousand floats costs less than the release/reacquire.
    nexus::scan::topk_f32(static_cast<const float*>(s.data()), n, k, indices.mutable_data(), values.mutable_data());
    return py::make_tuple(std::move(indices), std::move(values));
}

// Per-thread scratch so the hot path allocates nothing but its result arrays.
struct Scratch {
    std::vector<float> scores;
    std::vector<std::int64_t> top_indices;
    std::vector<float> top_values;
};
thread_local Scratch t_scratch;

// Scan then select into the thread's scratch; returns how many of the top entries are valid (min(k2, n)).
std::size_t scan_then_topk(const IsaKernel& kernel, ScanArgs args, std::size_t k2) {
    Scratch& s = t_scratch;
    if (s.scores.size() < args.n) s.scores.resize(args.n);
    if (s.top_indices.size() < k2) {
        s.top_indices.resize(k2);
        s.top_values.resize(k2);
    }
    args.out = s.scores.data();
    kernel.scan(args);
    return nexus::scan::topk_f32(args.out, args.n, k2, s.top_indices.data(), s.top_values.data());
}

py::tuple scan_topk_i8(py::handle matrix, py::handle row_scales, py::handle query, float query_scale,
                       py::ssize_t k_in, py::handle isa) {
    constexpr const char* fn = "scan_topk_i8";
    const ScanArgs args = scan_args(fn, matrix, row_scales, query, query_scale);
    const std::size_t k = checked_k(k_in, fn);
    const IsaKernel& kernel = resolve_isa(isa, fn);
    // The margin needs the top two even when k < 2.
    const std::size_t k2 = std::max<std::size_t>(k, 2);
    std::size_t found = 0;
    {
        py::gil_scoped_release nogil;
        found = scan_then_topk(kernel, args, k2);
    }
    const std::size_t kk = std::min(k, found);
    py::array_t<std::int64_t> indices(static_cast<py::ssize_t>(kk));
    py::array_t<float> values(static_cast<py::ssize_t>(kk));
    std::memcpy(indices.mutable_data(), t_scratch.top_indices.data(), kk * sizeof(std::int64_t));
    std::memcpy(values.mutable_data(), t_scratch.top_values.data(), kk * sizeof(float));
    double margin = std::numeric_limits<double>::quiet_NaN();  // N == 0: no best score, no margin
    if (found == 1) margin = std::numeric_limits<double>::infinity();
    if (found >= 2) margin = static_cast<double>(t_scratch.top_values[0] - t_scratch.top_values[1]);
    return py::make_tuple(std::move(indices), std::move(values), margin);
}

double bench_scan(py::handle matrix, py::handle row_scales, py::handle query, float query_scale, py::ssize_t iters,
                  py::ssize_t k_in, py::handle isa) {
    constexpr const char* fn = "bench_scan";
    const ScanArgs args = scan_args(fn, matrix, row_scales, query, query_scale);
    const std::size_t k = checked_k(k_in, fn);
    const IsaKernel& kernel = resolve_isa(isa, fn);
    if (iters < 1) fail(fn, "iters must be >= 1");
    py::gil_scoped_release nogil;
    std::vector<float> scores(args.n);
    std::vector<std::int64_t> top_indices(k);
    std::vector<float> top_values(k);
    ScanArgs a = args;
    a.out = scores.data();
    kernel.scan(a);  // warm caches and the branch predictor once before timing
    const auto t0 = std::chrono::steady_clock::now();
    for (py::ssize_t it = 0; it < iters; ++it) {
        kernel.scan(a);
        if (k) nexus::scan::topk_f32(a.out, a.n, k, top_indices.data(), top_values.data());
    }
    const auto t1 = std::chrono::steady_clock::now();
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) /
           static_cast<double>(iters);
}

}  // namespace

void bind_scan(py::module_& m) {
    m.def("isa", []() { return std::string(nexus::scan::active_isa().name); },
          "Name of the ISA used when none is given: 'avx512vnni', 'avxvnni', 'avx2', 'neon' or 'serial'.");
    m.def(
        "available_isas",
        []() {
            std::vector<std::string> names;
            for (const auto& k : nexus::scan::available_isas()) names.emplace_back(k.name);
            return names;
        },
        "ISAs this machine can run, best first; 'serial' is always last.");
    m.def(
        "set_isa",
        [](const std::string& name) {
            if (nexus::scan::find_isa(name) == nullptr) {
                throw py::value_error("set_isa: ISA '" + name + "' is not available on this machine (available: " +
                                      nexus::scan::available_isa_names() + ")");
            }
            nexus::scan::set_active_isa(name);
        },
        py::arg("name"), "Force the default ISA for all threads (tests, benchmarks). ValueError if unavailable.");
    m.def("scan_i8", &scan_i8, py::arg("matrix"), py::arg("row_scales"), py::arg("query"), py::arg("query_scale"),
          py::arg("out") = py::none(), py::arg("isa") = py::none(),
          "scores[i] = (float(dot_i32(matrix[i], query)) * row_scales[i]) * query_scale, float32 of shape (N,).\n\n"
          "matrix int8 (N, d), row_scales float32 (N,), query int8 (d,): C-contiguous, read in place (no copy).\n"
          "1 <= d <= 65536. query_scale is rounded to float32. Written into `out` (float32 (N,)) when given.\n"
          "Bit-identical across ISAs. Releases the GIL while scanning.");
    m.def("topk_f32", &topk_py, py::arg("scores"), py::arg("k"),
          "(indices int64 (k',), values float32 (k',)) of the k' = min(k, N) largest scores, descending;\n"
          "ties go to the lower index; NaN ranks below every number.");
    m.def("scan_topk_i8", &scan_topk_i8, py::arg("matrix"), py::arg("row_scales"), py::arg("query"),
          py::arg("query_scale"), py::arg("k"), py::arg("isa") = py::none(),
          "Fused scan_i8 + topk_f32: (indices int64 (k',), values float32 (k',), margin float).\n\n"
          "margin = top1 - top2 (the float32 difference); +inf when N == 1; nan when N == 0 (empty arrays).\n"
          "The margin uses the top two scores even when k < 2. Releases the GIL while scanning.");
    m.def("bench_scan", &bench_scan, py::arg("matrix"), py::arg("row_scales"), py::arg("query"),
          py::arg("query_scale"), py::arg("iters"), py::arg("k") = 0, py::arg("isa") = py::none(),
          "Mean nanoseconds per scan over `iters` back-to-back scans timed in C++ with steady_clock\n"
          "(plus top-k selection when k > 0). One untimed warm-up scan first. Releases the GIL.");
}

}  // namespace nexus::python
