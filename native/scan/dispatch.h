// Runtime choice of the INT8 scan kernel: detected once, best ISA first, serial last.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dot_i8.h"

namespace nexus::scan {

struct IsaKernel {
    const char* name;  // "avx512vnni", "avxvnni", "avx2", "neon" or "serial"
    ScanKernel scan;
};

// Kernels this CPU (and OS, for the wider register state) can run, best first; "serial" is always last.
// Computed on first use and then immutable, so it is safe to read from any thread.
const std::vector<IsaKernel>& available_isas();

// The kernel used when no ISA is named. Initially available_isas().front().
const IsaKernel& active_isa();

// Finds an available ISA by name; nullptr when this machine cannot run it (or the name is unknown).
const IsaKernel* find_isa(std::string_view name);

// Forces the default ISA (tests and benchmarks). Throws std::invalid_argument if unavailable.
void set_active_isa(std::string_view name);

// Human-readable list, e.g. "avx512vnni, avxvnni, avx2, serial" (for error messages).
std::string available_isa_names();

}  // namespace nexus::scan
