// The KV splice kernels: rope_shift_f16 against a straightforward float64 RoPE (NORM and NEOX, partial n_rot,
// YaRN, freq_factors, odd sizes, strided rows), its f16 conversions (exhaustively / by nearest-value property),
// the cos/sin cache across rows sharing a delta, untouched padding and non-rotated dims; write_v_trans /
// read_v_trans against the index formula and round trips; and every bad argument throwing without writing.
// (Bit-exactness with llama.cpp's own K-shift is tests/splice/test_rope_shift.py: it needs llama.cpp.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "../splice/rope_shift.h"
#include "../splice/v_trans.h"
#include "check.h"

using nexus::splice::fp16_to_fp32;
using nexus::splice::fp32_to_fp16;
using nexus::splice::RopeParams;
using nexus::splice::RopeType;

namespace {

bool is_nan16(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// ---------------------------------------------------------------- f16 conversions
void test_fp16_conversions() {
    // every half survives half -> float -> half; NaNs come back as ggml writes them (0x7E00 with the sign)
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
        const auto hh = static_cast<std::uint16_t>(h);
        const float f = fp16_to_fp32(hh);
        const std::uint16_t back = fp32_to_fp16(f);
        if (is_nan16(hh)) {
            NEXUS_CHECK(std::isnan(f) && back == ((hh & 0x8000u) | 0x7e00u), "NaN 0x%04x -> 0x%04x", h, back);
        } else {
            NEXUS_CHECK(back == hh, "round trip 0x%04x -> %a -> 0x%04x", h, static_cast<double>(f), back);
        }
    }
    NEXUS_CHECK(fp16_to_fp32(0x3c00) == 1.0f && fp16_to_fp32(0x0001) == 0x1p-24f && fp16_to_fp32(0x7bff) == 65504.0f,
                "known halves");
    NEXUS_CHECK(fp32_to_fp16(65519.99f) == 0x7bff && fp32_to_fp16(65520.0f) == 0x7c00 &&
                    fp32_to_fp16(-1e30f) == 0xfc00 && fp32_to_fp16(0x1p-25f) == 0x0000 &&
                    fp32_to_fp16(0x1.000002p-25f) == 0x0001 && fp32_to_fp16(-0.0f) == 0x8000,
                "overflow / underflow / ties");
    // random floats: the result is a nearest half, ties to even (checked against its neighbours in float64)
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
    for (int it = 0; it < 2000000; ++it) {
        std::uint32_t w = bits(rng);
        if (it % 2) w = (w & 0x807fffffu) | ((100u + w % 50u) << 23);  // half of them in the f16 range
        float f;
        std::memcpy(&f, &w, 4);
        if (std::isnan(f)) continue;
        const std::uint16_t h = fp32_to_fp16(f);
        const double x = f;
        if (std::fabs(x) >= 65520.0) {
            NEXUS_CHECK((h & 0x7fffu) == 0x7c00u, "%a should overflow to inf, got 0x%04x", x, h);
            continue;
        }
        const double v = fp16_to_fp32(h);
        NEXUS_CHECK(std::signbit(v) == std::signbit(x), "sign of %a", x);
        const std::uint16_t mag = h & 0x7fffu;
        const double err = std::fabs(x - v);
        for (int dir : {-1, 1}) {
            const int nm = static_cast<int>(mag) + dir;
            if (nm < 0 || nm > 0x7bff) continue;
            const double n = fp16_to_fp32(static_cast<std::uint16_t>((h & 0x8000u) | static_cast<unsigned>(nm)));
            const double nerr = std::fabs(x - n);
            NEXUS_CHECK(err < nerr || (err == nerr && (mag & 1u) == 0), "%a -> 0x%04x is not the nearest half (even)",
                        x, h);
        }
    }
}

// ---------------------------------------------------------------- RoPE reference (float64)
struct RefYarn {
    double low, high;
};

RefYarn ref_corr_dims(const RopeParams& p) {
    auto dim = [&](double beta) {
        return p.n_rot * std::log(p.n_ctx_orig / (beta * 2 * M_PI)) / (2 * std::log(static_cast<double>(p.freq_base)));
    };
    const double start = std::floor(dim(p.beta_fast)), end = std::ceil(dim(p.beta_slow));
    return {std::max(0.0, start), std::min(static_cast<double>(p.n_rot - 1), end)};
}

// Rotates one row in float64 (from the f16 inputs) and returns the exact results plus, per element, the
// magnitude of its pair and an angle error budget for the kernel's float32 theta (powf, the theta recurrence,
// cosf/sinf of a rounded argument).
void ref_row(const std::uint16_t* in, std::int32_t delta, const RopeParams& p, const float* ff,
             std::vector<double>& out, std::vector<double>& radius, std::vector<double>& angle_tol) {
    const int w = p.n_head_kv * p.head_dim;
    out.assign(static_cast<std::size_t>(w), 0.0);
    radius.assign(static_cast<std::size_t>(w), 0.0);
    angle_tol.assign(static_cast<std::size_t>(w), 0.0);
    for (int i = 0; i < w; ++i) out[static_cast<std::size_t>(i)] = fp16_to_fp32(in[i]);
    const RefYarn cd = ref_corr_dims(p);
    const int half = p.n_rot / 2;
    double mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
    for (int h = 0; h < p.n_head_kv; ++h) {
        for (int i = 0; i < half; ++i) {
            const double f = ff ? ff[i] : 1.0;
            const double extrap = delta * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot) / f;
            const double interp = p.freq_scale * extrap;
            double theta = interp;
            if (p.ext_factor != 0.0f) {
                const double y = (i - cd.low) / std::max(0.001, cd.high - cd.low);
                const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
                theta = interp * (1 - ramp) + extrap * ramp;
            }
            const int a = h * p.head_dim + (p.type == RopeType::Norm ? 2 * i : i);
            const int b = a + (p.type == RopeType::Norm ? 1 : half);
            const double x0 = out[static_cast<std::size_t>(a)], x1 = out[static_cast<std::size_t>(b)];
            const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
            out[static_cast<std::size_t>(a)] = x0 * c - x1 * s;
            out[static_cast<std::size_t>(b)] = x0 * s + x1 * c;
            const double r = std::hypot(x0, x1) * std::fabs(mscale);
            // theta_i carries ~(i+3) float32 roundings relative to itself; cos/sin ~1 ulp each
            const double at = (std::max(std::fabs(interp), std::fabs(extrap)) * (i + 3) + 4.0) * 0x1p-23;
            radius[static_cast<std::size_t>(a)] = radius[static_cast<std::size_t>(b)] = r;
            angle_tol[static_cast<std::size_t>(a)] = angle_tol[static_cast<std::size_t>(b)] = at;
        }
    }
}

