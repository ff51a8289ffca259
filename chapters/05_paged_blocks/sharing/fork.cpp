// Chapter 05's layer, part 2 (sharing): n samples of one prompt — fork, then copy-on-write.
//
// Part 1 gave every sequence its own blocks. Samples of one prompt would each hold (and compute)
// a copy of the same prompt. Instead the prompt is prefilled once, and each further sample gets a
// block table that lists the SAME physical blocks, one more holder each:
//
//   BlockPool::retain         refcount + 1 on a held block
//   BlockTable::share         an empty table takes another's first ⌈positions / B⌉ blocks
//   PagedEngine::fork         a child request shares the parent's prompt blocks (positions
//                             0 … P−2) and feeds the last prompt token itself in its first step,
//                             to draw its own first token from its own sampler
//
// A shared block is only read. The prompt's last block is usually only partly filled, and the
// next position of every sample falls in it: the first write into a shared block first gives
// the writer a private copy (copy-on-write); blocks that stay identical stay shared:
//
//   BlockPool::copy_block     every layer's rows of one block into another
//   BlockTable::copy_on_write called by part 1's reserve() before a step, not inside attend, so
//                             that a pool that runs out leads to a preemption, not a failure
//                             halfway through a forward pass; blocks_needed() counts the copies
//
// The declarations are in the part-1 headers, in their "Part 2" sections.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "block_pool.hpp"
#include "block_table.hpp"
#include "paged_engine.hpp"

namespace infer {

void BlockPool::retain(int block) {
  check_index(block);
  int& rc = refcount_[block];
  if (rc == 0) throw std::logic_error(fmt::format("BlockPool: retain of free block {}", block));
  ++rc;
}

void BlockPool::copy_block(int src, int dst) {
  for (int l = 0; l < n_layers(); ++l) {
    Tensor k = keys(l, dst), v = values(l, dst);
    k.copy_from(keys(l, src));
    v.copy_from(values(l, src));
  }
}

void BlockTable::share(BlockPool& pool, std::span<const int> blocks, int64_t positions) {
  if (!blocks_.empty()) throw std::logic_error("BlockTable: share into a table that holds blocks");
  const auto n = static_cast<std::size_t>((positions + block_size_ - 1) / block_size_);
  if (n > blocks.size()) throw std::logic_error(fmt::format("BlockTable: {} positions need {} blocks, given {}", positions, n, blocks.size()));
  for (std::size_t i = 0; i < n; ++i) {
    pool.retain(blocks[i]);
    blocks_.push_back(blocks[i]);
  }
  length_ = positions;
}

// the-change: begin BlockTable::copy_on_write
void BlockTable::copy_on_write(BlockPool& pool, int64_t last, int64_t* copies) {
  // A shared block about to be written becomes a private copy; the other holders keep reading
  // the original.
  for (int64_t i = length_ / block_size_; i <= last && i < std::ssize(blocks_); ++i) {
    int& b = blocks_[i];
    if (pool.refcount(b) == 1) continue;
    const int copy = *pool.allocate();  // counted in blocks_needed: cannot fail
    pool.copy_block(b, copy);
    pool.release(b);
    b = copy;
    if (copies != nullptr) ++*copies;
  }
}
// the-change: end BlockTable::copy_on_write

// the-change: begin PagedEngine::fork
void PagedEngine::fork(const Request& parent, const Request& child) {
  const Sequence& p = sequence(parent);
  if (sequences_.count(child.id) != 0) throw std::logic_error(fmt::format("request {} forked while admitted", child.id));
  if (child.prompt != parent.prompt || !child.tokens.empty())
    throw std::invalid_argument("fork: the child must be a fresh request with the parent's prompt");
  const auto shared = std::ssize(parent.prompt) - 1;  // positions 0 … P−2
  if (p.cache->length() < shared + 1) throw std::logic_error("fork: the parent's prompt is not prefilled yet");

  Sequence s{std::make_unique<PagedKvCache>(pool_, model_.config(), &prefix_, options_.read), sampler_for(child), parent.prompt,
             {parent.prompt.back()}, {}};
  s.cache->table().share(pool_, p.cache->table().blocks(), shared);
  const int64_t full = shared / pool_.block_size();  // blocks the child shares whole
  s.hashes.assign(p.hashes.begin(), p.hashes.begin() + std::min(full, std::ssize(p.hashes)));
  ++stats_.forks;
  stats_.shared_at_fork += std::ssize(s.cache->table().blocks());
  sequences_.emplace(child.id, std::move(s));
}
// the-change: end PagedEngine::fork

}  // namespace infer
