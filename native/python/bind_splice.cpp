// Python bindings for the KV splice kernels: RoPE re-anchoring of F16 K rows and the transposed-V copies.
//
// Arrays are used in place (no copies, nothing cast): a wrong dtype, rank, layout or a read-only array is a
// ValueError naming the argument, as is any bad size or parameter (the kernels' std::invalid_argument maps to
// ValueError too). The GIL is released while a kernel runs; the arrays and buffers stay referenced meanwhile.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>

#include "../splice/rope_shift.h"
#include "../splice/v_trans.h"
#include "array_checks.h"
#include "bindings.h"

namespace py = pybind11;
using nexus::splice::RopeParams;
using nexus::splice::RopeType;

namespace nexus::python {
namespace {

using npy = py::detail::npy_api;

// A numpy array of exactly `kind`/`itemsize` in native byte order and rank `ndim`; `want` is for the message.
py::array typed_array(py::handle h, const char* fn, const char* name, char kind, py::ssize_t itemsize, int ndim,
                      const char* want) {
    if (!py::isinstance<py::array>(h)) {
        fail(fn, std::string(name) + " must be a numpy.ndarray (" + want + "), got " +
                     std::string(py::str(py::type::handle_of(h).attr("__name__"))));
    }
    auto a = py::reinterpret_borrow<py::array>(h);
    const py::dtype dt = a.dtype();
    if (dt.kind() != kind || dt.itemsize() != itemsize || dt.byteorder() == kSwappedOrder || a.ndim() != ndim) {
        fail(fn, std::string(name) + " must be " + want + ", got " + describe(a));
    }
    return a;
}

// A 1-D C-contiguous aligned array (deltas, freq_factors).
py::array vector_arg(py::handle h, const char* fn, const char* name, char kind, const char* want) {
    py::array a = typed_array(h, fn, name, kind, 4, 1, want);
    const int flags = a.flags();
    if (!(flags & npy::NPY_ARRAY_C_CONTIGUOUS_) || !(flags & npy::NPY_ARRAY_ALIGNED_)) {
        fail(fn, std::string(name) + " must be C-contiguous and aligned (use np.ascontiguousarray)");
    }
    return a;
}

// An integer (anything with __index__: int, numpy integers) in [lo, hi]; a ValueError otherwise, also for
// non-integers and ints too large for C.
long long int_arg(py::handle v, const char* fn, const char* name, long long lo, long long hi) {
    PyObject* idx = PyNumber_Index(v.ptr());
    if (idx == nullptr) {
        PyErr_Clear();
        fail(fn, std::string(name) + " must be an integer, got " +
                     std::string(py::str(py::type::handle_of(v).attr("__name__"))));
    }
    const auto owned = py::reinterpret_steal<py::object>(idx);
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(idx, &overflow);
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0 || x < lo || x > hi) {
        fail(fn, std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                     std::string(py::str(owned)));
    }
    return x;
}

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kSsizeMax = std::numeric_limits<py::ssize_t>::max();

// Row stride in elements of a 2-D array whose inner dimension must be contiguous (items of `itemsize` bytes).
std::size_t row_stride_elems(const py::array& a, const char* fn, const char* name) {
    const py::ssize_t item = a.itemsize();
    if (a.shape(0) == 0) return static_cast<std::size_t>(a.shape(1));  // no rows: numpy may report any strides
    if (a.shape(1) > 1 && a.strides(1) != item) {
        fail(fn, std::string(name) + " must have a contiguous inner dimension (strides[1] == " + std::to_string(item) +
                     "), got strides (" + std::to_string(a.strides(0)) + ", " + std::to_string(a.strides(1)) + ")");
    }
    if (a.shape(0) <= 1) return static_cast<std::size_t>(a.shape(1));  // the row stride is never used
    if (a.strides(0) < 0 || a.strides(0) % item != 0) {
        fail(fn, std::string(name) + " rows must have a non-negative stride that is a multiple of " +
                     std::to_string(item) + " bytes, got " + std::to_string(a.strides(0)));
    }
    return static_cast<std::size_t>(a.strides(0) / item);
}

void rope_shift_py(py::handle k, py::handle deltas, py::handle n_rot, py::handle head_dim,
                   py::handle n_head_kv, py::handle rope_type, double freq_base, double freq_scale,
                   double ext_factor, double attn_factor, double beta_fast, double beta_slow, py::handle n_ctx_orig,
                   py::handle freq_factors) {
    constexpr const char* fn = "rope_shift_f16";
    py::array ka = typed_array(k, fn, "k", 'u', 2, 2, "a uint16 (f16 bits) array of shape (n_rows, width)");
    if (!(ka.flags() & npy::NPY_ARRAY_WRITEABLE_)) fail(fn, "k must be writeable");
    if (!(ka.flags() & npy::NPY_ARRAY_ALIGNED_)) fail(fn, "k must be aligned");
    const std::size_t stride = row_stride_elems(ka, fn, "k");
    const auto n_rows = static_cast<std::size_t>(ka.shape(0));

    const py::array da = vector_arg(deltas, fn, "deltas", 'i', "an int32 array of shape (n_rows,)");
    if (static_cast<std::size_t>(da.shape(0)) != n_rows) {
        fail(fn, "deltas has " + std::to_string(da.shape(0)) + " entries, k has " + std::to_string(n_rows) + " rows");
    }

    RopeParams p{};
    p.n_rot = static_cast<int>(int_arg(n_rot, fn, "n_rot", 2, kIntMax));
    p.head_dim = static_cast<int>(int_arg(head_dim, fn, "head_dim", 1, kIntMax));
    p.n_head_kv = static_cast<int>(int_arg(n_head_kv, fn, "n_head_kv", 1, kIntMax));
    const long long rt = int_arg(rope_type, fn, "rope_type", 0, 2);
    if (rt != static_cast<long long>(RopeType::Norm) && rt != static_cast<long long>(RopeType::Neox)) {
        fail(fn, "rope_type must be 0 (NORM) or 2 (NEOX), got " + std::to_string(rt));
    }
    p.type = static_cast<RopeType>(rt);
    p.freq_base = static_cast<float>(freq_base);
    p.freq_scale = static_cast<float>(freq_scale);
    p.ext_factor = static_cast<float>(ext_factor);
    p.attn_factor = static_cast<float>(attn_factor);
    p.beta_fast = static_cast<float>(beta_fast);
    p.beta_slow = static_cast<float>(beta_slow);
    p.n_ctx_orig = static_cast<int>(int_arg(n_ctx_orig, fn, "n_ctx_orig", 0, kIntMax));

    const auto width = static_cast<long long>(p.n_head_kv) * p.head_dim;
    if (static_cast<long long>(ka.shape(1)) < width) {
        fail(fn, "k rows have " + std::to_string(ka.shape(1)) + " elements, n_head_kv*head_dim = " +
                     std::to_string(width));
    }

    const float* ff = nullptr;
    py::array fa;
    if (!freq_factors.is_none()) {
        fa = vector_arg(freq_factors, fn, "freq_factors", 'f', "None or a float32 array of shape (n_rot/2,)");
        if (fa.shape(0) < p.n_rot / 2) {
            fail(fn, "freq_factors has " + std::to_string(fa.shape(0)) + " entries, n_rot/2 = " +
                         std::to_string(p.n_rot / 2));
        }
        ff = static_cast<const float*>(fa.data());
    }
    auto* rows = static_cast<std::uint16_t*>(ka.mutable_data());
    const auto* d = static_cast<const std::int32_t*>(da.data());
    py::gil_scoped_release nogil;
    nexus::splice::rope_shift_f16(rows, n_rows, stride, d, p, ff);
}

// A C-contiguous buffer export, released on scope exit.
class Buffer {
public:
    Buffer(py::handle obj, bool writable, const char* fn, const char* name) {
        const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
            PyErr_Clear();
            fail(fn, std::string(name) + " must be a C-contiguous" + (writable ? " writable" : "") +
                         " buffer (bytes-like object), got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
        }
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { PyBuffer_Release(&view_); }
    std::uint8_t* data() const { return static_cast<std::uint8_t*>(view_.buf); }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

private:
    Py_buffer view_{};
};

// The byte offset of the transposed region in a buffer of `len` bytes (at most len).
std::size_t checked_offset(py::handle off, std::size_t len, const char* fn, const char* name) {
    const auto o = static_cast<std::size_t>(int_arg(off, fn, name, 0, kSsizeMax));
    if (o > len) {
        fail(fn, std::string(name) + " " + std::to_string(o) + " is past the buffer's " + std::to_string(len) +
                     " bytes");
    }
    return o;
}

void write_v_trans_py(py::handle dst, py::handle dst_offset, py::handle n_embd_v,
                      py::handle total_cells, py::handle cell_offset, py::handle src) {
    constexpr const char* fn = "write_v_trans";
    const Buffer out(dst, true, fn, "dst");
    const std::size_t off = checked_offset(dst_offset, out.size(), fn, "dst_offset");
    const auto ne = static_cast<std::size_t>(int_arg(n_embd_v, fn, "n_embd_v", 0, kSsizeMax));
    const auto tc = static_cast<std::size_t>(int_arg(total_cells, fn, "total_cells", 0, kSsizeMax));
    const auto co = static_cast<std::size_t>(int_arg(cell_offset, fn, "cell_offset", 0, kSsizeMax));
    const py::array sa =
        typed_array(src, fn, "src", 'u', 2, 2, "a uint16 (f16 bits) array of shape (n_cells, n_embd_v)");
    if (static_cast<std::size_t>(sa.shape(1)) != ne) {
        fail(fn, "src rows have " + std::to_string(sa.shape(1)) + " elements, n_embd_v = " + std::to_string(ne));
    }
    const std::size_t stride = row_stride_elems(sa, fn, "src") * 2;
    const auto n_cells = static_cast<std::size_t>(sa.shape(0));
    const auto* s = static_cast<const std::uint8_t*>(sa.data());
    py::gil_scoped_release nogil;
    nexus::splice::write_v_trans(out.data() + off, out.size() - off, ne, tc, co, s, n_cells, stride, 2);
}

py::array read_v_trans_py(py::handle src_buffer, py::handle src_offset, py::handle n_embd_v,
                          py::handle total_cells) {
    constexpr const char* fn = "read_v_trans";
    const Buffer in(src_buffer, false, fn, "src_buffer");
    const std::size_t off = checked_offset(src_offset, in.size(), fn, "src_offset");
    const auto ne = static_cast<std::size_t>(int_arg(n_embd_v, fn, "n_embd_v", 0, kSsizeMax));
    const auto tc = static_cast<std::size_t>(int_arg(total_cells, fn, "total_cells", 0, kSsizeMax));
    // Checked before allocating the result (the kernel checks again).
    const std::size_t avail = (in.size() - off) / 2;
    if (ne != 0 && tc > avail / ne) {
        fail(fn, "n_embd_v * total_cells = " + std::to_string(ne) + " * " + std::to_string(tc) +
                     " f16 elements do not fit the " + std::to_string(in.size() - off) + " bytes after src_offset");
    }
    py::array_t<std::uint16_t> out({static_cast<py::ssize_t>(tc), static_cast<py::ssize_t>(ne)});
    auto* o = reinterpret_cast<std::uint8_t*>(out.mutable_data());
    {
        py::gil_scoped_release nogil;
        nexus::splice::read_v_trans(in.data() + off, in.size() - off, ne, tc, 0, o, tc, ne * 2, 2);
    }
    return out;
}

}  // namespace

void bind_splice(py::module_& m) {
    m.def("rope_shift_f16", &rope_shift_py, py::arg("k"), py::arg("deltas"), py::arg("n_rot"), py::arg("head_dim"),
          py::arg("n_head_kv"), py::arg("rope_type"), py::arg("freq_base"), py::arg("freq_scale") = 1.0,
          py::arg("ext_factor") = 0.0, py::arg("attn_factor") = 1.0, py::arg("beta_fast") = 32.0,
          py::arg("beta_slow") = 1.0, py::arg("n_ctx_orig") = 0, py::arg("freq_factors") = py::none(),
          "Rotate F16 K rows in place by per-row position deltas, bit-exact with llama.cpp's K-shift.\n\n"
          "k: writable uint16 (f16 bits) array (n_rows, width), width >= n_head_kv*head_dim, rows may be strided\n"
          "(inner dimension contiguous); each row is n_head_kv heads of head_dim values, of which the first n_rot\n"
          "rotate (rope_type 0 = NORM: adjacent pairs; 2 = NEOX: halves). deltas: int32 (n_rows,). The float\n"
          "parameters are rounded to float32 (llama.cpp's cparams); freq_factors: None or float32 (>= n_rot/2,)\n"
          "(rope_freqs). ValueError on a bad argument. Releases the GIL.");
    m.def("write_v_trans", &write_v_trans_py, py::arg("dst"), py::arg("dst_offset"), py::arg("n_embd_v"),
          py::arg("total_cells"), py::arg("cell_offset"), py::arg("src"),
          "Write token-major V rows into a transposed (v_trans) region of a buffer.\n\n"
          "dst: writable C-contiguous buffer; the region starts at byte dst_offset and is n_embd_v runs of\n"
          "total_cells f16 elements. src: uint16 (n_cells, n_embd_v), inner dimension contiguous; it lands in\n"
          "columns cell_offset .. cell_offset+n_cells-1. ValueError (nothing written) on a bad argument.");
    m.def("read_v_trans", &read_v_trans_py, py::arg("src_buffer"), py::arg("src_offset"), py::arg("n_embd_v"),
          py::arg("total_cells"),
          "Read a transposed (v_trans) region (n_embd_v runs of total_cells f16 elements at byte src_offset of a\n"
          "C-contiguous buffer) as token-major rows: a new uint16 array (total_cells, n_embd_v).");
}

}  // namespace nexus::python
