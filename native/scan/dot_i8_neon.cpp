// NEON kernel (aarch64, where Advanced SIMD is part of the base ABI). Baseline ARMv8 has no int8 dot
// instruction (sdot is the optional +dotprod extension), so bytes are multiplied exactly into int16 with
// vmull_s8 (at most 128 * 128 = 16384) and pairwise-accumulated into int32 with vpadalq_s16.
#include <arm_neon.h>

#include "dot_i8.h"
#include "kernel_common.h"

namespace nexus::scan {
namespace {

inline int32x4_t mac_i8x16(int32x4_t acc_i32x4, int8x16_t row_i8x16, int8x16_t q_i8x16) {
    const int16x8_t lo_i16x8 = vmull_s8(vget_low_s8(row_i8x16), vget_low_s8(q_i8x16));
    const int16x8_t hi_i16x8 = vmull_high_s8(row_i8x16, q_i8x16);
    acc_i32x4 = vpadalq_s16(acc_i32x4, lo_i16x8);
    return vpadalq_s16(acc_i32x4, hi_i16x8);
}

}  // namespace

void dot_i8_neon(const ScanArgs& args) {
    const std::size_t d = args.d;
    const std::size_t body = d & ~static_cast<std::size_t>(15);  // 16 int8 lanes per step
    const std::int8_t* query = args.query;
    std::size_t i = 0;
    // Two rows per pass share each query load.
    for (; i + 2 <= args.n; i += 2) {
        const std::int8_t* row0 = args.matrix + i * d;
        const std::int8_t* row1 = row0 + d;
        int32x4_t sum0_i32x4 = vdupq_n_s32(0);
        int32x4_t sum1_i32x4 = vdupq_n_s32(0);
        for (std::size_t j = 0; j < body; j += 16) {
            const int8x16_t q_i8x16 = vld1q_s8(query + j);
            sum0_i32x4 = mac_i8x16(sum0_i32x4, vld1q_s8(row0 + j), q_i8x16);
            sum1_i32x4 = mac_i8x16(sum1_i32x4, vld1q_s8(row1 + j), q_i8x16);
        }
        const std::int32_t dot0 = vaddvq_s32(sum0_i32x4) + dot_i8_scalar(row0 + body, query + body, d - body);
        const std::int32_t dot1 = vaddvq_s32(sum1_i32x4) + dot_i8_scalar(row1 + body, query + body, d - body);
        args.out[i] = finish_score(dot0, args.row_scales[i], args.query_scale);
        args.out[i + 1] = finish_score(dot1, args.row_scales[i + 1], args.query_scale);
    }
    for (; i < args.n; ++i) {
        const std::int8_t* row = args.matrix + i * d;
        int32x4_t sum_i32x4 = vdupq_n_s32(0);
        for (std::size_t j = 0; j < body; j += 16) {
            sum_i32x4 = mac_i8x16(sum_i32x4, vld1q_s8(row + j), vld1q_s8(query + j));
        }
        const std::int32_t dot = vaddvq_s32(sum_i32x4) + dot_i8_scalar(row + body, query + body, d - body);
        args.out[i] = finish_score(dot, args.row_scales[i], args.query_scale);
    }
}

}  // namespace nexus::scan
