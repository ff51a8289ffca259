// Exercise 07 (tree verification) — your answer goes here (see README.md).
#include <stdexcept>

#include "tree_verification.hpp"

namespace exercise {

std::vector<std::vector<bool>> tree_attention_mask(const DraftTree& tree) {
  // Node i sees itself and, following parents[] up to −1, its ancestors.
  (void)tree;
  throw std::logic_error("exercise 07_tree_verification: tree_attention_mask is not written yet");
}

TreeResult verify_tree(const DraftTree& tree, int32_t root_next, const std::vector<int32_t>& node_next) {
  // Which nodes are accepted (their token is the target's choice after their parent, and the
  // parent itself is accepted)? Which accepted node is deepest? Its path, then its next token.
  (void)tree; (void)root_next; (void)node_next;
  throw std::logic_error("exercise 07_tree_verification: verify_tree is not written yet");
}

}  // namespace exercise
