#include "buddy.h"

#include <bit>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace nexus::alloc {

void BuddyAllocator::check_layout() noexcept {
    // The lock must start its own line and nothing else may share that line. offsetof is used on a class
    // that is standard-layout (all data members private, no virtuals), which the first assert pins down.
    static_assert(std::is_standard_layout_v<BuddyAllocator>);
    static_assert(alignof(BuddyAllocator) == kCacheLine);
    static_assert(sizeof(std::mutex) <= kCacheLine);
    static_assert(offsetof(BuddyAllocator, mutex_) % kCacheLine == 0);
    static_assert(offsetof(BuddyAllocator, max_order_) + sizeof(unsigned) <= offsetof(BuddyAllocator, mutex_));
    static_assert(offsetof(BuddyAllocator, free_heads_) == offsetof(BuddyAllocator, mutex_) + kCacheLine);
}

BuddyAllocator::BuddyAllocator(std::size_t capacity_bytes) {
    check_layout();
    if (capacity_bytes < kArenaAlign || !std::has_single_bit(capacity_bytes)) {
        throw std::invalid_argument("BuddyAllocator capacity must be a power of two >= 2 MiB (2097152), got " +
                                    std::to_string(capacity_bytes));
    }
    max_order_ = static_cast<unsigned>(std::countr_zero(capacity_bytes / kMinBlock));
    if (max_order_ >= kMaxOrders) throw std::invalid_argument("BuddyAllocator capacity too large");
    // Zero-initialised: no unit starts a block yet.
    block_state_ = new std::uint8_t[capacity_bytes / kMinBlock]();
    // aligned_alloc needs size to be a multiple of the alignment, which a power of two >= 2 MiB is.
    void* arena = std::aligned_alloc(kArenaAlign, capacity_bytes);
    if (arena == nullptr) {
        delete[] block_state_;  // the destructor does not run when a constructor throws
        throw std::bad_alloc();
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Best effort: fewer TLB misses when the scan streams over the matrix. Failure is harmless.
    (void)madvise(arena, capacity_bytes, MADV_HUGEPAGE);
#endif
    base_ = static_cast<std::byte*>(arena);
    capacity_ = capacity_bytes;
    push_free(0, max_order_);
}

BuddyAllocator::~BuddyAllocator() {
    std::free(base_);
    delete[] block_state_;
}

std::size_t BuddyAllocator::block_size_for(std::size_t nbytes) const noexcept {
    if (nbytes > capacity_) return 0;
    return nbytes <= kMinBlock ? kMinBlock : std::bit_ceil(nbytes);
}

void BuddyAllocator::push_free(std::size_t unit, unsigned order) noexcept {
    auto* node = reinterpret_cast<FreeNode*>(base_ + unit * kMinBlock);
    node->prev = nullptr;
    node->next = free_heads_[order];
    if (node->next != nullptr) node->next->prev = node;
    free_heads_[order] = node;
    block_state_[unit] = static_cast<std::uint8_t>(order + 1);
    ++n_free_blocks_;
}

void BuddyAllocator::remove_free(std::size_t unit, unsigned order) noexcept {
    auto* node = reinterpret_cast<FreeNode*>(base_ + unit * kMinBlock);
    if (node->prev != nullptr) {
        node->prev->next = node->next;
    } else {
        free_heads_[order] = node->next;
    }
    if (node->next != nullptr) node->next->prev = node->prev;
    block_state_[unit] = 0;
    --n_free_blocks_;
}

std::optional<std::size_t> BuddyAllocator::alloc(std::size_t nbytes) {
    if (nbytes == 0) throw std::invalid_argument("BuddyAllocator.alloc: nbytes must be > 0");
    const std::size_t size = block_size_for(nbytes);
    if (size == 0) return std::nullopt;
    const auto want = static_cast<unsigned>(std::countr_zero(size / kMinBlock));

    std::lock_guard<std::mutex> lock(mutex_);
    unsigned order = want;
    while (order <= max_order_ && free_heads_[order] == nullptr) ++order;
    if (order > max_order_) return std::nullopt;
    const std::size_t unit =
        static_cast<std::size_t>(reinterpret_cast<std::byte*>(free_heads_[order]) - base_) / kMinBlock;
    remove_free(unit, order);
    // Split down to the wanted order, returning the upper halves to the free lists.
    while (order > want) {
        --order;
        push_free(unit + (std::size_t{1} << order), order);
    }
    block_state_[unit] = static_cast<std::uint8_t>((want + 1) | kAllocatedBit);
    used_ += size;
    ++n_allocated_blocks_;
    return unit * kMinBlock;
}

std::size_t BuddyAllocator::unit_of_checked(std::size_t offset) const {
    if (offset >= capacity_ || offset % kMinBlock != 0) {
        throw std::invalid_argument("BuddyAllocator: offset " + std::to_string(offset) + " is not a block start");
    }
    const std::size_t unit = offset / kMinBlock;
    if ((block_state_[unit] & kAllocatedBit) == 0) {
        throw std::invalid_argument("BuddyAllocator: offset " + std::to_string(offset) +
                                    " is not an allocated block (double free?)");
    }
    return unit;
}

std::size_t BuddyAllocator::block_size(std::size_t offset) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t unit = unit_of_checked(offset);
    return kMinBlock << ((block_state_[unit] & ~kAllocatedBit) - 1);
}

void BuddyAllocator::free(std::size_t offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t unit = unit_of_checked(offset);
    auto order = static_cast<unsigned>((block_state_[unit] & ~kAllocatedBit) - 1);
    used_ -= kMinBlock << order;
    --n_allocated_blocks_;
    block_state_[unit] = 0;
    // Coalesce while the buddy is a free block of the same order (state == order + 1 exactly).
    while (order < max_order_) {
        const std::size_t buddy = unit ^ (std::size_t{1} << order);
        if (block_state_[buddy] != order + 1) break;
        remove_free(buddy, order);
        unit = unit < buddy ? unit : buddy;
        ++order;
    }
    push_free(unit, order);
}

BuddyStats BuddyAllocator::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t largest = 0;
    for (unsigned order = max_order_ + 1; order-- > 0;) {
        if (free_heads_[order] != nullptr) {
            largest = kMinBlock << order;
            break;
        }
    }
    return BuddyStats{capacity_, used_, capacity_ - used_, largest, n_free_blocks_, n_allocated_blocks_};
}

}  // namespace nexus::alloc
