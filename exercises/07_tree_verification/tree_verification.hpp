// Exercise 07 — verifying a tree of drafts in one target pass (SpecInfer, Medusa, EAGLE).
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

// A draft tree: node i is a guessed token tokens[i] whose parent is parents[i], another node with
// a smaller index, or −1 for a node that directly follows the last accepted token (the root, which
// is not a node). Nodes are listed parents first. Several children of one parent are alternative
// guesses for the same position; a path from the root is one draft sequence.
struct DraftTree {
  std::vector<int> parents;
  std::vector<int32_t> tokens;
};

// The tree attention mask of one target pass over all nodes at once: mask[i][j] is true when node
// i may attend to node j, that is, when j is i itself or one of its ancestors — exactly the
// tokens that precede node i in its own draft sequence (the prompt and accepted tokens before the
// root are visible to every node and are not part of the mask).
std::vector<std::vector<bool>> tree_attention_mask(const DraftTree& tree);

// What greedy verification decided: the accepted tokens, in order (a root-to-node path of the
// tree), then the target's own next token after them.
struct TreeResult {
  std::vector<int32_t> accepted;
  int32_t next = 0;
};

// Greedy verification. root_next is the target's argmax after the last accepted token; node_next[i]
// is its argmax after node i's path (what the one pass over the tree, with the mask above, gives
// at node i). A child is accepted when its token is the target's argmax after its parent (root_next
// for a root child); accept the LONGEST path of accepted nodes from the root (on equal length, the
// path whose last node has the smaller index), then `next` is the argmax after its last node
// (root_next when nothing is accepted). The result is what greedy decoding with the target alone
// would produce next, a whole path at a time.
TreeResult verify_tree(const DraftTree& tree, int32_t root_next, const std::vector<int32_t>& node_next);

}  // namespace exercise
