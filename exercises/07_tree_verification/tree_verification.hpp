// Exercise 07 — growing the draft tree (EAGLE-2, Sequoia): the shape that a node budget buys best.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace exercise {

// What the draft proposes after a path of tokens: its top candidates for the next position, most
// likely first, with the draft's probability of each (tokens[k] has probability probs[k]; the
// probabilities are in [0, 1] and sum to at most 1). An empty list: the draft proposes nothing more.
struct Candidates {
  std::vector<int32_t> tokens;
  std::vector<double> probs;
};

// The draft, as a function of the path from the root (the tokens after the last accepted one):
// draft({}) gives the root's children, draft({a, b}) the candidates after a then b.
using Draft = std::function<Candidates(const std::vector<int32_t>& path)>;

// A grown tree: node i is the token tokens[i] under parents[i] (a node with a smaller index, or
// −1 for a child of the root), listed parents first. path_prob[i] is the product of the draft's
// probabilities along the path from the root to node i, node i's own included.
struct GrownTree {
  std::vector<int> parents;
  std::vector<int32_t> tokens;
  std::vector<double> path_prob;
};

// The tree of at most `budget` nodes with the largest expected number of accepted tokens, under
// the course's model of acceptance: a node is accepted only if all its ancestors are, and the
// chance that its token is the target's choice is the draft's own probability of it. A node is
// then accepted with probability path_prob, and the expected accepted length of a tree is the sum
// of its nodes' path_prob (expected_accepted below).
//
// Built best-first: the candidates are at first the root's children; repeatedly the candidate with
// the largest path probability joins the tree (its path probability is its parent's times the
// draft's probability of its token), and its own children (draft(its path)) become candidates;
// stop at `budget` nodes, or earlier when no candidate is left. Nodes are listed in the order they
// joined. Ties on path probability go to the candidate that became one first (the root's children
// first, in the draft's order; a node's children, in the draft's order, when it joined).
// budget <= 0: an empty tree. Each call of the draft is a draft pass: ask it for the root's
// children and for each node's children once, and not for a node that joins a tree already full
// (at most `budget` calls in all).
GrownTree grow_tree(const Draft& draft, int budget);

// Σ path_prob: the expected number of draft tokens the target accepts from the tree.
inline double expected_accepted(const GrownTree& tree) {
  double sum = 0;
  for (double p : tree.path_prob) sum += p;
  return sum;
}

}  // namespace exercise
