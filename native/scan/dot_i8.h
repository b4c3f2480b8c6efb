// INT8 scan kernels for the semantic lookaside buffer: one int8 query against N int8 rows.
//
// Every kernel computes, for each row i of an N x d C-contiguous int8 matrix,
//     out[i] = (float(dot_i32(row_i, query)) * row_scales[i]) * query_scale
// The integer dot product is exact in every kernel, and the float part is evaluated by the same
// `finish_score` in the same order, so all ISAs produce bit-identical scores (tests compare with ==).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nexus::scan {

// |dot| <= 128 * 128 * d, and the VNNI kernels accumulate the biased sum (row + 128) * q <= 255 * 128 * d.
// Both stay below 2^31 for d <= 65536, so no accumulator ever overflows int32.
inline constexpr std::size_t kMaxDim = 65536;

struct ScanArgs {
    const std::int8_t* matrix;  // n x d, row-major, contiguous
    const float* row_scales;    // n
    std::size_t n;
    std::size_t d;              // 1 <= d <= kMaxDim
    const std::int8_t* query;   // d
    float query_scale;
    float* out;                 // n
};

using ScanKernel = void (*)(const ScanArgs& args);

// The oracle: plain scalar code, built without auto-vectorisation so its bench row means "scalar".
void dot_i8_serial(const ScanArgs& args);

#if defined(__x86_64__) || defined(_M_X64)
void dot_i8_haswell(const ScanArgs& args);    // AVX2: int8 -> int16 widening + vpmaddwd
void dot_i8_alderlake(const ScanArgs& args);  // AVX-VNNI (256-bit vpdpbusd)
void dot_i8_icelake(const ScanArgs& args);    // AVX-512 VNNI (512-bit vpdpbusd, masked tails)
#endif
#if defined(__aarch64__)
void dot_i8_neon(const ScanArgs& args);  // vmull_s8 (int8 -> int16) + vpadalq_s16 (int16 -> int32)
#endif

}  // namespace nexus::scan