double f16_ulp(double x) {
    const double a = std::max(std::fabs(x), 0x1p-14);  // subnormal halves: fixed 2^-24 spacing
    return std::ldexp(1.0, std::ilogb(a) - 10);
}

struct Stats {
    std::size_t n = 0, exact = 0;
    double max_ulp = 0;
};

std::vector<std::uint16_t> random_rows(std::size_t n_rows, std::size_t stride, std::mt19937& rng, float scale) {
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<std::uint16_t> v(n_rows * stride);
    for (auto& x : v) x = fp32_to_fp16(g(rng));
    return v;
}

void check_rope_case(const RopeParams& p, std::size_t n_rows, std::size_t pad, const std::vector<std::int32_t>& deltas,
                     const float* ff, std::uint32_t seed, Stats& st) {
    std::mt19937 rng(seed);
    const std::size_t w = static_cast<std::size_t>(p.n_head_kv) * static_cast<std::size_t>(p.head_dim);
    const std::size_t stride = w + pad;
    const auto orig = random_rows(n_rows, stride, rng, 3.0f);
    auto rows = orig;
    nexus::splice::rope_shift_f16(rows.data(), n_rows, stride, deltas.data(), p, ff);
    std::vector<double> ref, radius, angle_tol;
    for (std::size_t r = 0; r < n_rows; ++r) {
        const std::uint16_t* in = orig.data() + r * stride;
        const std::uint16_t* got = rows.data() + r * stride;
        ref_row(in, deltas[r], p, ff, ref, radius, angle_tol);
        for (std::size_t e = 0; e < w; ++e) {
            const bool rotated = static_cast<int>(e % static_cast<std::size_t>(p.head_dim)) < p.n_rot;
            if (!rotated) {
                NEXUS_CHECK(got[e] == in[e], "non-rotated dim %zu of row %zu changed", e, r);
                continue;
            }
            const double g = fp16_to_fp32(got[e]);
            const double diff = std::fabs(g - ref[e]);
            // one f16 rounding of each side, plus the angle error over the pair's radius
            const double tol = f16_ulp(ref[e]) + f16_ulp(radius[e]) * 0.5 + radius[e] * angle_tol[e];
            NEXUS_CHECK(diff <= tol, "n_rot=%d hd=%d type=%d delta=%d row %zu elem %zu: got %.9g want %.9g (tol %.3g)",
                        p.n_rot, p.head_dim, static_cast<int>(p.type), deltas[r], r, e, g, ref[e], tol);
            const double ulps = diff / f16_ulp(radius[e]);  // in ulps of the pair's magnitude
            st.n++;
            st.exact += fp32_to_fp16(static_cast<float>(ref[e])) == got[e];
            st.max_ulp = std::max(st.max_ulp, ulps);
        }
        for (std::size_t e = w; e < stride; ++e) NEXUS_CHECK(got[e] == in[e], "padding %zu of row %zu changed", e, r);
    }
    // The cos/sin cache is only an optimisation: row by row gives the same bytes.
    auto one_by_one = orig;
    for (std::size_t r = 0; r < n_rows; ++r) {
        nexus::splice::rope_shift_f16(one_by_one.data() + r * stride, 1, stride, deltas.data() + r, p, ff);
    }
    NEXUS_CHECK(one_by_one == rows, "row-by-row differs from the cached-block run");
}

