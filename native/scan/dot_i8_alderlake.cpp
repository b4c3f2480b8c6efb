// AVX-VNNI kernel (built with -mavx2 -mavxvnni): 256-bit vpdpbusd, the VEX form found on Alder Lake and
// Zen 4+. vpdpbusd is unsigned x signed, so rows are sign-flipped to unsigned and the bias is removed
// afterwards (see unbias_dot). The non-saturating form is used; vpdpbusds would clamp.
#include <immintrin.h>

#include "dot_i8.h"
#include "kernel_common.h"

namespace nexus::scan {
namespace {

inline std::int32_t reduce_i32x8(__m256i sum_i32x8) {
    __m128i sum_i32x4 = _mm_add_epi32(_mm256_castsi256_si128(sum_i32x8), _mm256_extracti128_si256(sum_i32x8, 1));
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0x4E));
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0xB1));
    return _mm_cvtsi128_si32(sum_i32x4);
}

inline __m256i load_u8x32_flipped(const std::int8_t* p, __m256i flip_u8x32) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), flip_u8x32);
}

}  // namespace

void dot_i8_alderlake(const ScanArgs& args) {
    const std::size_t d = args.d;
    const std::size_t body = d & ~static_cast<std::size_t>(31);  // 32 int8 lanes per step
    const std::size_t tail = d - body;
    const std::int8_t* query = args.query;
    // The bias covers only the vector body; the scalar tail is computed signed and needs no correction.
    const std::int32_t query_sum_body = sum_i8(query, body);
    const __m256i flip_u8x32 = _mm256_set1_epi8(static_cast<char>(0x80));
    std::size_t i = 0;
    for (; i + 4 <= args.n; i += 4) {
        const std::int8_t* row0 = args.matrix + i * d;
        const std::int8_t* row1 = row0 + d;
        const std::int8_t* row2 = row1 + d;
        const std::int8_t* row3 = row2 + d;
        __m256i sum0_i32x8 = _mm256_setzero_si256();
        __m256i sum1_i32x8 = _mm256_setzero_si256();
        __m256i sum2_i32x8 = _mm256_setzero_si256();
        __m256i sum3_i32x8 = _mm256_setzero_si256();
        for (std::size_t j = 0; j < body; j += 32) {
            const __m256i q_i8x32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(query + j));
            sum0_i32x8 = _mm256_dpbusd_avx_epi32(sum0_i32x8, load_u8x32_flipped(row0 + j, flip_u8x32), q_i8x32);
            sum1_i32x8 = _mm256_dpbusd_avx_epi32(sum1_i32x8, load_u8x32_flipped(row1 + j, flip_u8x32), q_i8x32);
            sum2_i32x8 = _mm256_dpbusd_avx_epi32(sum2_i32x8, load_u8x32_flipped(row2 + j, flip_u8x32), q_i8x32);
            sum3_i32x8 = _mm256_dpbusd_avx_epi32(sum3_i32x8, load_u8x32_flipped(row3 + j, flip_u8x32), q_i8x32);
        }
        const std::int8_t* rows[4] = {row0, row1, row2, row3};
        const std::int32_t biased[4] = {reduce_i32x8(sum0_i32x8), reduce_i32x8(sum1_i32x8),
                                        reduce_i32x8(sum2_i32x8), reduce_i32x8(sum3_i32x8)};
        for (std::size_t r = 0; r < 4; ++r) {
            const std::int32_t dot = unbias_dot(biased[r], query_sum_body) +
                                     dot_i8_scalar(rows[r] + body, query + body, tail);
            args.out[i + r] = finish_score(dot, args.row_scales[i + r], args.query_scale);
        }
    }
    for (; i < args.n; ++i) {
        const std::int8_t* row = args.matrix + i * d;
        __m256i sum_i32x8 = _mm256_setzero_si256();
        for (std::size_t j = 0; j < body; j += 32) {
            const __m256i q_i8x32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(query + j));
            sum_i32x8 = _mm256_dpbusd_avx_epi32(sum_i32x8, load_u8x32_flipped(row + j, flip_u8x32), q_i8x32);
        }
        const std::int32_t dot =
            unbias_dot(reduce_i32x8(sum_i32x8), query_sum_body) + dot_i8_scalar(row + body, query + body, tail);
        args.out[i] = finish_score(dot, args.row_scales[i], args.query_scale);
    }
}

}  // namespace nexus::scan
