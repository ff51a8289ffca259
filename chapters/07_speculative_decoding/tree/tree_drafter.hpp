// Chapter 07, part 2, file 3: a draft model that proposes a tree.
//
// The shape is fixed per run, as Medusa's static trees are: `branching` lists, for each depth,
// how many children every node there gets — the draft's top-k tokens after that node's draft
// sequence (ties: the lower id first, so top-1 is the greedy guess). Written 3×1×1×1:
//
//   depth 1   the draft's 3 likeliest tokens after the root
//   depth 2+  each of them continued greedily (top-1), to depth 4      → 3 + 3 + 3 + 3 = 12 guesses
//
// 2×2×1×1 gives 2 + 4 + 4 + 4 = 14; 1×1×1×1 is a linear draft of γ = 4. A tree has at most
// 15 guesses, so the verification pass feeds at most 16 positions: within lib's small-batch
// kernel, whose rows keep the bits they get alone (README, "Why it loses nothing").
//
// Drafting costs one draft pass per depth, not per node: the first pass feeds the new context
// (ending with the root) as chapter 02 would; pass d feeds all nodes of depth d together, in
// one forward over the draft's own TreeKvCache with the tree mask, and takes the top-k of each
// row. A tree of depth 4 costs the draft four passes, as γ = 4 does — of a few rows each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/llama.hpp"
#include "token_tree.hpp"
#include "tree_kv_cache.hpp"

namespace infer {

struct TreeShape {
  std::vector<int> branching;  // [d]: children of each node at depth d (d = 0: the root)
  int depth() const { return static_cast<int>(branching.size()); }
  int guesses() const;      // nodes below the root
  std::string name() const;  // "3×1×1×1"
};
constexpr int kMaxTreeGuesses = 15;
// "3x1x1x1": each factor 1…8, at most kMaxTreeGuesses guesses; throws
// std::invalid_argument with the reason otherwise.
TreeShape parse_tree_shape(const std::string& text);

// Runs nodes first … first+count−1 of `tree` through `model` in one pass: node j's keys and
// values at slot base + j of `cache`, its RoPE position base + depth(j) (not its slot), its
// attention through the tree mask. Returns the logits [count, V], a row per node. Built of
// lib's public steps of a pass (embed, layer, logits), which take a position per token.
Tensor forward_tree(const Llama& model, const TokenTree& tree, int first, int count, int64_t base, TreeKvCache& cache);


class TreeDrafter {
 public:
  // `model`: the draft (any Llama with the target's vocabulary); `capacity`: the longest context
  // plus the tree. Greedy only: the tree's nodes are the draft's top-k, not draws.
  TreeDrafter(std::string name, Llama model, int64_t capacity, TreeShape shape);
  const std::string& name() const { return name_; }
  const TreeShape& shape() const { return shape_; }

  // A tree rooted at context.back(), at most `max_depth` deep (the tokens still wanted).
  TokenTree propose(std::span<const int32_t> context, int max_depth);

 private:
  std::string name_;
  Llama model_;
  TreeShape shape_;
  TreeKvCache cache_;
  std::vector<int32_t> fed_;  // the tokens whose keys and values cache_ holds, in order
};

}  // namespace infer