std::vector<std::int32_t> block_deltas(std::size_t n_rows, std::mt19937& rng, int max_abs) {
    // runs of equal deltas (blocks) of random lengths, as a splice produces them
    std::uniform_int_distribution<int> d(-max_abs, max_abs);
    std::uniform_int_distribution<std::size_t> len(1, 9);
    std::vector<std::int32_t> out;
    while (out.size() < n_rows) {
        const int v = d(rng);
        for (std::size_t k = len(rng); k && out.size() < n_rows; --k) out.push_back(v);
    }
    return out;
}

void test_rope_vs_reference() {
    struct Shape {
        int n_rot, head_dim, n_head_kv;
    };
    const Shape shapes[] = {{2, 2, 1}, {4, 6, 3}, {16, 16, 2}, {32, 64, 5}, {64, 64, 2}, {64, 128, 1}, {128, 128, 2}};
    std::mt19937 rng(11);
    Stats plain, yarn;
    for (const auto& s : shapes) {
        for (RopeType type : {RopeType::Norm, RopeType::Neox}) {
            for (std::size_t n_rows : {std::size_t{1}, std::size_t{7}, std::size_t{61}}) {
                for (std::size_t pad : {std::size_t{0}, std::size_t{3}}) {
                    RopeParams p{s.n_rot, s.head_dim, s.n_head_kv, type, 10000.0f};
                    auto deltas = block_deltas(n_rows, rng, 4096);
                    check_rope_case(p, n_rows, pad, deltas, nullptr, rng(), plain);
                    p.freq_base = 1000000.0f;
                    p.freq_scale = 0.5f;
                    check_rope_case(p, n_rows, pad, deltas, nullptr, rng(), plain);
                    // freq_factors (llama3-style rope_freqs)
                    std::vector<float> ff(static_cast<std::size_t>(s.n_rot / 2));
                    for (std::size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + static_cast<float>(i % 5) * 1.75f;
                    check_rope_case(p, n_rows, pad, deltas, ff.data(), rng(), plain);
                    // YaRN: ramp over the corr dims, magnitude scaling
                    RopeParams y{s.n_rot, s.head_dim, s.n_head_kv, type, 10000.0f, 0.25f, 1.0f, 0.9f, 32.0f, 1.0f, 512};
                    check_rope_case(y, n_rows, pad, deltas, nullptr, rng(), yarn);
                    y.ext_factor = 0.5f;
                    y.n_ctx_orig = 0;  // degenerate corr dims (-inf): ggml's MAX/MIN clamp them
                    check_rope_case(y, n_rows, pad, deltas, ff.data(), rng(), yarn);
                }
            }
        }
    }
    std::printf("test_splice: rope vs float64: plain %zu elems, %.2f%% equal to the rounded reference, max error %.3f "
                "f16 ulp of the pair magnitude; YaRN %zu elems, %.2f%% equal, max %.3f ulp\n",
                plain.n, 100.0 * static_cast<double>(plain.exact) / static_cast<double>(plain.n), plain.max_ulp, yarn.n,
                100.0 * static_cast<double>(yarn.exact) / static_cast<double>(yarn.n), yarn.max_ulp);
}

void test_rope_identities() {
    std::mt19937 rng(3);
    const RopeParams p{16, 24, 3, RopeType::Neox, 10000.0f};
    const std::size_t w = 72;
    const auto orig = random_rows(20, w, rng, 1.0f);
    // delta 0 without YaRN scaling is the identity, bit for bit (cos 1, sin 0)
    auto rows = orig;
    const std::vector<std::int32_t> zeros(20, 0);
    nexus::splice::rope_shift_f16(rows.data(), 20, w, zeros.data(), p, nullptr);
    NEXUS_CHECK(rows == orig, "delta 0 is not the identity");
    // d then -d comes back within two roundings
    std::vector<std::int32_t> fwd(20), back(20);
    for (std::size_t i = 0; i < 20; ++i) {
        fwd[i] = static_cast<std::int32_t>(i * 97);
        back[i] = -fwd[i];
    }
    nexus::splice::rope_shift_f16(rows.data(), 20, w, fwd.data(), p, nullptr);
    nexus::splice::rope_shift_f16(rows.data(), 20, w, back.data(), p, nullptr);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const double a = fp16_to_fp32(rows[i]), b = fp16_to_fp32(orig[i]);
        NEXUS_CHECK(std::fabs(a - b) <= 3 * f16_ulp(std::max(std::fabs(b), 1.0)), "round trip elem %zu", i);
    }
    // zero rows: nothing touched, null pointers allowed
    nexus::splice::rope_shift_f16(nullptr, 0, 0, nullptr, p, nullptr);
}

