// Buddy allocator over one 2 MiB-aligned arena, for the SLB matrix and compiled KV blocks.
//
// Capacity model: fixed at construction, a power of two that is at least 2 MiB (so the arena is a whole
// number of 2 MiB huge pages and the whole arena is one top-level buddy block). Blocks are powers of two
// from kMinBlock (128 bytes) up to the capacity; every returned offset is a multiple of its block size, so
// every pointer is at least 128-byte aligned. Freed blocks coalesce with their buddies immediately.
//
// Thread safety: all mutation happens under one mutex. The allocator is shared across threads (Python
// threads with the GIL released, KV workers), so the mutex lives on its own 128-byte line: neighbours that
// are read without the lock (base_, capacity_) never share a line with a lock word being bounced between
// cores. 128 rather than 64 because Intel's adjacent-line prefetcher fetches 64-byte lines in pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

namespace nexus::alloc {

inline constexpr std::size_t kCacheLine = 128;
inline constexpr std::size_t kMinBlock = 128;
inline constexpr std::size_t kArenaAlign = std::size_t{2} << 20;  // 2 MiB huge page
inline constexpr unsigned kMaxOrders = 48;                       // 128 B << 47: far beyond any real arena

struct BuddyStats {
    std::size_t capacity;            // bytes in the arena
    std::size_t used;                // bytes in allocated blocks (block sizes, not requests)
    std::size_t free;                // capacity - used
    std::size_t largest_free_block;  // bytes; 0 when full
    std::size_t n_free_blocks;
    std::size_t n_allocated_blocks;
};

class alignas(kCacheLine) BuddyAllocator {
public:
    // Throws std::invalid_argument unless capacity_bytes is a power of two >= 2 MiB, std::bad_alloc when
    // the arena cannot be obtained.
    explicit BuddyAllocator(std::size_t capacity_bytes);
    ~BuddyAllocator();
    BuddyAllocator(const BuddyAllocator&) = delete;
    BuddyAllocator& operator=(const BuddyAllocator&) = delete;

    // Offset (from base()) of a block of at least nbytes, or nullopt when no free block is large enough.
    // Throws std::invalid_argument for nbytes == 0.
    std::optional<std::size_t> alloc(std::size_t nbytes);

    // Returns the block starting at offset. Throws std::invalid_argument when offset is not the start of an
    // allocated block (a double free is caught unless the block was reallocated in between; the Python
    // layer tracks block objects and catches that case too).
    void free(std::size_t offset);

    // Size in bytes of the allocated block at offset (a power of two >= kMinBlock); throws like free().
    std::size_t block_size(std::size_t offset) const;

    BuddyStats stats() const;

    std::byte* base() const noexcept { return base_; }
    std::size_t capacity() const noexcept { return capacity_; }

    // Smallest block size that holds nbytes (a power of two >= kMinBlock); 0 if nbytes > capacity.
    std::size_t block_size_for(std::size_t nbytes) const noexcept;

private:
    struct FreeNode {  // lives in the first bytes of each free block
        FreeNode* prev;
        FreeNode* next;
    };

    // block_state_ values at a block's first kMinBlock unit: 0 = not a block start, else order + 1, with
    // kAllocatedBit set while the block is handed out.
    static constexpr std::uint8_t kAllocatedBit = 0x80;

    void push_free(std::size_t unit, unsigned order) noexcept;
    void remove_free(std::size_t unit, unsigned order) noexcept;
    std::size_t unit_of_checked(std::size_t offset) const;  // validates offset, caller holds mutex_
    static void check_layout() noexcept;

    // ---- cache line 0: immutable after construction, read without the lock ----
    std::byte* base_ = nullptr;
    std::size_t capacity_ = 0;
    unsigned max_order_ = 0;  // capacity_ == kMinBlock << max_order_

    // ---- cache line 1: the contended lock, alone ----
    alignas(kCacheLine) mutable std::mutex mutex_;

    // ---- cache line 2+: state guarded by mutex_ ----
    alignas(kCacheLine) FreeNode* free_heads_[kMaxOrders] = {};
    // One byte per kMinBlock unit. A raw owning pointer rather than unique_ptr: libstdc++'s unique_ptr is not
    // standard-layout, and standard layout is what makes the offsetof checks in check_layout() well-defined.
    std::uint8_t* block_state_ = nullptr;
    std::size_t used_ = 0;
    std::size_t n_free_blocks_ = 0;
    std::size_t n_allocated_blocks_ = 0;
};

}  // namespace nexus::alloc
