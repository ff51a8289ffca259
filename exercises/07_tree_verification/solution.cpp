// Exercise 07 (tree verification) — reference solution.
#include <algorithm>

#include "tree_verification.hpp"

namespace exercise {

std::vector<std::vector<bool>> tree_attention_mask(const DraftTree& tree) {
  const std::size_t n = tree.parents.size();
  std::vector<std::vector<bool>> mask(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i)
    // Up the tree from i: its own draft sequence, read backwards. Siblings and cousins are other
    // sequences and stay invisible, although they sit in the same pass.
    for (int j = static_cast<int>(i); j >= 0; j = tree.parents[static_cast<std::size_t>(j)]) mask[i][static_cast<std::size_t>(j)] = true;
  return mask;
}

TreeResult verify_tree(const DraftTree& tree, int32_t root_next, const std::vector<int32_t>& node_next) {
  const std::size_t n = tree.parents.size();
  // Parents come first, so one pass in index order settles every node: accepted when its parent
  // is (or it hangs from the root) and its token is what the target chose after that parent.
  std::vector<int> depth(n, 0);  // 0: not accepted; otherwise the length of its path
  int best = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const int p = tree.parents[i];
    const bool parent_ok = p < 0 || depth[static_cast<std::size_t>(p)] > 0;
    const int32_t expected = p < 0 ? root_next : node_next[static_cast<std::size_t>(p)];
    if (!parent_ok || tree.tokens[i] != expected) continue;
    depth[i] = p < 0 ? 1 : depth[static_cast<std::size_t>(p)] + 1;
    if (best < 0 || depth[i] > depth[static_cast<std::size_t>(best)]) best = static_cast<int>(i);  // strictly: ties keep the smaller index
  }
  TreeResult r;
  r.next = best < 0 ? root_next : node_next[static_cast<std::size_t>(best)];
  for (int j = best; j >= 0; j = tree.parents[static_cast<std::size_t>(j)]) r.accepted.push_back(tree.tokens[static_cast<std::size_t>(j)]);
  std::reverse(r.accepted.begin(), r.accepted.end());
  return r;
}

}  // namespace exercise