template <class F>
void expect_invalid(const char* what, F&& f) {
    bool threw = false;
    try {
        f();
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "expected std::invalid_argument: %s", what);
}

void test_rope_bad_args() {
    std::vector<std::uint16_t> rows(4 * 32, 0x3c00);
    const auto before = rows;
    const std::vector<std::int32_t> d(4, 5);
    const RopeParams ok{16, 16, 2, RopeType::Norm, 10000.0f};
    auto run = [&](RopeParams p, std::size_t stride = 32, std::uint16_t* r = nullptr, const std::int32_t* dd = nullptr,
                   std::size_t n = 4) {
        nexus::splice::rope_shift_f16(r ? r : rows.data(), n, stride, dd ? dd : d.data(), p, nullptr);
    };
    auto with = [&](std::function<void(RopeParams&)> edit) {
        RopeParams p = ok;
        edit(p);
        return p;
    };
    expect_invalid("odd n_rot", [&] { run(with([](RopeParams& p) { p.n_rot = 15; })); });
    expect_invalid("n_rot 0", [&] { run(with([](RopeParams& p) { p.n_rot = 0; })); });
    expect_invalid("n_rot > head_dim", [&] { run(with([](RopeParams& p) { p.n_rot = 18; })); });
    expect_invalid("head_dim 0", [&] { run(with([](RopeParams& p) { p.head_dim = 0; })); });
    expect_invalid("n_head_kv 0", [&] { run(with([](RopeParams& p) { p.n_head_kv = 0; })); });
    expect_invalid("negative n_head_kv", [&] { run(with([](RopeParams& p) { p.n_head_kv = -2; })); });
    expect_invalid("rope type 1", [&] { run(with([](RopeParams& p) { p.type = static_cast<RopeType>(1); })); });
    expect_invalid("freq_base 0", [&] { run(with([](RopeParams& p) { p.freq_base = 0.0f; })); });
    expect_invalid("freq_base nan", [&] { run(with([](RopeParams& p) { p.freq_base = std::nanf(""); })); });
    expect_invalid("freq_base inf", [&] { run(with([](RopeParams& p) { p.freq_base = INFINITY; })); });
    expect_invalid("freq_scale 0", [&] { run(with([](RopeParams& p) { p.freq_scale = 0.0f; })); });
    expect_invalid("freq_scale < 0", [&] { run(with([](RopeParams& p) { p.freq_scale = -1.0f; })); });
    expect_invalid("ext_factor nan", [&] { run(with([](RopeParams& p) { p.ext_factor = std::nanf(""); })); });
    expect_invalid("attn_factor inf", [&] { run(with([](RopeParams& p) { p.attn_factor = INFINITY; })); });
    expect_invalid("beta_fast inf", [&] { run(with([](RopeParams& p) { p.beta_fast = INFINITY; })); });
    expect_invalid("beta_slow nan", [&] { run(with([](RopeParams& p) { p.beta_slow = std::nanf(""); })); });
    expect_invalid("n_ctx_orig < 0", [&] { run(with([](RopeParams& p) { p.n_ctx_orig = -1; })); });
    expect_invalid("stride < width", [&] { run(ok, 31); });
    expect_invalid("null rows", [&] { nexus::splice::rope_shift_f16(nullptr, 4, 32, d.data(), ok, nullptr); });
    expect_invalid("null deltas", [&] { nexus::splice::rope_shift_f16(rows.data(), 4, 32, nullptr, ok, nullptr); });
    expect_invalid("extent overflow", [&] {
        nexus::splice::rope_shift_f16(rows.data(), std::numeric_limits<std::size_t>::max() / 64, 64, d.data(), ok,
                                      nullptr);
    });
    NEXUS_CHECK(rows == before, "a rejected call wrote");
    // a single row may have any stride (it is never used)
    run(ok, 0, nullptr, nullptr, 1);
}

