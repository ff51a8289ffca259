// Exercise 05 (prefix reuse under a budget) — reference solution.
#include <limits>
#include <map>
#include <stdexcept>

#include "prefix_reuse.hpp"

namespace exercise {

namespace {

struct Node {
  std::size_t parent = 0;                   // the root (node 0) is the empty prefix
  int32_t token = 0;                        // the position's token
  std::map<int32_t, std::size_t> children;  // by the next token
  int64_t used = 0;                         // when it was last matched or inserted
  bool cached = true;
};

}  // namespace

PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int64_t budget) {
  if (budget < 0) throw std::invalid_argument("replay_prefix_cache: a negative budget");
  std::vector<Node> tree(1);  // tree[0], the root, holds no position
  PrefixReuse out;
  int64_t now = 0;
  for (const std::vector<int32_t>& prompt : prompts) {
    ++now;
    const std::size_t length = prompt.size();
    out.positions += static_cast<int64_t>(length);
    // Match: down the tree while the tokens agree, leaving the last token to compute.
    std::size_t node = 0, depth = 0;
    for (; depth + 1 < length; ++depth) {
      const auto child = tree[node].children.find(prompt[depth]);
      if (child == tree[node].children.end()) break;
      node = child->second;
      tree[node].used = now;  // a hit is a use: least recently used, not first in, first out
    }
    out.reused += static_cast<int64_t>(depth);
    // Insert: the rest of the prompt, its last position too (its K/V has just been computed).
    // A position may be cached already (a prompt that is a prefix of a cached one).
    for (; depth < length; ++depth) {
      const auto child = tree[node].children.find(prompt[depth]);
      std::size_t next = 0;
      if (child != tree[node].children.end()) {
        next = child->second;
      } else {
        next = tree.size();
        tree.push_back({node, prompt[depth], {}, now, true});
        tree[node].children.emplace(prompt[depth], next);
        ++out.cached;
      }
      node = next;
      tree[node].used = now;
    }
    // Evict the least recently used leaf until the budget holds; its parent may become a leaf.
    while (out.cached > budget) {
      std::size_t victim = 0;
      int64_t oldest = std::numeric_limits<int64_t>::max();
      for (std::size_t n = 1; n < tree.size(); ++n)
        if (tree[n].cached && tree[n].children.empty() && tree[n].used < oldest) {
          oldest = tree[n].used;
          victim = n;
        }
      tree[victim].cached = false;
      tree[tree[victim].parent].children.erase(tree[victim].token);
      --out.cached;
    }
  }
  return out;
}

}  // namespace exercise
