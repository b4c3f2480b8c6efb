// Attention observation on llama.cpp for KV eviction (issue 26): an eval callback that llama.cpp's scheduler calls
// for every graph node, written here so that nothing per tensor runs in Python.
//
// Two capture modes:
//   q  (1): each layer's post-RoPE Q ("Qcur-<il>", a GGML_OP_ROPE node, float32 [head_dim, n_head, n_tokens]) goes
//           into the target QRing (native/kv/qring.h). Scores are Q·Kᵀ against K from the sequence state, by position.
//   kq (2): each layer's softmaxed attention ("kq_soft_max-<il>", [n_kv, n_tokens, n_head]) is reduced to the mean
//           over heads of its last token row and the sum over its last `window` rows. Columns are KV *cells*, which
//           llama.cpp's public API does not map to positions, so this mode serves the overhead comparison and the
//           test that checks the Q path against llama.cpp's own softmax on a single-sequence context (cell = pos).
// Off (0), the callback answers "not needed" for every node and the scheduler computes each split in one go.
//
// CPU only: data is read through tensor->data, which is host memory for the CPU backend (the engine offloads no
// layer). The ggml.h used is the one installed with llama-cpp-python, so the struct layout is the running library's.
#include <ggml.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../kv/qring.h"
#include "array_checks.h"
#include "bindings.h"

namespace py = pybind11;
using nexus::kv::QRing;

