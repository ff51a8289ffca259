#include "block_table.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

int64_t BlockTable::blocks_needed(const BlockPool& pool, int64_t n) const {
  if (n <= 0) return 0;
  const int64_t last = (length_ + n - 1) / block_size_;  // logical block of the last new position
  int64_t need = std::max<int64_t>(0, last + 1 - std::ssize(blocks_));
  for (int64_t i = length_ / block_size_; i <= last && i < std::ssize(blocks_); ++i)
    need += pool.refcount(blocks_[i]) > 1;  // part 2: a shared block to be written is copied
  return need;
}

// the-change: begin BlockTable::reserve
bool BlockTable::reserve(BlockPool& pool, int64_t n, int64_t* copies) {
  if (pool.block_size() != block_size_) throw std::logic_error("BlockTable: pool of another block size");
  if (n <= 0) return true;
  if (blocks_needed(pool, n) > pool.free_blocks()) return false;
  const int64_t last = (length_ + n - 1) / block_size_;  // logical block of the last new position
  copy_on_write(pool, last, copies);  // part 2: a shared block about to be written is copied first
  // New blocks as the sequence grows: the pool has them, blocks_needed said so.
  while (std::ssize(blocks_) <= last) blocks_.push_back(*pool.allocate());
  return true;
}
// the-change: end BlockTable::reserve

void BlockTable::advance(int64_t n) {
  if (length_ + n > capacity())
    throw std::logic_error(fmt::format("BlockTable: {} positions written past a capacity of {}", length_ + n, capacity()));
  length_ += n;
}

void BlockTable::truncate(int64_t positions) {
  if (positions < 0 || positions > length_)
    throw std::logic_error(fmt::format("BlockTable: truncate to {} of {} positions", positions, length_));
  length_ = positions;
}

void BlockTable::release(BlockPool& pool) {
  for (int b : blocks_) pool.release(b);
  blocks_.clear();
  length_ = 0;
}

void check_tables(const BlockPool& pool, std::span<const BlockTable* const> tables) {
  pool.check_invariants();
  std::vector<int> holders(pool.num_blocks(), 0);
  for (const BlockTable* t : tables)
    for (int b : t->blocks()) {
      if (b < 0 || b >= pool.num_blocks()) throw std::logic_error(fmt::format("block table lists block {}, outside the pool", b));
      ++holders[b];
    }
  for (int b = 0; b < pool.num_blocks(); ++b) {
    const int rc = pool.refcount(b), held = holders[b];
    if (rc == held) continue;
    if (held == 0) throw std::logic_error(fmt::format("block {} leaked: refcount {} but no table holds it", b, rc));
    throw std::logic_error(fmt::format("block {}: refcount {} but {} tables hold it{}", b, rc, held,
                                       rc == 0 ? " (used after it was freed)" : ""));
  }
}

// Part 2's copy_on_write, share and adopt are in sharing/ (fork.cpp, prefix_reuse.cpp).

}  // namespace infer
