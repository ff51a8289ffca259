// Grades exercise 07 (growing the draft tree): hand-checked trees where the best shape is a chain,
// a star, or neither (so no fixed shape is right for every draft), the tie order, a budget the
// draft cannot fill, and — the point of it — that on random drafts the grown tree's expected
// accepted length is the maximum over EVERY ancestor-closed tree of the same size, found here by
// enumerating them all. Links nothing of the course's library (whose chapter 07 builds fixed shapes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "catch_compat.hpp"

#include "tree_verification.hpp"

namespace {

using exercise::Candidates;
using exercise::GrownTree;

// The same candidates after every path: tokens 1, 2, 3, … with the given probabilities.
exercise::Draft same_everywhere(std::vector<double> probs) {
  return [probs](const std::vector<int32_t>&) {
    Candidates c;
    for (std::size_t k = 0; k < probs.size(); ++k) c.tokens.push_back(static_cast<int32_t>(k + 1));
    c.probs = probs;
    return c;
  };
}

// Node i's path of tokens from the root.
std::vector<int32_t> path(const GrownTree& tree, int i) {
  std::vector<int32_t> p;
  for (int j = i; j >= 0; j = tree.parents[static_cast<std::size_t>(j)]) p.insert(p.begin(), tree.tokens[static_cast<std::size_t>(j)]);
  return p;
}

// The tree is well formed for this draft: parents first, each node one of the draft's candidates
// after its parent's path (and no candidate twice), with the path probability that implies.
void check_tree(const GrownTree& tree, const exercise::Draft& draft) {
  REQUIRE(tree.parents.size() == tree.tokens.size());
  REQUIRE(tree.path_prob.size() == tree.tokens.size());
  for (std::size_t i = 0; i < tree.tokens.size(); ++i) {
    const int parent = tree.parents[i];
    REQUIRE(parent >= -1);
    REQUIRE(parent < static_cast<int>(i));
    const Candidates after = draft(parent < 0 ? std::vector<int32_t>{} : path(tree, parent));
    const auto at = std::find(after.tokens.begin(), after.tokens.end(), tree.tokens[i]);
    REQUIRE(at != after.tokens.end());
    const double own = after.probs[static_cast<std::size_t>(at - after.tokens.begin())];
    const double above = parent < 0 ? 1.0 : tree.path_prob[static_cast<std::size_t>(parent)];
    CHECK(std::abs(tree.path_prob[i] - above * own) < 1e-12);
    for (std::size_t j = 0; j < i; ++j) CHECK_FALSE((tree.parents[j] == parent && tree.tokens[j] == tree.tokens[i]));
  }
}

}  // namespace

TEST_CASE("a confident draft: the best 4 nodes are a chain", "[exercise]") {
  // After every path: token 1 at 0.9. A chain 0.9 + 0.81 + 0.729 + 0.6561 = 3.0951; the first
  // level's three alternatives, then one more, would give 0.9 + 0.06 + 0.04 + 0.81 = 1.81.
  const auto draft = same_everywhere({0.9, 0.06, 0.04});
  const GrownTree tree = exercise::grow_tree(draft, 4);
  check_tree(tree, draft);
  CHECK(tree.parents == std::vector<int>{-1, 0, 1, 2});
  CHECK(tree.tokens == std::vector<int32_t>{1, 1, 1, 1});
  CHECK(std::abs(exercise::expected_accepted(tree) - 3.0951) < 1e-12);
}

