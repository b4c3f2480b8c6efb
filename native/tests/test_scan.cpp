// Every ISA this machine runs vs the serial oracle, bit-exact, at lane-boundary sizes; the serial oracle
// vs an int64 reference; the all -128 saturation case and random -128/127 extremes; top-k ordering.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../scan/dispatch.h"
#include "../scan/topk.h"
#include "check.h"

using nexus::scan::ScanArgs;

namespace {

constexpr std::size_t kSizes[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 768};

enum class Fill { Random, AllMin, Extremes };

struct Case {
    std::vector<std::int8_t> matrix, query;
    std::vector<float> scales;
    float query_scale;
};

Case make_case(std::size_t n, std::size_t d, Fill fill, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> any(-128, 127);
    std::uniform_int_distribution<int> coin(0, 1);
    std::uniform_real_distribution<float> scale(1e-4f, 2.0f);
    auto draw = [&]() -> std::int8_t {
        switch (fill) {
            case Fill::AllMin: return -128;
            case Fill::Extremes: return static_cast<std::int8_t>(coin(rng) ? 127 : -128);
            default: return static_cast<std::int8_t>(any(rng));
        }
    };
    Case c;
    c.matrix.resize(n * d);
    for (auto& v : c.matrix) v = draw();
    c.query.resize(d);
    for (auto& v : c.query) v = draw();
    c.scales.resize(n);
    for (auto& s : c.scales) s = scale(rng);
    c.query_scale = scale(rng);
    return c;
}

std::vector<float> run(nexus::scan::ScanKernel kernel, const Case& c, std::size_t n, std::size_t d) {
    // One guard float past the end catches a kernel writing out of bounds (ASan would too, this is cheaper).
    std::vector<float> out(n + 1, -12345.0f);
    kernel(ScanArgs{c.matrix.data(), c.scales.data(), n, d, c.query.data(), c.query_scale, out.data()});
    NEXUS_CHECK(out[n] == -12345.0f, "kernel wrote past the end (n=%zu d=%zu)", n, d);
    out.pop_back();
    return out;
}

void check_case(std::size_t n, std::size_t d, Fill fill, std::uint32_t seed) {
    const Case c = make_case(n, d, fill, seed);
    const std::vector<float> oracle = run(&nexus::scan::dot_i8_serial, c, n, d);
    // serial vs an int64 reference with the same float finish.
    for (std::size_t i = 0; i < n; ++i) {
        std::int64_t dot = 0;
        for (std::size_t j = 0; j < d; ++j) dot += std::int64_t{c.matrix[i * d + j]} * std::int64_t{c.query[j]};
        const float want = (static_cast<float>(dot) * c.scales[i]) * c.query_scale;
        NEXUS_CHECK(std::memcmp(&want, &oracle[i], sizeof(float)) == 0, "serial vs int64 n=%zu d=%zu row=%zu", n, d, i);
    }
    for (const auto& isa : nexus::scan::available_isas()) {
        const std::vector<float> got = run(isa.scan, c, n, d);
        NEXUS_CHECK(std::memcmp(got.data(), oracle.data(), n * sizeof(float)) == 0,
                    "%s differs from serial (n=%zu d=%zu fill=%d)", isa.name, n, d, static_cast<int>(fill));
    }
}

void check_topk() {
    const std::vector<float> scores = {1.0f, 3.0f, 3.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 3.0f};
    for (std::size_t k : {std::size_t{2}, std::size_t{100}}) {  // insertion path and partial_sort path
        std::vector<std::int64_t> idx(scores.size());
        std::vector<float> val(scores.size());
        const std::size_t got = nexus::scan::topk_f32(scores.data(), scores.size(), k, idx.data(), val.data());
        NEXUS_CHECK(got == std::min(k, scores.size()), "topk count %zu", got);
        const std::int64_t want[] = {1, 2, 5, 4, 0, 3};  // ties by lower index, NaN last
        for (std::size_t r = 0; r < got; ++r) NEXUS_CHECK(idx[r] == want[r], "topk k=%zu rank %zu: %lld", k, r,
                                                          static_cast<long long>(idx[r]));
    }
}

}  // namespace

int main() {
#if defined(__aarch64__)
    // The cross-compiled run under qemu exists to exercise the NEON kernel; make sure it is really there.
    NEXUS_CHECK(nexus::scan::find_isa("neon") != nullptr, "neon kernel not registered on aarch64");
#endif
    std::size_t cases = 0;
    for (std::size_t d : kSizes) {
        for (std::size_t n : kSizes) {
            const auto seed = static_cast<std::uint32_t>(1000 * d + n);
            check_case(n, d, Fill::Random, seed);
            check_case(n, d, Fill::Extremes, seed + 7);
            cases += 2;
        }
        check_case(5, d, Fill::AllMin, 0);
        ++cases;
    }
    check_case(3, nexus::scan::kMaxDim, Fill::AllMin, 0);  // the largest supported d, saturated
    check_case(3, nexus::scan::kMaxDim, Fill::Extremes, 1);
    check_topk();
    std::printf("test_scan: %zu cases OK on ISAs: %s\n", cases + 2, nexus::scan::available_isa_names().c_str());
    return 0;
}
