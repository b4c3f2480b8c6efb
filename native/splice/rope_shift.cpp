// RoPE re-anchoring of F16 K rows, emulating ggml-cpu's rope op operation for operation.
//
// This is a scalar kernel, on purpose: one reference path, no SIMD variants, because its whole point is to
// reproduce llama.cpp's K-shift bit for bit and a second (vector) path would be a second thing to keep exact.
//
// What it reproduces (vendored llama.cpp 0c1e57098, ggml/src/ggml-cpu/ops.cpp and ggml/src/ggml.c):
//   theta_scale = powf(freq_base, -2.0f/n_rot)
//   corr_dims   = ggml_rope_yarn_corr_dims(n_rot, n_ctx_orig, freq_base, beta_fast, beta_slow)
//   per row (ggml_rope_cache_init, recomputed only when the delta changes):
//     theta = (float)delta; for each pair i: rope_yarn(theta / ff[i]) -> (cos, sin); theta *= theta_scale
//   rope_yarn: theta_interp = freq_scale*theta_extrap; with ext_factor != 0 the YaRN ramp mixes in theta_extrap
//     and mscale *= 1 + 0.1*logf(1/freq_scale); cos = cosf(theta)*mscale, sin = sinf(theta)*mscale
//   rotate_pairs: y0 = x0*cos - x1*sin, y1 = x0*sin + x1*cos, rounded to f16 by ggml_compute_fp32_to_fp16.
//
// Floating-point contraction: libggml-cpu is compiled as gnu++17 with -mfma (GGML_FMA=ON), so GCC contracts
// `a*b + c*d` into fma(a, b, round(c*d)) — the first product in source order is fused. The disassembly of our
// wheel's libggml-cpu.so confirms it for rotate_pairs (NORM and NEOX: vmulss x1*sin; vfmsub231ss x0*cos - that;
// vmulss x1*cos; vfmadd132ss x0*sin + that) and for rope_yarn (vfmadd for theta_interp*(1-ramp_mix) +
// round(theta_extrap*ramp_mix), and for 1 + 0.1f*logf(1/freq_scale)). ggml.c (corr dims) lives in
// libggml-base.so, which has no FMA instructions. This file is compiled with -ffp-contract=off (CMakeLists.txt)
// and writes every fused operation as an explicit std::fma, so the result does not depend on our flags.
// The f32 -> f16 rounding in ggml_compute_fp32_to_fp16 is contracted too, but there the fused and unfused forms
// are provably equal (the scaled product is exact, or far below half an ulp of the bias), so it is written plainly.
#include "rope_shift.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace nexus::splice {

float fp16_to_fp32(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    const std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / NaN
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24, exact in float
        const float mag = static_cast<float>(mant) * 0x1p-24f;
        return sign ? -mag : mag;
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t fp32_to_fp16(float f) {
    // ggml_compute_fp32_to_fp16 (ggml-impl.h; Maratyszcza's FP16 library), the conversion ggml-cpu's rope
    // uses for F16 output. Scaling by 2^112 then 2^-110 pushes values >= 65520 to inf and lines the
    // mantissa up so that adding the bias rounds to nearest even at the half's precision.
    const float scale_to_inf = std::bit_cast<float>(0x77800000u);
    const float scale_to_zero = std::bit_cast<float>(0x08800000u);
    float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;

    const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t shl1_w = w + w;
    const std::uint32_t sign = w & 0x80000000u;
    std::uint32_t bias = shl1_w & 0xff000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;

    base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
    const std::uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
    const std::uint32_t mant_bits = bits & 0x00000fffu;
    const std::uint32_t nonsign = exp_bits + mant_bits;
    return static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

namespace {

// (float)M_PI, as ggml.c writes it
constexpr float kPi = static_cast<float>(3.14159265358979323846);

// ggml's MAX/MIN macros with float operands: the comparison decides, NaN falls through to the second operand.
inline float ggml_max(float a, float b) { return a > b ? a : b; }
inline float ggml_min(float a, float b) { return a < b ? a : b; }

// ggml.c ggml_rope_yarn_corr_dim: the dimension at which the rotation completes n_rot turns over n_ctx_orig.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return static_cast<float>(n_dims) *
           logf(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * kPi)) / (2.0f * logf(base));
}

// ggml.c ggml_rope_yarn_corr_dims
void yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]) {
    const float start = floorf(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end = ceilf(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = ggml_max(0.0f, start);
    dims[1] = ggml_min(static_cast<float>(n_dims - 1), end);
}

// ops.cpp rope_yarn_ramp (i0 is the even element index; i0/2 the pair index)
float rope_yarn_ramp(float low, float high, int i0) {
    const float y = (static_cast<float>(i0 / 2) - low) / ggml_max(0.001f, high - low);
    return 1.0f - ggml_min(1.0f, ggml_max(0.0f, y));
}

struct Prepared {
    float theta_scale;
    float corr_dims[2];
    float yarn_mscale;  // 1 + 0.1*logf(1/freq_scale) as ggml computes it (fused); used when ext_factor != 0
};

// ops.cpp ggml_rope_cache_init + rope_yarn for one position: cache[2i] = cos, cache[2i+1] = sin of pair i.
void rope_cache_init(float theta_base, const RopeParams& p, const Prepared& pr, const float* freq_factors,
                     float* cache) {
    float theta = theta_base;
    for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
        const float ff = freq_factors ? freq_factors[i0 / 2] : 1.0f;
        const float theta_extrap = theta / ff;
        const float theta_interp = p.freq_scale * theta_extrap;
        float th = theta_interp;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float ramp_mix = rope_yarn_ramp(pr.corr_dims[0], pr.corr_dims[1], i0) * p.ext_factor;
            // ggml: theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix, first product fused
            th = std::fma(theta_interp, 1.0f - ramp_mix, theta_extrap * ramp_mix);
            mscale *= pr.yarn_mscale;
        }
        cache[i0 + 0] = cosf(th) * mscale;
        cache[i0 + 1] = sinf(th) * mscale;  // ggml then multiplies by sin_sign = 1.0f (forward): exact
        theta *= pr.theta_scale;
    }
}

