// Buddy allocator: split/coalesce bookkeeping, error paths, and a 4-thread random alloc/free stress that
// writes a per-thread pattern into every block, verifies it before freeing, and checks that live address
// ranges never overlap across threads. At the end everything must coalesce back into one block.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../alloc/buddy.h"
#include "check.h"

using nexus::alloc::BuddyAllocator;

namespace {

constexpr std::size_t kCap = std::size_t{8} << 20;

void check_basics() {
    bool threw = false;
    try {
        BuddyAllocator bad(3u << 20);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "non power-of-two capacity accepted");

    BuddyAllocator a(kCap);
    NEXUS_CHECK(reinterpret_cast<std::uintptr_t>(a.base()) % nexus::alloc::kArenaAlign == 0, "arena not 2 MiB aligned");
    auto s = a.stats();
    NEXUS_CHECK(s.n_free_blocks == 1 && s.largest_free_block == kCap && s.used == 0, "fresh stats");
    const auto x = a.alloc(1);
    NEXUS_CHECK(x && *x % 128 == 0 && a.block_size(*x) == 128, "min block");
    const auto y = a.alloc(129);
    NEXUS_CHECK(y && *y % 256 == 0 && a.block_size(*y) == 256, "256 block");
    NEXUS_CHECK(!a.alloc(kCap).has_value(), "whole arena while not empty");
    NEXUS_CHECK(!a.alloc(kCap + 1).has_value(), "more than capacity");
    a.free(*x);
    threw = false;
    try {
        a.free(*x);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "double free not detected");
    a.free(*y);
    s = a.stats();
    NEXUS_CHECK(s.n_free_blocks == 1 && s.largest_free_block == kCap && s.used == 0, "coalesce after frees");
    const auto all = a.alloc(kCap);
    NEXUS_CHECK(all && *all == 0, "whole arena after coalescing");
    a.free(*all);
}

struct Live {
    std::size_t offset, size;
    std::uint8_t tag;
};

void stress() {
    BuddyAllocator a(kCap);
    std::mutex ranges_mu;
    std::map<std::size_t, std::size_t> ranges;  // live [offset, offset + size) across all threads
    auto claim = [&](std::size_t off, std::size_t size) {
        std::lock_guard<std::mutex> g(ranges_mu);
        auto next = ranges.lower_bound(off);
        NEXUS_CHECK(next == ranges.end() || next->first >= off + size, "overlap with next range at %zu", off);
        if (next != ranges.begin()) {
            auto prev = std::prev(next);
            NEXUS_CHECK(prev->first + prev->second <= off, "overlap with previous range at %zu", off);
        }
        ranges.emplace(off, size);
    };
    auto release = [&](std::size_t off) {
        std::lock_guard<std::mutex> g(ranges_mu);
        ranges.erase(off);
    };
    auto worker = [&](unsigned tid) {
        std::mt19937 rng(42 + tid);
        std::uniform_int_distribution<int> op(0, 99);
        std::uniform_int_distribution<int> log_size(0, 16);  // 1 B .. 64 KiB requests
        std::vector<Live> live;
        for (int step = 0; step < 4000; ++step) {
            if (op(rng) < 55 || live.empty()) {
                const std::size_t want = (std::size_t{1} << log_size(rng)) + static_cast<std::size_t>(op(rng));
                const auto off = a.alloc(want);
                if (!off) continue;  // the arena is full right now: a valid outcome, try freeing later
                const std::size_t size = a.block_size(*off);
                NEXUS_CHECK(*off % 128 == 0 && size >= want, "bad block");
                claim(*off, size);
                const auto tag = static_cast<std::uint8_t>(tid * 64 + step % 64);
                std::memset(a.base() + *off, tag, size);
                live.push_back({*off, size, tag});
            } else {
                const std::size_t pick = static_cast<std::size_t>(op(rng)) % live.size();
                const Live b = live[pick];
                const auto* p = reinterpret_cast<const std::uint8_t*>(a.base() + b.offset);
                NEXUS_CHECK(std::all_of(p, p + b.size, [&](std::uint8_t v) { return v == b.tag; }),
                            "thread %u: block at %zu was overwritten", tid, b.offset);
                release(b.offset);
                a.free(b.offset);
                live[pick] = live.back();
                live.pop_back();
            }
        }
        for (const Live& b : live) {
            release(b.offset);
            a.free(b.offset);
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) threads.emplace_back(worker, t);
    for (auto& t : threads) t.join();
    const auto s = a.stats();
    NEXUS_CHECK(s.n_free_blocks == 1 && s.largest_free_block == kCap && s.used == 0 && s.n_allocated_blocks == 0,
                "not fully coalesced: %zu free blocks, largest %zu", s.n_free_blocks, s.largest_free_block);
}

}  // namespace

int main() {
    check_basics();
    stress();
    std::printf("test_buddy: OK\n");
    return 0;
}
