// Chapter 07, part 2, file 1: the token tree.
//
// A linear draft is one guess per position; the first wrong guess ends the round and every
// guess after it is wasted. A tree of drafts keeps several alternatives per position, each
// continued by guesses of its own (SpecInfer, Medusa, EAGLE), and the target checks every
// branch in ONE pass:
//
//        node 0 = the last accepted token (the root: fed again, as a linear round feeds it)
//        /            \     (a node's children: alternatives for the same position)
//    1 "the"         2 "a"          depth 1: the draft's two likeliest tokens after the root
//       |               |
//    3 "cat"         4 "dog"        depth 2, 3, …: each branch continued
//
// Nodes are listed parents first (index order is breadth-first here). Node i sits at depth
// depth(i) — its position is the root's + depth(i) — and sees, besides the text before the
// root, only its ancestors and itself: the ancestor mask. A root-to-node path is one draft
// sequence; siblings are other sequences and must stay invisible to each other.
#pragma once

#include <cstdint>
#include <vector>

namespace infer {

class TokenTree {
 public:
  explicit TokenTree(int32_t root_token) { add(root_token, -1); }

  // Adds a node with `token` under `parent` (an existing node, or −1 for the root only);
  // returns its index.
  int add(int32_t token, int parent);

  int size() const { return static_cast<int>(tokens_.size()); }
  int32_t token(int i) const { return tokens_[static_cast<std::size_t>(i)]; }
  int parent(int i) const { return parents_[static_cast<std::size_t>(i)]; }
  int depth(int i) const { return depths_[static_cast<std::size_t>(i)]; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int max_depth() const;
  std::vector<int> children(int i) const;  // in index order

  // root, …, parent(i), i: the draft sequence that ends at node i.
  std::vector<int> path_to(int i) const;
  // mask[i][j]: node i may attend to node j — j is i or one of its ancestors. (Every node also
  // attends to every position before the root; those are not nodes.)
  std::vector<std::vector<bool>> ancestor_mask() const;

 private:
  std::vector<int32_t> tokens_;
  std::vector<int> parents_;
  std::vector<int> depths_;
};

}  // namespace infer
