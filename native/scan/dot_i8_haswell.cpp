// AVX2 kernel (built with -mavx2). AVX2 has no int8 dot product that is exact for signed x signed
// (vpmaddubsw is unsigned x signed and saturates to int16), so bytes are widened int8 -> int16 with
// vpmovsxbw and multiplied pairwise into int32 with vpmaddwd. vpmaddwd can only saturate when both
// pairs are (-32768)^2; widened int8 products are at most 128 * 128, so the sums are exact.
#include <immintrin.h>

#include "dot_i8.h"
#include "kernel_common.h"

namespace nexus::scan {
namespace {

inline __m256i load_widen_i8x16(const std::int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline std::int32_t reduce_i32x8(__m256i sum_i32x8) {
    __m128i sum_i32x4 = _mm_add_epi32(_mm256_castsi256_si128(sum_i32x8), _mm256_extracti128_si256(sum_i32x8, 1));
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0x4E));
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0xB1));
    return _mm_cvtsi128_si32(sum_i32x4);
}

inline __m256i madd_i16x16(__m256i acc_i32x8, const std::int8_t* row, __m256i q_i16x16) {
    return _mm256_add_epi32(acc_i32x8, _mm256_madd_epi16(load_widen_i8x16(row), q_i16x16));
}

}  // namespace

void dot_i8_haswell(const ScanArgs& args) {
    const std::size_t d = args.d;
    const std::size_t body = d & ~static_cast<std::size_t>(15);  // 16 int8 lanes per step
    const std::int8_t* query = args.query;
    std::size_t i = 0;
    // Four rows per pass share each widened query chunk, which cuts query loads and conversions by 4x.
    for (; i + 4 <= args.n; i += 4) {
        const std::int8_t* row0 = args.matrix + i * d;
        const std::int8_t* row1 = row0 + d;
        const std::int8_t* row2 = row1 + d;
        const std::int8_t* row3 = row2 + d;
        __m256i sum0_i32x8 = _mm256_setzero_si256();
        __m256i sum1_i32x8 = _mm256_setzero_si256();
        __m256i sum2_i32x8 = _mm256_setzero_si256();
        __m256i sum3_i32x8 = _mm256_setzero_si256();
        for (std::size_t j = 0; j < body; j += 16) {
            const __m256i q_i16x16 = load_widen_i8x16(query + j);
            sum0_i32x8 = madd_i16x16(sum0_i32x8, row0 + j, q_i16x16);
            sum1_i32x8 = madd_i16x16(sum1_i32x8, row1 + j, q_i16x16);
            sum2_i32x8 = madd_i16x16(sum2_i32x8, row2 + j, q_i16x16);
            sum3_i32x8 = madd_i16x16(sum3_i32x8, row3 + j, q_i16x16);
        }
        const std::size_t tail = d - body;
        const std::int32_t dot0 = reduce_i32x8(sum0_i32x8) + dot_i8_scalar(row0 + body, query + body, tail);
        const std::int32_t dot1 = reduce_i32x8(sum1_i32x8) + dot_i8_scalar(row1 + body, query + body, tail);
        const std::int32_t dot2 = reduce_i32x8(sum2_i32x8) + dot_i8_scalar(row2 + body, query + body, tail);
        const std::int32_t dot3 = reduce_i32x8(sum3_i32x8) + dot_i8_scalar(row3 + body, query + body, tail);
        args.out[i + 0] = finish_score(dot0, args.row_scales[i + 0], args.query_scale);
        args.out[i + 1] = finish_score(dot1, args.row_scales[i + 1], args.query_scale);
        args.out[i + 2] = finish_score(dot2, args.row_scales[i + 2], args.query_scale);
        args.out[i + 3] = finish_score(dot3, args.row_scales[i + 3], args.query_scale);
    }
    for (; i < args.n; ++i) {
        const std::int8_t* row = args.matrix + i * d;
        __m256i sum_i32x8 = _mm256_setzero_si256();
        for (std::size_t j = 0; j < body; j += 16) {
            sum_i32x8 = madd_i16x16(sum_i32x8, row + j, load_widen_i8x16(query + j));
        }
        const std::int32_t dot = reduce_i32x8(sum_i32x8) + dot_i8_scalar(row + body, query + body, d - body);
        args.out[i] = finish_score(dot, args.row_scales[i], args.query_scale);
    }
}

}  // namespace nexus::scan
