// Helpers shared by the per-ISA kernel files.
//
// Everything here has internal linkage (unnamed namespace) on purpose: the kernel files are compiled with
// different -m flags, and an `inline` function with external linkage would be emitted once per file and
// merged by the linker, which may keep the AVX-512 copy and call it from the serial path (SIGILL on a
// CPU without AVX-512). Internal linkage gives each file its own copy built with its own flags.
// For the same reason the kernel files use no standard-library templates.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nexus::scan {
namespace {

// The single definition of the float part of a score. Two multiplications, no addition, so no FMA
// contraction can change the rounding; int32 -> float rounds to nearest-even in every ISA.
inline float finish_score(std::int32_t dot_i32, float row_scale, float query_scale) {
    return (static_cast<float>(dot_i32) * row_scale) * query_scale;
}

// Exact scalar dot product of a[0..len) and b[0..len), widened int8 -> int16 -> int32.
inline std::int32_t dot_i8_scalar(const std::int8_t* a, const std::int8_t* b, std::size_t len) {
    std::int32_t sum_i32 = 0;
    for (std::size_t j = 0; j < len; ++j) {
        const std::int16_t prod_i16 = static_cast<std::int16_t>(static_cast<std::int16_t>(a[j]) *
                                                                static_cast<std::int16_t>(b[j]));
        sum_i32 += prod_i16;
    }
    return sum_i32;
}

// vpdpbusd multiplies unsigned by signed bytes. Rows are made unsigned by flipping their sign bit
// (r ^ 0x80 == r + 128 as u8), so the accumulator holds sum((r + 128) * q) = dot + 128 * sum(q);
// subtracting 128 * sum(q) recovers the exact dot, including the all -128 case ((-128 + 128) * q == 0).
// The subtraction is done modulo 2^32 (unsigned) so no signed overflow is possible; the true result
// fits int32 (see kMaxDim), so the conversion back is exact.
inline std::int32_t unbias_dot(std::int32_t biased_i32, std::int32_t query_sum_i32) {
    const std::uint32_t bias_u32 = static_cast<std::uint32_t>(query_sum_i32) * 128u;
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(biased_i32) - bias_u32);
}

inline std::int32_t sum_i8(const std::int8_t* a, std::size_t len) {
    std::int32_t sum_i32 = 0;
    for (std::size_t j = 0; j < len; ++j) sum_i32 += a[j];
    return sum_i32;
}

}  // namespace
}  // namespace nexus::scan
