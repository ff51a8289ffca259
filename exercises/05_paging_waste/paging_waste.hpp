// Exercise 05 — the block size: memory reserved and never written against the bookkeeping of
// more, smaller blocks, and the size that costs a workload least.
#pragma once

#include <cstdint>
#include <span>

namespace exercise {

struct BlockCost {
  int64_t written_bytes = 0;   // K/V the sequences have written: Σ length × bytes_per_position
  int64_t reserved_bytes = 0;  // K/V the blocks they hold can take: Σ blocks × B × bytes_per_position
  int64_t table_bytes = 0;     // bookkeeping: per_block_bytes for every block a sequence holds
  // What paging costs beyond the written K/V: the unwritten tails of last blocks, plus bookkeeping.
  int64_t overhead_bytes() const { return reserved_bytes - written_bytes + table_bytes; }
};

// Sequences of `lengths` positions, each holding as many blocks of `block_size` positions as its
// length needs and no more (chapter 05); every block a sequence holds costs `per_block_bytes` of
// bookkeeping besides its K/V (its block-table entry, the pool's refcount and free-list links,
// the prefix cache's hash). Throws std::invalid_argument if block_size < 1, bytes_per_position < 1,
// per_block_bytes < 0 or a length is negative.
BlockCost block_cost(std::span<const int> lengths, int block_size, int64_t bytes_per_position, int64_t per_block_bytes);

// Of the `candidates` block sizes, the one whose block_cost has the smallest overhead_bytes();
// among equal overheads the LARGER block (fewer blocks for attention to walk and the scheduler to
// track). Throws std::invalid_argument if candidates is empty (and as block_cost does).
int best_block_size(std::span<const int> lengths, std::span<const int> candidates, int64_t bytes_per_position, int64_t per_block_bytes);

}  // namespace exercise