// ---------------------------------------------------------------- transposed V
void test_v_trans_round_trips() {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> byte(0, 255);
    std::size_t cases = 0;
    for (std::size_t es : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}}) {
        for (std::size_t ne : {std::size_t{1}, std::size_t{5}, std::size_t{64}}) {
            for (std::size_t total : {std::size_t{1}, std::size_t{7}, std::size_t{130}}) {
                for (std::size_t off : {std::size_t{0}, total / 3, total - 1}) {
                    for (std::size_t n : {std::size_t{0}, std::size_t{1}, total - off}) {
                        if (off + n > total) continue;
                        const std::size_t row = ne * es;
                        const std::size_t stride = row + (n % 2 ? 5 : 0);
                        std::vector<std::uint8_t> src(n * stride + 1);
                        for (auto& b : src) b = static_cast<std::uint8_t>(byte(rng));
                        const std::size_t region = ne * total * es;
                        std::vector<std::uint8_t> dst(region + 3);
                        for (auto& b : dst) b = static_cast<std::uint8_t>(byte(rng));
                        auto expect = dst;
                        for (std::size_t c = 0; c < n; ++c) {
                            for (std::size_t d = 0; d < ne; ++d) {
                                std::memcpy(&expect[(d * total + off + c) * es], &src[c * stride + d * es], es);
                            }
                        }
                        nexus::splice::write_v_trans(dst.data(), dst.size(), ne, total, off, src.data(), n, stride, es);
                        NEXUS_CHECK(dst == expect, "write es=%zu ne=%zu total=%zu off=%zu n=%zu", es, ne, total, off,
                                    n);
                        // read the same columns back into fresh rows (a different stride)
                        const std::size_t rstride = row + 1;
                        std::vector<std::uint8_t> rows(n * rstride, 0xAB);
                        nexus::splice::read_v_trans(dst.data(), region, ne, total, off, rows.data(), n, rstride, es);
                        for (std::size_t c = 0; c < n; ++c) {
                            NEXUS_CHECK(std::memcmp(&rows[c * rstride], &src[c * stride], row) == 0, "read row %zu", c);
                            NEXUS_CHECK(rows[c * rstride + row] == 0xAB, "read wrote past row %zu", c);
                        }
                        ++cases;
                    }
                }
            }
        }
    }
    // whole region: read everything, write it into a fresh buffer, same bytes
    const std::size_t ne = 96, total = 333;
    std::vector<std::uint8_t> region(ne * total * 2);
    for (auto& b : region) b = static_cast<std::uint8_t>(byte(rng));
    std::vector<std::uint8_t> rows(ne * total * 2), fresh(region.size(), 0);
    nexus::splice::read_v_trans(region.data(), region.size(), ne, total, 0, rows.data(), total, ne * 2, 2);
    nexus::splice::write_v_trans(fresh.data(), fresh.size(), ne, total, 0, rows.data(), total, ne * 2, 2);
    NEXUS_CHECK(fresh == region, "whole-region round trip");
    std::printf("test_splice: v_trans %zu write/read cases OK\n", cases);
}

