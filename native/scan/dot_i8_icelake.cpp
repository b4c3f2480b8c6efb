// AVX-512 VNNI kernel (built with -mavx512f -mavx512bw -mavx512vl -mavx512vnni): 512-bit vpdpbusd.
// Rows are sign-flipped to unsigned and the bias removed afterwards (see unbias_dot). Tails use masked
// byte loads (AVX512BW), which read nothing past the row and zero the masked lanes: a zero query lane
// contributes nothing, so the bias over the whole query stays right.
#include <immintrin.h>

#include "dot_i8.h"
#include "kernel_common.h"

namespace nexus::scan {
namespace {

inline __m512i load_u8x64_flipped(const std::int8_t* p, __m512i flip_u8x64) {
    return _mm512_xor_si512(_mm512_loadu_si512(p), flip_u8x64);
}

inline __m512i load_u8x64_flipped_masked(const std::int8_t* p, __mmask64 mask, __m512i flip_u8x64) {
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, p), flip_u8x64);
}

// 512 -> 128 bits by adding halves. Zero-masked extracts are used (mask = all lanes, so the same values)
// because in GCC 12 _mm512_extracti64x4_epi64, _mm512_castsi512_si256 and _mm512_reduce_add_epi32 trip a
// false -Wmaybe-uninitialized on their _mm256_undefined_* pass-through operand (GCC PR105593).
inline __m128i halve_twice_i32x16(__m512i v_i32x16) {
    const __m256i lo_i32x8 = _mm512_maskz_extracti64x4_epi64(0xFF, v_i32x16, 0);
    const __m256i hi_i32x8 = _mm512_maskz_extracti64x4_epi64(0xFF, v_i32x16, 1);
    const __m256i v_i32x8 = _mm256_add_epi32(lo_i32x8, hi_i32x8);
    return _mm_add_epi32(_mm256_castsi256_si128(v_i32x8), _mm256_extracti128_si256(v_i32x8, 1));
}

inline std::int32_t reduce_i32x16(__m512i v_i32x16) {
    __m128i sum_i32x4 = halve_twice_i32x16(v_i32x16);
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0x4E));
    sum_i32x4 = _mm_add_epi32(sum_i32x4, _mm_shuffle_epi32(sum_i32x4, 0xB1));
    return _mm_cvtsi128_si32(sum_i32x4);
}

// Horizontal sums of four accumulators at once: each halved to 128 bits, then two rounds of hadd pack the
// four totals into one register. Cheaper than four independent reductions.
inline __m128i reduce4_i32x16(__m512i s0, __m512i s1, __m512i s2, __m512i s3) {
    const __m128i s01_i32x4 = _mm_hadd_epi32(halve_twice_i32x16(s0), halve_twice_i32x16(s1));
    const __m128i s23_i32x4 = _mm_hadd_epi32(halve_twice_i32x16(s2), halve_twice_i32x16(s3));
    return _mm_hadd_epi32(s01_i32x4, s23_i32x4);
}

}  // namespace

void dot_i8_icelake(const ScanArgs& args) {
    const std::size_t d = args.d;
    const std::size_t body = d & ~static_cast<std::size_t>(63);  // 64 int8 lanes per step
    const std::size_t tail = d - body;
    const __mmask64 tail_mask = tail ? (~0ULL >> (64 - tail)) : 0;
    const std::int8_t* query = args.query;
    const std::int32_t query_sum = sum_i8(query, d);
    const __m512i flip_u8x64 = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i q_tail_i8x64 = _mm512_maskz_loadu_epi8(tail_mask, query + body);
    std::size_t i = 0;
    for (; i + 4 <= args.n; i += 4) {
        const std::int8_t* row0 = args.matrix + i * d;
        const std::int8_t* row1 = row0 + d;
        const std::int8_t* row2 = row1 + d;
        const std::int8_t* row3 = row2 + d;
        __m512i sum0_i32x16 = _mm512_setzero_si512();
        __m512i sum1_i32x16 = _mm512_setzero_si512();
        __m512i sum2_i32x16 = _mm512_setzero_si512();
        __m512i sum3_i32x16 = _mm512_setzero_si512();
        for (std::size_t j = 0; j < body; j += 64) {
            const __m512i q_i8x64 = _mm512_loadu_si512(query + j);
            sum0_i32x16 = _mm512_dpbusd_epi32(sum0_i32x16, load_u8x64_flipped(row0 + j, flip_u8x64), q_i8x64);
            sum1_i32x16 = _mm512_dpbusd_epi32(sum1_i32x16, load_u8x64_flipped(row1 + j, flip_u8x64), q_i8x64);
            sum2_i32x16 = _mm512_dpbusd_epi32(sum2_i32x16, load_u8x64_flipped(row2 + j, flip_u8x64), q_i8x64);
            sum3_i32x16 = _mm512_dpbusd_epi32(sum3_i32x16, load_u8x64_flipped(row3 + j, flip_u8x64), q_i8x64);
        }
        if (tail) {
            sum0_i32x16 = _mm512_dpbusd_epi32(
                sum0_i32x16, load_u8x64_flipped_masked(row0 + body, tail_mask, flip_u8x64), q_tail_i8x64);
            sum1_i32x16 = _mm512_dpbusd_epi32(
                sum1_i32x16, load_u8x64_flipped_masked(row1 + body, tail_mask, flip_u8x64), q_tail_i8x64);
            sum2_i32x16 = _mm512_dpbusd_epi32(
                sum2_i32x16, load_u8x64_flipped_masked(row2 + body, tail_mask, flip_u8x64), q_tail_i8x64);
            sum3_i32x16 = _mm512_dpbusd_epi32(
                sum3_i32x16, load_u8x64_flipped_masked(row3 + body, tail_mask, flip_u8x64), q_tail_i8x64);
        }
        alignas(16) std::int32_t biased[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(biased),
                        reduce4_i32x16(sum0_i32x16, sum1_i32x16, sum2_i32x16, sum3_i32x16));
        for (std::size_t r = 0; r < 4; ++r) {
            args.out[i + r] = finish_score(unbias_dot(biased[r], query_sum), args.row_scales[i + r], args.query_scale);
        }
    }
    for (; i < args.n; ++i) {
        const std::int8_t* row = args.matrix + i * d;
        __m512i sum_i32x16 = _mm512_setzero_si512();
        for (std::size_t j = 0; j < body; j += 64) {
            sum_i32x16 = _mm512_dpbusd_epi32(sum_i32x16, load_u8x64_flipped(row + j, flip_u8x64),
                                             _mm512_loadu_si512(query + j));
        }
        if (tail) {
            sum_i32x16 = _mm512_dpbusd_epi32(
                sum_i32x16, load_u8x64_flipped_masked(row + body, tail_mask, flip_u8x64), q_tail_i8x64);
        }
        const std::int32_t dot = unbias_dot(reduce_i32x16(sum_i32x16), query_sum);
        args.out[i] = finish_score(dot, args.row_scales[i], args.query_scale);
    }
}

}  // namespace nexus::scan