// ops.cpp rotate_pairs<ggml_fp16_t>: pairs (x[off0 + i*step], x[off0 + i*step + n_offset]) for NORM
// (step 2, n_offset 1) and NEOX (step 1, n_offset n_rot/2), pair i rotated by cache[2i], cache[2i+1].
inline void rotate_head(std::uint16_t* x, const float* cache, int n_pairs, int step, int n_offset) {
    for (int i = 0; i < n_pairs; ++i) {
        const float cos_theta = cache[2 * i + 0];
        const float sin_theta = cache[2 * i + 1];
        std::uint16_t* a = x + static_cast<std::ptrdiff_t>(i) * step;
        std::uint16_t* b = a + n_offset;
        const float x0 = fp16_to_fp32(*a);
        const float x1 = fp16_to_fp32(*b);
        // ggml: x0*cos_theta - x1*sin_theta and x0*sin_theta + x1*cos_theta, the first product fused
        *a = fp32_to_fp16(std::fma(x0, cos_theta, -(x1 * sin_theta)));
        *b = fp32_to_fp16(std::fma(x0, sin_theta, x1 * cos_theta));
    }
}

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument("rope_shift_f16: " + msg); }

void validate(std::uint16_t* rows, std::size_t n_rows, std::size_t row_stride, const std::int32_t* deltas,
              const RopeParams& p) {
    if (p.type != RopeType::Norm && p.type != RopeType::Neox) {
        bad("rope type must be NORM (0) or NEOX (2), got " + std::to_string(static_cast<int>(p.type)));
    }
    if (p.head_dim < 1) bad("head_dim must be >= 1, got " + std::to_string(p.head_dim));
    if (p.n_head_kv < 1) bad("n_head_kv must be >= 1, got " + std::to_string(p.n_head_kv));
    if (p.n_rot < 2 || p.n_rot % 2 != 0 || p.n_rot > p.head_dim) {
        bad("n_rot must be even and in [2, head_dim=" + std::to_string(p.head_dim) + "], got " +
            std::to_string(p.n_rot));
    }
    if (!std::isfinite(p.freq_base) || !(p.freq_base > 0.0f)) bad("freq_base must be finite and > 0");
    if (!std::isfinite(p.freq_scale) || !(p.freq_scale > 0.0f)) bad("freq_scale must be finite and > 0");
    if (!std::isfinite(p.ext_factor) || !std::isfinite(p.attn_factor) || !std::isfinite(p.beta_fast) ||
        !std::isfinite(p.beta_slow)) {
        bad("ext_factor, attn_factor, beta_fast and beta_slow must be finite");
    }
    if (p.n_ctx_orig < 0) bad("n_ctx_orig must be >= 0, got " + std::to_string(p.n_ctx_orig));
    // both ints are positive, so the product fits size_t (< 2^62)
    const std::size_t width = static_cast<std::size_t>(p.n_head_kv) * static_cast<std::size_t>(p.head_dim);
    if (n_rows == 0) return;
    if (rows == nullptr || deltas == nullptr) bad("rows and deltas must not be null");
    if (n_rows > 1 && row_stride < width) {
        bad("row_stride (" + std::to_string(row_stride) + " elements) is shorter than a row of n_head_kv*head_dim = " +
            std::to_string(width));
    }
    // the last element touched is (n_rows-1)*row_stride + width - 1; its byte offset must fit
    constexpr std::size_t kMaxElems = std::numeric_limits<std::size_t>::max() / sizeof(std::uint16_t);
    if (n_rows > 1 && (n_rows - 1) > (kMaxElems - width) / row_stride) bad("rows extent overflows size_t");
}

}  // namespace

void rope_shift_f16(std::uint16_t* rows, std::size_t n_rows, std::size_t row_stride, const std::int32_t* deltas,
                    const RopeParams& p, const float* freq_factors) {
    validate(rows, n_rows, row_stride, deltas, p);
    if (n_rows == 0) return;

    Prepared pr{};
    pr.theta_scale = powf(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
    yarn_corr_dims(p.n_rot, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, pr.corr_dims);
    pr.yarn_mscale = std::fma(0.1f, logf(1.0f / p.freq_scale), 1.0f);

    const int n_pairs = p.n_rot / 2;
    const int step = p.type == RopeType::Norm ? 2 : 1;
    const int n_offset = p.type == RopeType::Norm ? 1 : n_pairs;
    const auto head_dim = static_cast<std::size_t>(p.head_dim);
    const auto n_head = static_cast<std::size_t>(p.n_head_kv);

    std::vector<float> cache(static_cast<std::size_t>(p.n_rot));
    for (std::size_t r = 0; r < n_rows; ++r) {
        // Cells of one block share a delta: the cos/sin table is rebuilt only when it changes.
        if (r == 0 || deltas[r] != deltas[r - 1]) {
            rope_cache_init(static_cast<float>(deltas[r]), p, pr, freq_factors, cache.data());
        }
        std::uint16_t* row = rows + r * row_stride;
        for (std::size_t h = 0; h < n_head; ++h) rotate_head(row + h * head_dim, cache.data(), n_pairs, step, n_offset);
    }
}

}  // namespace nexus::splice