void test_v_trans_bad_args() {
    constexpr std::size_t ne = 4, total = 10, es = 2, row = ne * es;
    constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
    std::vector<std::uint8_t> dst(ne * total * es, 0x11);
    std::vector<std::uint8_t> src(ne * total * es, 0x22);
    std::vector<std::uint8_t> out(64, 0x33);
    const auto dst_before = dst, src_before = src, out_before = out;
    // (what, region, region_len, n_embd_v, total_cells, cell_offset, rows, n_cells, stride, elem_size)
    struct Call {
        const char* what;
        std::uint8_t* region;
        std::size_t region_len, ne, total, off;
        std::uint8_t* rows;
        std::size_t n, stride, es;
    };
    std::uint8_t* d = dst.data();
    std::uint8_t* s = src.data();
    const Call writes[] = {
        {"elem_size 0", d, dst.size(), ne, total, 0, s, 2, row, 0},
        {"dst too short", d, dst.size() - 1, ne, total, 0, s, 2, row, es},
        {"cells past total", d, dst.size(), ne, total, 9, s, 2, row, es},
        {"offset past total", d, dst.size(), ne, total, 11, s, 0, row, es},
        {"offset + n overflows", d, dst.size(), ne, total, 2, s, kMax, row, es},
        {"short stride", d, dst.size(), ne, total, 0, s, 2, row - 1, es},
        {"region overflow", d, dst.size(), kMax / 2, 4, 0, s, 1, kMax, es},
        {"row bytes overflow", d, dst.size(), kMax / 2, 0, 0, s, 0, row, 4},
        {"rows extent overflow", d, dst.size(), ne, total, 0, s, 3, kMax / 2, es},
        {"null dst", nullptr, dst.size(), ne, total, 0, s, 2, row, es},
        {"null src", d, dst.size(), ne, total, 0, nullptr, 2, row, es},
        {"src overlaps dst", d, dst.size(), ne, 5, 0, d + 36, 1, row, es},
    };
    for (const Call& c : writes) {
        expect_invalid(c.what, [&] {
            nexus::splice::write_v_trans(c.region, c.region_len, c.ne, c.total, c.off, c.rows, c.n, c.stride, c.es);
        });
    }
    NEXUS_CHECK(dst == dst_before, "a rejected write_v_trans wrote");
    std::uint8_t* o = out.data();
    const Call reads[] = {
        {"read: src too short", s, 79, ne, total, 0, o, 2, row, es},
        {"read: cells past total", s, src.size(), ne, total, 9, o, 2, row, es},
        {"read: short stride", s, src.size(), ne, total, 0, o, 2, 7, es},
        {"read: elem_size 0", s, src.size(), ne, total, 0, o, 2, row, 0},
        {"read: null dst", s, src.size(), ne, total, 0, nullptr, 2, row, es},
        {"read: overlap", s, src.size(), ne, total, 0, s + 8, 2, row, es},
    };
    for (const Call& c : reads) {
        expect_invalid(c.what, [&] {
            nexus::splice::read_v_trans(c.region, c.region_len, c.ne, c.total, c.off, c.rows, c.n, c.stride, c.es);
        });
    }
    NEXUS_CHECK(out == out_before && src == src_before, "a rejected read_v_trans wrote");
    // nothing to do is fine, even with null pointers
    nexus::splice::write_v_trans(nullptr, 0, ne, 0, 0, nullptr, 0, 0, es);
    nexus::splice::read_v_trans(nullptr, 0, 0, 5, 0, nullptr, 5, 0, es);
}

}  // namespace

int main() {
    test_fp16_conversions();
    test_rope_vs_reference();
    test_rope_identities();
    test_rope_bad_args();
    test_v_trans_round_trips();
    test_v_trans_bad_args();
    std::printf("test_splice: OK\n");
    return 0;
}
