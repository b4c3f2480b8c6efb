// Pieces of the nexus_agent._native module, one file per concept.
#pragma once

#include <pybind11/pybind11.h>

namespace nexus::python {

void bind_scan(pybind11::module_& m);   // bind_scan.cpp: INT8 scan, top-k, ISA dispatch, bench helper
void bind_alloc(pybind11::module_& m);  // bind_alloc.cpp: BuddyAllocator and Block (buffer protocol)
void bind_splice(pybind11::module_& m);  // bind_splice.cpp: RoPE re-anchoring of F16 K rows, transposed-V copies

void bind_radix(pybind11::module_& m);   // bind_radix.cpp: the exact-token radix tree of sequence slots
void bind_observe(pybind11::module_& m);  // bind_observe.cpp: llama.cpp eval callback capturing Q for KV eviction

}  // namespace nexus::python