TEST_CASE("a flat draft: the best 4 nodes are four alternatives for one position", "[exercise]") {
  // 0.3 + 0.25 + 0.2 + 0.15 = 0.9; any second-level node is worth at most 0.3 × 0.3 = 0.09.
  const auto draft = same_everywhere({0.3, 0.25, 0.2, 0.15, 0.1});
  const GrownTree tree = exercise::grow_tree(draft, 4);
  check_tree(tree, draft);
  CHECK(tree.parents == std::vector<int>{-1, -1, -1, -1});
  CHECK(tree.tokens == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(std::abs(exercise::expected_accepted(tree) - 0.9) < 1e-12);
}

TEST_CASE("in between: two alternatives at the first position, then a chain under the likelier", "[exercise]") {
  // Root: 1 at 0.6, 2 at 0.35, 3 at 0.05; after any node: 1 at 0.8, 2 at 0.15, 3 at 0.05.
  // Best-first takes 0.6 (1), 0.48 (1 1), 0.384 (1 1 1), 0.35 (2), 0.3072 (1 1 1 1): 2.1212.
  // A chain of 5 gives 2.01696, breadth-first (0.6, 0.35, 0.05, 0.48, 0.09) 1.57.
  const exercise::Draft draft = [](const std::vector<int32_t>& p) {
    return p.empty() ? Candidates{{1, 2, 3}, {0.6, 0.35, 0.05}} : Candidates{{1, 2, 3}, {0.8, 0.15, 0.05}};
  };
  const GrownTree tree = exercise::grow_tree(draft, 5);
  check_tree(tree, draft);
  CHECK(tree.parents == std::vector<int>{-1, 0, 1, -1, 2});
  CHECK(tree.tokens == std::vector<int32_t>{1, 1, 1, 2, 1});
  CHECK(std::abs(exercise::expected_accepted(tree) - 2.1212) < 1e-12);
}

TEST_CASE("the path's probability decides, not the node's own", "[exercise]") {
  // Root: 1 at 0.7, 2 at 0.3. After 1: 1 at 0.5 (path 0.35); after 2: 1 at 0.95 (path 0.285).
  // The third node is 1 1 (0.35), although 2 1's own 0.95 is larger.
  const exercise::Draft draft = [](const std::vector<int32_t>& p) {
    if (p.empty()) return Candidates{{1, 2}, {0.7, 0.3}};
    if (p[0] == 2) return Candidates{{1, 2}, {0.95, 0.05}};
    return Candidates{{1, 2}, {0.5, 0.4}};
  };
  const GrownTree tree = exercise::grow_tree(draft, 4);
  check_tree(tree, draft);
  // 0.7, 0.35 (1 1), 0.3 (2), 0.285 (2 1): the last beats 1 2's 0.28 and 1 1 1's 0.175.
  CHECK(tree.parents == std::vector<int>{-1, 0, -1, 2});
  CHECK(tree.tokens == std::vector<int32_t>{1, 1, 2, 1});
  CHECK(std::abs(exercise::expected_accepted(tree) - 1.635) < 1e-12);
}

TEST_CASE("ties go to the candidate that appeared first", "[exercise]") {
  // 0.5 and 0.5 at every position: 1, then 2 (0.5 each), then 1 1 (0.25, a candidate before 2 1).
  const auto draft = same_everywhere({0.5, 0.5});
  const GrownTree tree = exercise::grow_tree(draft, 4);
  check_tree(tree, draft);
  CHECK(tree.parents == std::vector<int>{-1, -1, 0, 0});
  CHECK(tree.tokens == std::vector<int32_t>{1, 2, 1, 2});
}

TEST_CASE("budgets of 0 and 1, and a budget larger than all the draft proposes", "[exercise]") {
  const auto flat = same_everywhere({0.3, 0.25, 0.2});
  CHECK(exercise::grow_tree(flat, 0).tokens.empty());
  CHECK(exercise::grow_tree(flat, -3).tokens.empty());
  const GrownTree one = exercise::grow_tree(flat, 1);
  CHECK(one.parents == std::vector<int>{-1});
  CHECK(one.tokens == std::vector<int32_t>{1});
  // Two candidates after paths of up to 2 tokens, none after: 2 + 4 = 6 nodes, whatever the budget.
  const exercise::Draft shallow = [](const std::vector<int32_t>& p) {
    return p.size() >= 2 ? Candidates{} : Candidates{{7, 8}, {0.6, 0.4}};
  };
  const GrownTree all = exercise::grow_tree(shallow, 10);
  check_tree(all, shallow);
  CHECK(all.tokens.size() == 6);
  CHECK(std::abs(exercise::expected_accepted(all) - 2.0) < 1e-12);
}

TEST_CASE("the draft is asked once per path, and not for a node that fills the tree", "[exercise]") {
  std::map<std::vector<int32_t>, int> asked;
  const auto inner = same_everywhere({0.5, 0.3, 0.2});
  const exercise::Draft counting = [&](const std::vector<int32_t>& p) {
    ++asked[p];
    return inner(p);
  };
  const int budget = 6;
  const GrownTree tree = exercise::grow_tree(counting, budget);
  REQUIRE(tree.tokens.size() == static_cast<std::size_t>(budget));
  int calls = 0;
  for (const auto& [p, n] : asked) {
    CHECK(n == 1);
    calls += n;
  }
  CHECK(calls <= budget);
}

TEST_CASE("random drafts: the grown tree is worth the most of every tree of its size", "[exercise]") {
  // Up to 3 candidates after every path of up to 3 tokens (depth 4, 120 possible nodes), with
  // random probabilities that are a function of the path. For each budget 1 … 8, every
  // ancestor-closed set of that many possible nodes is enumerated (a node joins only after its
  // parent) and the best sum of path probabilities is compared with the grown tree's.
  std::mt19937 rng(20261207);
  for (int trial = 0; trial < 40; ++trial) {
    const auto seed = static_cast<uint32_t>(rng());
    const exercise::Draft draft = [seed](const std::vector<int32_t>& p) {
      if (p.size() >= 4) return Candidates{};
      std::seed_seq seq(p.begin(), p.end());  // a function of the path …
      std::vector<uint32_t> words(1);
      seq.generate(words.begin(), words.end());
      std::mt19937 g(words[0] ^ seed);  // … and of the trial
      std::uniform_real_distribution<double> u(0.0, 1.0);
      const int k = 1 + static_cast<int>(g() % 3);
      std::vector<double> w(static_cast<std::size_t>(k));
      double total = 0.15 * u(g);  // the draft's mass beyond its top k
      for (double& x : w) total += (x = std::pow(u(g), 3.0));
      for (double& x : w) x /= total;
      std::sort(w.begin(), w.end(), std::greater<>());
      Candidates c;
      for (int j = 0; j < k; ++j) c.tokens.push_back(static_cast<int32_t>(10 + 3 * j + static_cast<int>(g() % 3)));
      c.probs = w;
      return c;
    };

    // Every possible node: its parent, its path, its path probability (parents first).
    std::vector<int> parent;
    std::vector<double> value;
    std::vector<std::vector<int>> children;
    std::vector<std::vector<int32_t>> paths;
    std::vector<int> roots;
    auto expand = [&](auto&& self, int at, std::vector<int32_t> p, double pp) -> void {
      const Candidates c = draft(p);
      p.push_back(0);  // the slot of this depth's candidate
      for (std::size_t k = 0; k < c.tokens.size(); ++k) {
        const int id = static_cast<int>(value.size());
        parent.push_back(at);
        value.push_back(pp * c.probs[k]);
        children.emplace_back();
        p.back() = c.tokens[k];
        paths.push_back(p);
        (at < 0 ? roots : children[static_cast<std::size_t>(at)]).push_back(id);
        self(self, id, p, value.back());
      }
    };
    expand(expand, -1, {}, 1.0);

    // Enumerate ancestor-closed sets: walk the frontier in order, each candidate taken (its
    // children join the frontier) or skipped for good; each set is reached exactly once.
    const int possible = static_cast<int>(value.size());
    for (int budget = 1; budget <= 8; ++budget) {
      const int size_wanted = std::min(budget, possible);
      double best = 0;
      auto walk = [&](auto&& self, std::vector<int> frontier, std::size_t from, int size, double sum) -> void {
        if (size == size_wanted) { best = std::max(best, sum); return; }
        for (std::size_t f = from; f < frontier.size(); ++f) {
          std::vector<int> next = frontier;
          const int id = frontier[f];
          for (int ch : children[static_cast<std::size_t>(id)]) next.push_back(ch);
          self(self, next, f + 1, size + 1, sum + value[static_cast<std::size_t>(id)]);
        }
      };
      walk(walk, roots, 0, 0, 0.0);

      const GrownTree tree = exercise::grow_tree(draft, budget);
      check_tree(tree, draft);
      REQUIRE(tree.tokens.size() == static_cast<std::size_t>(size_wanted));
      INFO("trial " << trial << ", budget " << budget << ": best " << best << ", grown " << exercise::expected_accepted(tree));
      CHECK(std::abs(exercise::expected_accepted(tree) - best) < 1e-12);
    }
  }
}
