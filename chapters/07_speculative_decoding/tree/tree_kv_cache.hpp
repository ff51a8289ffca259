// Chapter 07, part 2, file 2: the cache a tree is verified through — the tree mask
// at lib's one attention seam (KvStore::attend).
//
// Chapter 03's GroupedKvCache lays positions out in order and attends causally: query t sees
// rows 0 … pos0 + t. A tree pass breaks both assumptions. Tree node j is written at slot
// base + j (base: the root's slot, the length of the accepted text before it), but it sits at
// position base + depth(j), and it must see the rows before the root and the slots of its own
// ancestors — not the slots of other branches that lie between them. So this cache keeps chapter
// 03's layout ([capacity, H_kv·D] per layer, each key/value head once) and changes how a query
// finds its rows: it hands lib's CPU attention kernel a list of row addresses (cpu::KvRows, the
// seam chapter 05's paged cache reads its blocks through), one per visible position —
//
//   node j's rows:  slot 0, 1, …, base − 1,  then base + a for each a on path_to(j)
//
// and asks for causal attention at position base + depth(j), the last row of that list. The
// kernel computes each query with the same instructions whatever rows it is handed, so node j
// gets exactly the bits a decode step of its own draft sequence gets.
//
// Without a tree (set_tree(nullptr): the prefill, a plain step) it is chapter 03's cache to the
// bit: contiguous rows, ops::attention. After verification, keep_path moves the accepted nodes'
// rows to the slots after the root — their keys are already rotated for base + depth, which is
// where they now sit — and forgets the rest. CPU only (the row list is made of host addresses).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"
#include "token_tree.hpp"

namespace infer {

class TreeKvCache : public KvStore {
 public:
  TreeKvCache(const LlamaConfig& config, int64_t max_tokens);

  // From now on, rows written at slot base + j are tree node j; attention follows the tree's
  // ancestor mask. nullptr: plain causal attention, as chapter 03's cache. The tree may grow
  // between passes (the draft's tree does) but must outlive its use.
  void set_tree(const TokenTree* tree, int64_t base);

  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;

  int64_t length() const { return length_; }
  int64_t max_tokens() const { return max_tokens_; }
  void truncate(int64_t length);
  // The compaction after a tree round: the nodes of `path` (root first, node 0) move to slots
  // base, base + 1, …; the cache then holds base + path.size() positions and no tree.
  void keep_path(std::span<const int> path);

 private:
  void attend_tree(int layer, int64_t pos0, const Tensor& q, Tensor& out) const;

  int n_heads_, n_kv_heads_;
  int64_t max_tokens_, length_ = 0;
  std::vector<Tensor> keys_, values_;  // per layer [max_tokens, H_kv·D]
  const TokenTree* tree_ = nullptr;
  int64_t base_ = 0;
};

}  // namespace infer
