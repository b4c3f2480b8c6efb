// Exact-token radix tree over the token sequences held by a fixed set of sequence slots (Nexus paper 003 §6.4).
//
// Each slot is one llama.cpp sequence id; the tree maps every cached token prefix to the slots whose KV holds it.
// Everything is reserved in the constructor: one token buffer of `slot_capacity` tokens per slot, and a node pool of
// 2 * n_slots + 1 nodes, which is the most a path-compressed trie over n_slots sequences can need (at most n_slots
// nodes where a sequence ends, fewer than that many branching nodes, plus the root). match, lcp, insert, erase,
// lock, unlock, acquire and evict never allocate.
//
// An edge stores no tokens of its own: its label is tokens [depth, depth + len) of any slot that passes through it
// (all of them agree there), so a slot leaving the tree never invalidates a label.
//
// Not thread-safe: the engine calls it under its turn lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nexus::radix {

struct Match {
    int32_t slot = -1;   // a slot holding the longest cached prefix (-1: none shares even one token)
    int64_t length = 0;  // how many leading tokens it shares with the query
};

struct Stats {
    int32_t n_slots = 0;
    int32_t used_slots = 0;      // slots holding at least one token
    int32_t locked_slots = 0;
    int32_t nodes = 0;           // nodes in the tree, root included
    int32_t node_capacity = 0;   // 2 * n_slots + 1
    int64_t slot_tokens = 0;     // sum of the slots' lengths
    int64_t unique_tokens = 0;   // tokens on the tree's edges: what the slots hold once shared prefixes count once
    uint64_t clock = 0;          // the logical LRU clock
};

class RadixTree {
public:
    static constexpr int32_t kMaxSlots = 64;  // one bit per slot in a node's masks

    RadixTree(int32_t n_slots, int64_t slot_capacity);

    // The longest prefix of tokens[0, n) that some slot holds; among the slots holding it, the most recently used.
    // That slot counts as used now (LRU).
    Match match(const int32_t* tokens, int64_t n);
    // Leading tokens that `slot` shares with tokens[0, n) (no LRU effect).
    int64_t lcp(int32_t slot, const int32_t* tokens, int64_t n) const;
    // `slot` now holds exactly tokens[0, n) (its previous sequence is dropped first). Throws std::length_error past
    // the slot capacity.
    void insert(int32_t slot, const int32_t* tokens, int64_t n);
    // `slot` holds nothing.
    void erase(int32_t slot);
    // A slot that is locked is never evicted; locks nest (a count per slot).
    void lock(int32_t slot);
    void unlock(int32_t slot);  // throws std::logic_error when the slot is not locked
    // Empty the least recently used unlocked slot that holds tokens; returns it, or -1 when there is none.
    int32_t evict();
    // A slot for a new user: the least recently used empty unlocked slot, else one freed by evict(); -1 when every
    // slot is locked. The slot counts as used now.
    int32_t acquire();

    int32_t n_slots() const { return n_slots_; }
    int64_t slot_capacity() const { return capacity_; }
    int64_t size(int32_t slot) const;
    const int32_t* tokens(int32_t slot) const;
    int32_t lock_count(int32_t slot) const;
    uint64_t last_used(int32_t slot) const;
    Stats stats() const;
    // Walks the whole tree and checks every invariant (masks, labels, compression, node count); returns an empty
    // string when they hold, else what is wrong. For tests.
    std::string check() const;

private:
    struct Node {
        int32_t parent = -1;
        int32_t first_child = -1;
        int32_t next_sibling = -1;
        int64_t depth = 0;     // tokens before this node's edge
        int64_t len = 0;       // tokens on the edge
        uint64_t through = 0;  // slots whose sequence runs through this edge (it ends here or below)
        uint64_t ends = 0;     // slots whose sequence ends exactly at this edge's end
    };

    void check_slot(int32_t slot) const;
    const int32_t* label(const Node& node) const;
    int32_t find_child(int32_t node, int32_t token) const;
    int32_t new_node();
    void free_node(int32_t node);
    void unlink(int32_t node);
    void replace_child(int32_t parent, int32_t old_child, int32_t new_child);
    int32_t n_children(int32_t node) const;

    int32_t n_slots_;
    int64_t capacity_;
    std::vector<int32_t> buf_;  // n_slots_ * capacity_ tokens
    std::vector<int64_t> len_;
    std::vector<int32_t> locks_;
    std::vector<uint64_t> last_used_;
    std::vector<Node> nodes_;
    std::vector<int32_t> free_nodes_;  // a stack; reserved to the pool size
    int32_t live_nodes_ = 1;
    uint64_t clock_ = 0;
};

// Leading elements a[0, n) and b[0, n) share. Compares 64-token chunks with memcmp (vectorised by the C library)
// before it looks for the exact position, so an 8K-token match costs about a microsecond.
int64_t common_prefix(const int32_t* a, const int32_t* b, int64_t n);

}  // namespace nexus::radix
