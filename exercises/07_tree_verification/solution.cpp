// Exercise 07 (growing the draft tree) — reference solution.
#include "tree_verification.hpp"

namespace exercise {

namespace {

// A node that could join the tree next: under `parent` (−1: the root), with the path probability
// it would have. Kept in the order the candidates appeared, which settles ties.
struct Candidate {
  int parent;
  int32_t token;
  double path_prob;
};

// The tokens from the root to node i, i's own last.
std::vector<int32_t> path_of(const GrownTree& tree, int i) {
  std::vector<int32_t> path;
  for (int j = i; j >= 0; j = tree.parents[static_cast<std::size_t>(j)]) path.push_back(tree.tokens[static_cast<std::size_t>(j)]);
  return {path.rbegin(), path.rend()};
}

// The draft's candidates after node `parent` (−1: the root) join the frontier, each with its path
// probability: the parent's times the draft's probability of its token.
void add_children(std::vector<Candidate>& frontier, const Draft& draft, const GrownTree& tree, int parent) {
  const Candidates next = draft(parent < 0 ? std::vector<int32_t>{} : path_of(tree, parent));
  const double above = parent < 0 ? 1.0 : tree.path_prob[static_cast<std::size_t>(parent)];
  for (std::size_t k = 0; k < next.tokens.size(); ++k) frontier.push_back({parent, next.tokens[k], above * next.probs[k]});
}

}  // namespace

GrownTree grow_tree(const Draft& draft, int budget) {
  GrownTree tree;
  if (budget <= 0) return tree;
  std::vector<Candidate> frontier;
  add_children(frontier, draft, tree, -1);
  while (static_cast<int>(tree.tokens.size()) < budget && !frontier.empty()) {
    // The likeliest path among the candidates; a strict > keeps the earliest on a tie. Path
    // probabilities only shrink going down, so the best candidate's parent is always in the tree,
    // and the N best paths of all are an ancestor-closed tree: best-first is optimal.
    std::size_t best = 0;
    for (std::size_t c = 1; c < frontier.size(); ++c)
      if (frontier[c].path_prob > frontier[best].path_prob) best = c;
    const Candidate chosen = frontier[best];
    frontier.erase(frontier.begin() + static_cast<std::ptrdiff_t>(best));
    tree.parents.push_back(chosen.parent);
    tree.tokens.push_back(chosen.token);
    tree.path_prob.push_back(chosen.path_prob);
    // Its children are candidates now — unless the tree is full, when asking the draft is wasted.
    if (static_cast<int>(tree.tokens.size()) < budget) add_children(frontier, draft, tree, static_cast<int>(tree.tokens.size()) - 1);
  }
  return tree;
}

}  // namespace exercise
