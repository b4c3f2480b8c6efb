// What every binding file needs to check numpy arguments and report them: ValueError with the function's name,
// and a short "dtype …, shape (…)" description of the offending array.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <bit>
#include <string>

namespace nexus::python {

// A byte-swapped array has the same type number as a native one; its data would be read wrongly.
inline constexpr char kSwappedOrder = std::endian::native == std::endian::big ? '<' : '>';

[[noreturn]] inline void fail(const char* fn, const std::string& msg) {
    throw pybind11::value_error(std::string(fn) + ": " + msg);
}

inline std::string describe(const pybind11::array& a) {
    // Built with += only: GCC 12 under LTO reports a false -Wstringop-overflow for `"literal" + std::string`.
    std::string out = "dtype ";
    out += std::string(pybind11::str(a.dtype()));
    out += ", shape (";
    for (pybind11::ssize_t i = 0; i < a.ndim(); ++i) {
        if (i) out += ", ";
        out += std::to_string(a.shape(i));
    }
    out += a.ndim() == 1 ? ",)" : ")";
    return out;
}

}  // namespace nexus::python
