// nexus_agent._native: the C++ core. Layering: native/ (plain C++) -> this module (argument checks, GIL,
// numpy views) -> nexus_agent/native.py (typed classes owning handles) -> the rest of the package.
#include "bindings.h"

PYBIND11_MODULE(_native, m) {
    m.doc() = "Nexus Agent native core: INT8 SLB scan kernels with runtime ISA dispatch, top-k, buddy allocator, KV splice kernels, radix tree of sequence slots, attention observer for KV eviction.";
    nexus::python::bind_scan(m);
    nexus::python::bind_alloc(m);
    nexus::python::bind_splice(m);
    nexus::python::bind_radix(m);
    nexus::python::bind_observe(m);
}