namespace nexus::python {
namespace {

enum Mode : int { kOff = 0, kQ = 1, kKQ = 2 };

struct Observer {
    explicit Observer(int32_t n_layer, int32_t window) : n_layer(n_layer), window(window) {}
    int32_t n_layer;
    int32_t window;
    int mode = kOff;
    QRing* ring = nullptr;
    py::object ring_ref;  // keeps the target ring alive while the callback may write to it
    int64_t kq_n_kv = 0;
    std::vector<float> kq_last;    // [n_layer][n_kv]: mean over heads of the last token's attention row
    std::vector<float> kq_window;  // [n_layer][n_kv]: sum over heads and the last `window` tokens
    int64_t captured = 0;  // tensors copied
    int64_t rejected = 0;  // tensors that matched by name but not by shape
};

// "Qcur-12" -> 12 for prefix "Qcur"; -1 when the name is not prefix-<int>.
int layer_of(const char* name, const char* prefix) {
    const size_t n = std::strlen(prefix);
    if (std::strncmp(name, prefix, n) != 0 || name[n] != '-') return -1;
    char* end = nullptr;
    const long il = std::strtol(name + n + 1, &end, 10);
    if (end == name + n + 1 || *end != '\0' || il < 0 || il > 100000) return -1;
    return static_cast<int>(il);
}

bool wanted(const Observer& o, const ggml_tensor* t) {
    if (t->type != GGML_TYPE_F32) return false;
    if (o.mode == kQ) return t->op == GGML_OP_ROPE && layer_of(t->name, "Qcur") >= 0;
    if (o.mode == kKQ) return t->op == GGML_OP_SOFT_MAX && layer_of(t->name, "kq_soft_max") >= 0;
    return false;
}

void capture_kq(Observer& o, const ggml_tensor* t, int layer) {
    const int64_t n_kv = t->ne[0], n_tok = t->ne[1], n_head = t->ne[2];
    if (layer >= o.n_layer || t->data == nullptr || t->nb[0] != sizeof(float)) {
        ++o.rejected;
        return;
    }
    if (n_kv != o.kq_n_kv) {
        o.kq_n_kv = n_kv;
        o.kq_last.assign(static_cast<size_t>(o.n_layer * n_kv), 0.0f);
        o.kq_window.assign(static_cast<size_t>(o.n_layer * n_kv), 0.0f);
    }
    float* last = o.kq_last.data() + static_cast<size_t>(layer) * static_cast<size_t>(n_kv);
    float* win = o.kq_window.data() + static_cast<size_t>(layer) * static_cast<size_t>(n_kv);
    std::fill(last, last + n_kv, 0.0f);
    std::fill(win, win + n_kv, 0.0f);
    const auto* base = static_cast<const unsigned char*>(t->data);
    const int64_t first = std::max<int64_t>(0, n_tok - o.window);
    for (int64_t h = 0; h < n_head; ++h) {
        for (int64_t r = first; r < n_tok; ++r) {
            const auto* row = reinterpret_cast<const float*>(base + static_cast<size_t>(h) * t->nb[2] +
                                                             static_cast<size_t>(r) * t->nb[1]);
            for (int64_t c = 0; c < n_kv; ++c) win[c] += row[c];
            if (r == n_tok - 1) {
                for (int64_t c = 0; c < n_kv; ++c) last[c] += row[c] / static_cast<float>(n_head);
            }
        }
    }
    ++o.captured;
}

bool observe(ggml_tensor* t, bool ask, void* user_data) {
    auto& o = *static_cast<Observer*>(user_data);
    if (ask) return o.mode != kOff && wanted(o, t);
    // ask == false: the node was just computed and its data is valid until the scheduler moves on.
    if (o.mode == kQ && o.ring != nullptr) {
        const int layer = layer_of(t->name, "Qcur");
        const bool ok = t->nb[0] == sizeof(float) &&
                        o.ring->stage(layer, static_cast<const float*>(t->data), t->ne[0], t->ne[1], t->ne[2],
                                      t->nb[1], t->nb[2]);
        ok ? ++o.captured : ++o.rejected;
    } else if (o.mode == kKQ) {
        capture_kq(o, t, layer_of(t->name, "kq_soft_max"));
    }
    return true;  // never cancel the graph
}

using F32 = py::array_t<float, py::array::c_style>;
using I32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

}  // namespace

void bind_observe(py::module_& m) {
    py::class_<QRing>(m, "QRing",
                      "The last `capacity` post-RoPE query rows of one sequence, every layer (float32). Filled by an "
                      "Observer during llama_decode; committed with the batch's positions.")
        .def(py::init<int32_t, int32_t, int32_t, int32_t>(), py::arg("n_layer"), py::arg("n_head"),
             py::arg("head_dim"), py::arg("capacity"))
        .def(
            "stage",
            [](QRing& r, int32_t layer, const F32& q) {
                if (q.ndim() != 3) fail("QRing.stage", "q must be float32 [n_tokens, n_head, head_dim], got " + describe(q));
                return r.stage(layer, q.data(), q.shape(2), q.shape(1), q.shape(0),
                               static_cast<size_t>(q.strides(1)), static_cast<size_t>(q.strides(0)));
            },
            py::arg("layer"), py::arg("q"),
            "Stage one layer's rows from a float32 [n_tokens, n_head, head_dim] array (what the observer does from the "
            "graph; for tests). False when the shape does not fit.")
        .def(
            "commit",
            [](QRing& r, py::handle positions) {
                I32 p = I32::ensure(positions);
                if (!p || p.ndim() != 1) {
                    PyErr_Clear();
                    fail("QRing.commit", "positions must be a 1-D sequence of ints");
                }
                return r.commit(p.data(), p.shape(0));
            },
            py::arg("positions"),
            "The staged batch held these token positions; its last rows enter the ring. False (and the ring empties) "
            "unless every layer was staged for exactly this many tokens.")
        .def("abort", &QRing::abort, "Drop a staged batch that was not decoded (the ring empties if rows were staged).")
        .def("clear", &QRing::clear)
        .def_property_readonly("count", &QRing::count)
        .def_property_readonly("capacity", &QRing::capacity)
        .def_property_readonly("staged_layers", &QRing::staged_layers)
        .def(
            "rows",
            [](const QRing& r) {
                const auto n = static_cast<py::ssize_t>(r.count());
                F32 q({n, static_cast<py::ssize_t>(r.n_layer()), static_cast<py::ssize_t>(r.n_head()),
                       static_cast<py::ssize_t>(r.head_dim())});
                py::array_t<int32_t> pos(n);
                r.copy_out(q.mutable_data(), pos.mutable_data());
                return py::make_tuple(q, pos);
            },
            "(q, pos): float32 [count, n_layer, n_head, head_dim] and int32 [count], oldest first.");

    py::class_<Observer>(m, "Observer",
                         "llama.cpp eval callback state: captures post-RoPE Q into a QRing (mode 1) or reduces "
                         "kq_soft_max rows (mode 2). Pass callback_address() and address as cb_eval and "
                         "cb_eval_user_data when creating the context; the Observer must outlive it.")
        .def(py::init<int32_t, int32_t>(), py::arg("n_layer"), py::arg("window"))
        .def_static(
            "callback_address", [] { return reinterpret_cast<uintptr_t>(&observe); },
            "Address of the C callback (ggml_backend_sched_eval_callback).")
        .def_property_readonly("address", [](Observer& o) { return reinterpret_cast<uintptr_t>(&o); })
        .def_property(
            "mode", [](const Observer& o) { return o.mode; },
            [](Observer& o, int mode) {
                if (mode < kOff || mode > kKQ) fail("Observer.mode", "mode must be 0 (off), 1 (q) or 2 (kq)");
                o.mode = mode;
            })
        .def(
            "target",
            [](Observer& o, py::object ring) {
                if (ring.is_none()) {
                    o.ring = nullptr;
                    o.ring_ref = py::none();
                    return;
                }
                auto& r = ring.cast<QRing&>();
                if (r.n_layer() != o.n_layer) fail("Observer.target", "the ring's layer count differs from the model's");
                o.ring = &r;
                o.ring_ref = ring;
            },
            py::arg("ring"), "The QRing that mode 1 fills (None: none).")
        .def(
            "kq_rows",
            [](const Observer& o) {
                const auto nl = static_cast<py::ssize_t>(o.n_layer), nk = static_cast<py::ssize_t>(o.kq_n_kv);
                F32 last({nl, nk}), win({nl, nk});
                std::copy(o.kq_last.begin(), o.kq_last.end(), last.mutable_data());
                std::copy(o.kq_window.begin(), o.kq_window.end(), win.mutable_data());
                return py::make_tuple(last, win);
            },
            "(last, window): float32 [n_layer, n_kv] from the last batch in mode 2: the last token's attention row "
            "averaged over heads, and the sum over heads and the last `window` rows. Columns are KV cells.")
        .def(
            "stats", [](const Observer& o) { return py::dict(py::arg("captured") = o.captured, py::arg("rejected") = o.rejected); },
            "Tensors captured and tensors that matched by name but were refused (shape, layer) since creation.");
}

}  // namespace nexus::python
