// Radix tree of sequence slots: random insert / erase / lock / evict / acquire against a brute-force reference
// (the longest prefix over every slot's sequence), with check() of every invariant after each step. Sequences share
// prefixes from a small alphabet so that edges split and fold all the time. Run under ASan/UBSan by
// scripts/native-sanitize.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../radix/radix_tree.h"
#include "check.h"

using nexus::radix::RadixTree;

namespace {

int64_t ref_lcp(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return static_cast<int64_t>(i);
}

void check_common_prefix() {
    // every length around the 64-token chunk, every mismatch position
    for (int64_t n : {0, 1, 63, 64, 65, 127, 128, 129, 300}) {
        std::vector<int32_t> a(static_cast<std::size_t>(n)), b;
        for (int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = static_cast<int32_t>(i * 7);
        for (int64_t k = 0; k <= n; ++k) {
            b = a;
            if (k < n) b[static_cast<std::size_t>(k)] += 1;
            NEXUS_CHECK(nexus::radix::common_prefix(a.data(), b.data(), n) == k, "n=%lld k=%lld", (long long)n,
                        (long long)k);
        }
    }
}

void check_errors() {
    bool threw = false;
    try {
        RadixTree t(65, 8);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "65 slots accepted");
    RadixTree t(2, 4);
    const int32_t toks[5] = {1, 2, 3, 4, 5};
    threw = false;
    try {
        t.insert(0, toks, 5);
    } catch (const std::length_error&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "5 tokens into a 4-token slot");
    NEXUS_CHECK(t.size(0) == 0, "a refused insert changed the slot");
    threw = false;
    try {
        t.unlock(1);
    } catch (const std::logic_error&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "unlock of an unlocked slot");
    threw = false;
    try {
        t.lock(2);
    } catch (const std::out_of_range&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "slot 2 of 2");
}

void check_random(uint32_t seed, int32_t n_slots) {
    std::mt19937 rng(seed);
    const int64_t cap = 40;
    RadixTree t(n_slots, cap);
    std::vector<std::vector<int32_t>> ref(static_cast<std::size_t>(n_slots));
    std::vector<int32_t> locks(static_cast<std::size_t>(n_slots), 0);
    auto rand_seq = [&]() {
        // a prefix of some slot's sequence (shared prefixes), then random tokens from a 3-letter alphabet
        std::vector<int32_t> s;
        const auto& base = ref[rng() % ref.size()];
        if (!base.empty() && rng() % 2) s.assign(base.begin(), base.begin() + static_cast<long>(rng() % (base.size() + 1)));
        const auto extra = rng() % 12;
        for (uint32_t i = 0; i < extra && s.size() < static_cast<std::size_t>(cap); ++i) s.push_back(static_cast<int32_t>(rng() % 3));
        return s;
    };
    for (int step = 0; step < 4000; ++step) {
        const auto op = rng() % 10;
        const auto slot = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_slots));
        if (op < 4) {
            auto s = rand_seq();
            t.insert(slot, s.data(), static_cast<int64_t>(s.size()));
            ref[static_cast<std::size_t>(slot)] = s;
        } else if (op == 4) {
            t.erase(slot);
            ref[static_cast<std::size_t>(slot)].clear();
        } else if (op == 5) {
            t.lock(slot);
            ++locks[static_cast<std::size_t>(slot)];
        } else if (op == 6 && locks[static_cast<std::size_t>(slot)] > 0) {
            t.unlock(slot);
            --locks[static_cast<std::size_t>(slot)];
        } else if (op == 7) {
            const int32_t v = (rng() % 2) ? t.evict() : t.acquire();
            if (v >= 0) {
                NEXUS_CHECK(locks[static_cast<std::size_t>(v)] == 0, "seed %u step %d: locked slot %d handed out", seed, step, v);
                ref[static_cast<std::size_t>(v)].clear();
            } else {
                for (int32_t s = 0; s < n_slots; ++s) {
                    NEXUS_CHECK(locks[static_cast<std::size_t>(s)] > 0 || ref[static_cast<std::size_t>(s)].empty(),
                                "seed %u step %d: -1 with slot %d evictable", seed, step, s);
                }
            }
        } else {
            auto q = rand_seq();
            const auto m = t.match(q.data(), static_cast<int64_t>(q.size()));
            int64_t best = 0;
            for (const auto& r : ref) best = std::max(best, ref_lcp(r, q));
            NEXUS_CHECK(m.length == best, "seed %u step %d: match %lld, reference %lld", seed, step,
                        (long long)m.length, (long long)best);
            if (best > 0) {
                NEXUS_CHECK(ref_lcp(ref[static_cast<std::size_t>(m.slot)], q) == best, "seed %u step %d: wrong slot", seed, step);
            } else {
                NEXUS_CHECK(m.slot == -1, "seed %u step %d: a slot for no match", seed, step);
            }
        }
        for (int32_t s = 0; s < n_slots; ++s) {
            NEXUS_CHECK(t.size(s) == static_cast<int64_t>(ref[static_cast<std::size_t>(s)].size()), "seed %u step %d: size", seed, step);
        }
        const auto err = t.check();
        NEXUS_CHECK(err.empty(), "seed %u step %d: %s", seed, step, err.c_str());
        NEXUS_CHECK(t.stats().nodes <= 2 * n_slots + 1, "node bound");
    }
}

}  // namespace

int main() {
    check_common_prefix();
    check_errors();
    for (uint32_t seed = 1; seed <= 12; ++seed) check_random(seed, seed % 3 == 0 ? 64 : static_cast<int32_t>(2 + seed));
    std::printf("test_radix: OK\n");
    return 0;
}
