#include "topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace nexus::scan {
namespace {

// True when (va, ia) ranks strictly before (vb, ib).
inline bool ranks_before(float va, std::size_t ia, float vb, std::size_t ib) {
    const bool a_nan = std::isnan(va);
    const bool b_nan = std::isnan(vb);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && va != vb) return va > vb;
    return ia < ib;
}

// Small k (the SLB asks for a handful): keep a sorted buffer and insert; most candidates are rejected by a
// single comparison with the current k-th best, so this is one pass over the scores.
std::size_t topk_insertion(const float* scores, std::size_t n, std::size_t k, std::int64_t* indices,
                           float* values) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const float v = scores[i];
        if (count == k) {
            // Fast reject: indices only grow, so a candidate must be strictly greater than the current k-th
            // score (or be a number while the k-th is NaN) to enter.
            const float worst = values[k - 1];
            if (!(v > worst) && !(std::isnan(worst) && !std::isnan(v))) continue;
        }
        std::size_t pos = count < k ? count++ : k - 1;
        // Indices arrive in increasing order, so ties never move ahead of an earlier equal score.
        while (pos > 0 && ranks_before(v, i, values[pos - 1], static_cast<std::size_t>(indices[pos - 1]))) {
            values[pos] = values[pos - 1];
            indices[pos] = indices[pos - 1];
            --pos;
        }
        values[pos] = v;
        indices[pos] = static_cast<std::int64_t>(i);
    }
    return count;
}

}  // namespace

std::size_t topk_f32(const float* scores, std::size_t n, std::size_t k, std::int64_t* indices, float* values) {
    k = std::min(k, n);
    if (k == 0) return 0;
    if (k <= 64) return topk_insertion(scores, n, k, indices, values);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [scores](std::size_t a, std::size_t b) { return ranks_before(scores[a], a, scores[b], b); });
    for (std::size_t r = 0; r < k; ++r) {
        indices[r] = static_cast<std::int64_t>(order[r]);
        values[r] = scores[order[r]];
    }
    return k;
}

}  // namespace nexus::scan
