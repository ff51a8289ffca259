// Chapter 05's layer, part 1 (paging), file 2: the block table — where one sequence's positions
// live.
//
// A sequence's cache is logically contiguous (positions 0 … length−1) and physically scattered:
//
//   position p   →   logical block p / B   →   physical block blocks[p / B], row p % B
//
// exactly as a page table maps a virtual address to a frame. The table grows one block at a
// time as the sequence does, so a sequence holds at most B − 1 unused positions (its last block's
// tail) instead of chapter 04's reservation for its longest possible length.
//
// Part 2 (sharing/), declared at the end of the class and defined in sharing/: two tables may
// list the same physical block — a shared prompt prefix (adopt), or samples forked from one
// prompt (share). A shared block is only read: reserve() first gives a writer of one a private
// copy (copy-on-write), which is why blocks_needed and reserve below count copies.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "block_pool.hpp"

namespace infer {

class BlockTable {
 public:
  explicit BlockTable(int block_size) : block_size_(block_size) {}

  int block_size() const { return block_size_; }
  int64_t length() const { return length_; }  // positions written
  int64_t capacity() const { return std::ssize(blocks_) * block_size_; }
  const std::vector<int>& blocks() const { return blocks_; }
  int physical_block(int64_t pos) const { return blocks_.at(static_cast<std::size_t>(pos / block_size_)); }

  // Blocks reserve(n) would take from the pool: new blocks past the capacity, plus (part 2) one
  // copy per shared block that positions length … length+n−1 fall in.
  int64_t blocks_needed(const BlockPool& pool, int64_t n) const;
  // Makes positions length … length+n−1 writable: allocates the blocks they need and (part 2)
  // replaces every shared block among them by a private copy. All or nothing: returns false,
  // changing nothing, when the pool has too few free blocks. Adds the copies made to *copies
  // when given.
  bool reserve(BlockPool& pool, int64_t n, int64_t* copies = nullptr);
  // Records that n positions have been written (they must have been reserved).
  void advance(int64_t n);
  // Forgets positions from `positions` on, keeping the blocks: the next write goes there again
  // (a benchmark re-timing the same step; a rejected speculative draft).
  void truncate(int64_t positions);
  // Every block released; the table is empty again.
  void release(BlockPool& pool);

  // ==== Part 2: sharing (prefix reuse, fork, copy-on-write) ====
  // Defined in sharing/fork.cpp (share, copy_on_write) and sharing/prefix_reuse.cpp (adopt).
  // This (empty) table takes the first `positions` positions of `blocks` (⌈positions / B⌉ of
  // them), sharing them: each gets one more holder (a forked sample).
  void share(BlockPool& pool, std::span<const int> blocks, int64_t positions);
  // The same when the blocks are free but still hold valid contents (prefix-cache hit after
  // their sequence ended): each is reclaimed if free, retained if held.
  void adopt(BlockPool& pool, std::span<const int> blocks, int64_t positions);

 private:
  // Part 2 (sharing/fork.cpp). Copy-on-write, for reserve: every shared block among logical
  // blocks length / B … last becomes a private copy. The pool must have a free block for each
  // (blocks_needed counts them).
  void copy_on_write(BlockPool& pool, int64_t last, int64_t* copies);

  int block_size_;
  int64_t length_ = 0;
  std::vector<int> blocks_;  // logical block i → physical block
};

// Throws std::logic_error unless every block's refcount equals the number of `tables` that hold
// it (a held block no table lists is a leak; more holders than the refcount, a use after free).
// The pool's own invariants are checked too.
void check_tables(const BlockPool& pool, std::span<const BlockTable* const> tables);

}  // namespace infer
