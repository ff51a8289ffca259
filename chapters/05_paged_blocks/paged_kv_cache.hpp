// Chapter 05's layer, part 1 (paging), file 3: a KvStore whose memory is a block table into the
// shared pool.
//
// Chapter 03's GroupedKvCache kept one [H_kv, max_tokens, D] buffer per layer. PagedKvCache keeps
// only a BlockTable; the rows live in the BlockPool, shared by every sequence, each block laid
// out head by head as chapter 03's buffer is, [H_kv, B, D]. For layer l, a step of T new
// positions pos0 … pos0+T−1:
//
//   write    k, v [T, H_kv·D] head by head into block blocks[p / B], row p % B of each head
//   attend   query t, head h, against keys 0 … pos0+t: attention reads each key/value row
//            where it lies, through the block table — nothing is gathered into a contiguous
//            copy. Query head h reads key/value head h / (H / H_kv), as in chapter 03.
//
// The arithmetic is not the chapter's: it is the library's CPU attention kernel
// (lib/tensor/cpu_attention.hpp), the one ops::attention runs on chapter 04's contiguous cache.
// The kernel asks a KvRows where row j of head g lies; this cache answers "block j / B, head g,
// row j % B" with the blocks of its table. Same kernel, same operations in the same order, other addresses: so
// the logits equal chapter 04's — bit for bit on the CPU, which tests/stage/test_stage_05.cpp
// checks.
//
// Memory is taken from the pool before a step, in reserve(): the blocks for the new positions
// and (part 2), when one of the blocks to be written is shared (a forked sample writing into its
// prompt's last block), a private copy of it (copy-on-write). Doing this before the forward, not
// inside attend, lets a scheduler that finds the pool empty preempt someone instead of failing
// halfway through a forward pass.
//
// On a CUDA device the CPU kernel does not apply: attend gathers the sequence's rows
// from its blocks into one contiguous tensor per layer (device-to-device copies) and calls
// ops::attention — the memory savings hold, the in-place read is left to a paged kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_pool.hpp"
#include "block_table.hpp"
#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "prefix_cache.hpp"  // part 2, sharing/
#include "tensor/tensor.hpp"

namespace infer {

enum class PagedRead {
  in_place,  // the CPU kernel reads the rows through the block table (default on the CPU)
  gather,    // copy the rows into a contiguous tensor, then ops::attention (always on CUDA)
};

class PagedKvCache : public KvStore {
 public:
  // `prefix` (optional, part 2): the prefix cache to tell when a block it indexes is written in
  // place.
  PagedKvCache(BlockPool& pool, const LlamaConfig& config, PrefixCache* prefix = nullptr,
               PagedRead read = PagedRead::in_place);
  ~PagedKvCache() override;  // its blocks go back to the pool
  PagedKvCache(const PagedKvCache&) = delete;
  PagedKvCache& operator=(const PagedKvCache&) = delete;

  // Makes room for the next n_new positions (new blocks; part 2: copy-on-write of shared ones).
  // All or nothing; false when the pool has too few free blocks.
  bool reserve(int64_t n_new);
  // Blocks reserve(n_new) would take from the pool.
  int64_t blocks_needed(int64_t n_new) const { return table_.blocks_needed(pool_, n_new); }

  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;

  BlockTable& table() { return table_; }
  const BlockTable& table() const { return table_; }
  BlockPool& pool() const { return pool_; }
  int64_t length() const { return table_.length(); }
  // Bytes of the blocks it holds (a shared block counted in full by every holder).
  std::size_t bytes() const { return table_.blocks().size() * pool_.bytes_per_block(); }
  void release() { table_.release(pool_); }
  void truncate(int64_t positions) { table_.truncate(positions); }

  // ==== Part 2: sharing (prefix reuse, fork, copy-on-write) ====
  int64_t copies() const { return copies_; }  // copy-on-write copies this cache made

 private:
  void attend_in_place(int layer, int64_t pos0, const Tensor& q, Tensor& out) const;
  void attend_gathered(int layer, int64_t pos0, const Tensor& q, Tensor& out) const;
  // Part 2 (sharing/prefix_reuse.cpp): the blocks positions length … length+n_new−1 fall in
  // leave the prefix cache's index before they are written.
  void forget_blocks_to_write(int64_t n_new);

  BlockPool& pool_;
  PrefixCache* prefix_;  // part 2
  PagedRead read_;
  int n_heads_, n_kv_heads_, n_layers_;
  BlockTable table_;
  int64_t copies_ = 0;  // part 2
};

}  // namespace infer
