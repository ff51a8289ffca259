// Exercise 07 (growing the draft tree) — your answer goes here (see README.md).
#include <stdexcept>

#include "tree_verification.hpp"

namespace exercise {

GrownTree grow_tree(const Draft& draft, int budget) {
  // The candidates: (parent, token, path probability), at first the root's children, draft({}).
  // Until the tree holds `budget` nodes: which candidate has the largest path probability? It
  // joins the tree; what are its children, and their path probabilities?
  (void)draft; (void)budget;
  throw std::logic_error("exercise 07_tree_verification: grow_tree is not written yet");
}

}  // namespace exercise
