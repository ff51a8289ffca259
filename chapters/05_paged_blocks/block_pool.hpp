// Chapter 05's layer, part 1 (paging), file 1: the block pool — the K/V memory of every
// sequence, cut into pages.
//
// Chapter 04 gave each request its own contiguous cache, sized for the longest it could become.
// Most of that reservation is never written (internal fragmentation), and caches of different
// sizes coming and going leave holes too small for the next one (external fragmentation).
// The operating system's answer is paging, and so is this chapter's:
//
//   the pool    all K/V memory, allocated ONCE up front within a budget in bytes, as N blocks
//               of B token positions each (default B = 16); block b of layer l holds the keys
//               and values of B positions, head by head as chapter 03's cache keeps them:
//               keys[l][b] and values[l][b] are [H_kv, B, D]
//   free list   the blocks nobody holds; allocate() takes one, or answers "none" — the pool
//               never hands out memory it does not have
//   refcounts   how many sequences hold a block; it returns to the free list when the last
//               holder releases it
//
// Part 2 (sharing/) adds three operations, declared at the end of the class and defined in
// sharing/: a shared prefix or forked samples hold the same physical block (retain), a cached
// block nobody holds any more is taken back as it is (reclaim), and a shared block about to be
// written is first copied (copy_block, for copy-on-write).
//
// Sizes (the default model): a block holds 2 (K and V) × 30 layers × H_kv (= 3) × B × D (= 64) floats,
// 720 KiB at B = 16, i.e. 46 080 bytes per position, exactly chapter 03's per-token cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "model/config.hpp"
#include "tensor/tensor.hpp"

namespace infer {

inline constexpr int kDefaultBlockSize = 16;

class BlockPool {
 public:
  // As many blocks of `block_size` positions as fit in `budget_bytes` (all layers' keys and
  // values). Throws std::invalid_argument if block_size < 1 or the budget holds no block.
  BlockPool(const LlamaConfig& config, int block_size, std::size_t budget_bytes, Device device = Device::cpu());

  int block_size() const { return block_size_; }
  int num_blocks() const { return static_cast<int>(refcount_.size()); }
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int used_blocks() const { return num_blocks() - free_blocks(); }
  // 2 × layers × block_size × H_kv·D × 4 bytes.
  std::size_t bytes_per_block() const { return bytes_per_block_; }
  std::size_t bytes() const { return bytes_per_block_ * refcount_.size(); }
  // Blocks needed for n positions: ⌈n / B⌉.
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  // --- the allocator ---
  // A free block with refcount 1, or nothing when none is free (never overcommits). The block
  // that has been free longest is handed out first, so that recently freed blocks, which the
  // prefix cache may still want, are reused last.
  std::optional<int> allocate();
  // One holder fewer; at 0 the block goes to the back of the free list. Releasing a free block
  // is a double free and throws std::logic_error.
  void release(int block);
  int refcount(int block) const;
  bool is_free(int block) const { return refcount(block) == 0; }

  // Throws std::logic_error naming the first broken invariant: every block is either on the free
  // list exactly once with refcount 0, or off it with refcount ≥ 1.
  void check_invariants() const;

  // --- the storage ---
  // Layer `layer`'s keys (values) in block `block`: an [H_kv, B, D] view into the pool (no copy).
  Tensor keys(int layer, int block) const;
  Tensor values(int layer, int block) const;
  // Host pointer to the start of a block, head 0's first row (CPU pools only).
  const float* key_data(int layer, int block) const;
  const float* value_data(int layer, int block) const;
  int n_layers() const { return static_cast<int>(keys_.size()); }
  const Device& device() const { return device_; }

  // ==== Part 2: sharing (prefix reuse, fork, copy-on-write) ====
  // Defined in sharing/fork.cpp (retain, copy_block) and sharing/prefix_reuse.cpp (reclaim).
  // One more holder of a held block (refcount ≥ 1). Throws std::logic_error on a free block.
  void retain(int block);
  // Takes a FREE block back without clearing it (refcount 0 → 1): a prefix-cache hit on a
  // block whose sequence has ended but whose contents are still valid.
  void reclaim(int block);
  // Called with a block that allocate() is about to hand out, so that whoever indexes the old
  // contents (the prefix cache) forgets them before they are overwritten.
  void set_reuse_listener(std::function<void(int block)> listener) { on_reuse_ = std::move(listener); }
  // Copies block src into block dst in every layer (copy-on-write).
  void copy_block(int src, int dst);

 private:
  void check_index(int block) const;
  int block_size_;
  int n_kv_heads_ = 0;
  Device device_;
  std::size_t bytes_per_block_;
  std::vector<int> refcount_;  // per block; 0 = on the free list
  std::deque<int> free_;       // oldest-freed first
  std::vector<Tensor> keys_;   // per layer [num_blocks·H_kv, B, D]: block b is heads b·H_kv … b·H_kv + H_kv − 1
  std::vector<Tensor> values_;
  std::function<void(int)> on_reuse_;
};

}  // namespace infer
