// Python bindings for the exact-token radix tree of sequence slots.
//
// Tokens are a 1-D int32 numpy array, read in place (no copy: a lookup on an 8K-token prompt stays in the
// microseconds), or any Python sequence of ints, converted first. Another numpy dtype is a ValueError: a silent
// cast could wrap a token id. Bad slots are IndexError, a sequence past the slot capacity is ValueError, unlocking an
// unlocked slot is RuntimeError. The GIL is kept: every call is a few microseconds, shorter than releasing it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "../radix/radix_tree.h"
#include "array_checks.h"
#include "bindings.h"

namespace py = pybind11;
using nexus::radix::RadixTree;

namespace nexus::python {
namespace {

using Tokens = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

Tokens as_tokens(py::handle h, const char* fn) {
    if (py::isinstance<py::array>(h)) {
        auto a = py::reinterpret_borrow<py::array>(h);
        const py::dtype dt = a.dtype();
        if (dt.kind() != 'i' || dt.itemsize() != 4 || dt.byteorder() == kSwappedOrder || a.ndim() != 1) {
            fail(fn, "tokens must be a 1-D int32 array (or a sequence of ints), got " + describe(a));
        }
    }
    Tokens t = Tokens::ensure(h);
    if (!t) {
        PyErr_Clear();
        fail(fn, "tokens must be a 1-D int32 array or a sequence of ints");
    }
    if (t.ndim() != 1) fail(fn, "tokens must be 1-D, got " + describe(t));
    return t;
}

}  // namespace

void bind_radix(py::module_& m) {
    auto cls = py::class_<RadixTree>(m, "RadixTree",
                          "Exact-token radix tree over n_slots sequence slots of slot_capacity tokens each. All memory "
                          "is reserved here; no call allocates.")
        .def(py::init<int32_t, int64_t>(), py::arg("n_slots"), py::arg("slot_capacity"))
        .def(
            "match",
            [](RadixTree& t, py::handle tokens) {
                auto a = as_tokens(tokens, "RadixTree.match");
                const auto r = t.match(a.data(), a.shape(0));
                return py::make_tuple(r.slot, r.length);
            },
            py::arg("tokens"),
            "(slot, length): a slot holding the longest prefix of tokens (the most recently used of those), and its "
            "length; (-1, 0) when none shares a token. The slot counts as used now.")
        .def(
            "lcp",
            [](const RadixTree& t, int32_t slot, py::handle tokens) {
                auto a = as_tokens(tokens, "RadixTree.lcp");
                return t.lcp(slot, a.data(), a.shape(0));
            },
            py::arg("slot"), py::arg("tokens"), "Leading tokens slot shares with tokens.")
        .def(
            "insert",
            [](RadixTree& t, int32_t slot, py::handle tokens) {
                auto a = as_tokens(tokens, "RadixTree.insert");
                t.insert(slot, a.data(), a.shape(0));
            },
            py::arg("slot"), py::arg("tokens"), "slot now holds exactly tokens (what it held before is dropped).")
        .def("erase", &RadixTree::erase, py::arg("slot"), "slot holds nothing.")
        .def("lock", &RadixTree::lock, py::arg("slot"), "A locked slot is never evicted; locks nest.")
        .def("unlock", &RadixTree::unlock, py::arg("slot"))
        .def("evict", &RadixTree::evict,
             "Empty the least recently used unlocked slot holding tokens; returns it, or -1 when there is none.")
        .def("acquire", &RadixTree::acquire,
             "The least recently used empty unlocked slot, else one emptied by evict(); -1 when all are locked.")
        .def("size", &RadixTree::size, py::arg("slot"), "Tokens slot holds.")
        .def(
            "tokens",
            [](const RadixTree& t, int32_t slot) {
                const auto n = t.size(slot);
                return py::array_t<int32_t>(n, t.tokens(slot));  // a copy: the slot's buffer changes under a view
            },
            py::arg("slot"), "int32 (size(slot),): a copy of what slot holds.")
        .def("lock_count", &RadixTree::lock_count, py::arg("slot"))
        .def("last_used", &RadixTree::last_used, py::arg("slot"))
        .def_property_readonly("n_slots", &RadixTree::n_slots)
        .def_property_readonly("slot_capacity", &RadixTree::slot_capacity)
        .def("stats",
             [](const RadixTree& t) {
                 const auto s = t.stats();
                 py::dict d;
                 d["n_slots"] = s.n_slots;
                 d["used_slots"] = s.used_slots;
                 d["locked_slots"] = s.locked_slots;
                 d["nodes"] = s.nodes;
                 d["node_capacity"] = s.node_capacity;
                 d["slot_tokens"] = s.slot_tokens;
                 d["unique_tokens"] = s.unique_tokens;
                 d["clock"] = s.clock;
                 return d;
             })
        .def("check", &RadixTree::check, "Every invariant of the tree; '' when they hold, else what is wrong.");
    cls.attr("MAX_SLOTS") = RadixTree::kMaxSlots;
}

}  // namespace nexus::python
