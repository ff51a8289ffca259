// Grades exercise 07 (tree verification): the mask on a hand-drawn tree, verification on hand
// cases, and — the point of it — that on random draft trees over a toy deterministic target the
// result is exactly what greedy decoding with the target alone produces next, found here by a
// different route (walking the greedy sequence down the tree). Links nothing of the course's library.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "catch_compat.hpp"

#include "tree_verification.hpp"

namespace {

using exercise::DraftTree;

// A toy target over a vocabulary of 4: its greedy next token is a fixed function of the whole
// sequence so far (a hash), so agreeing with it takes the right token at every position.
int32_t toy_next(const std::vector<int32_t>& seq) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : seq) h = (h ^ static_cast<uint64_t>(t + 7)) * 1099511628211ull;
  return static_cast<int32_t>((h >> 29) % 4);
}

// Node i's draft sequence: the tokens on the path from the root to i.
std::vector<int32_t> path(const DraftTree& tree, int i) {
  std::vector<int32_t> p;
  for (int j = i; j >= 0; j = tree.parents[static_cast<std::size_t>(j)]) p.insert(p.begin(), tree.tokens[static_cast<std::size_t>(j)]);
  return p;
}

std::vector<bool> row(std::initializer_list<int> visible, int n) {
  std::vector<bool> r(static_cast<std::size_t>(n), false);
  for (int j : visible) r[static_cast<std::size_t>(j)] = true;
  return r;
}

}  // namespace

TEST_CASE("the mask: each node sees itself and its ancestors, nothing else", "[exercise]") {
  //        root
  //       /    \
  //      0      1
  //     / \
  //    2   3
  //    |
  //    4
  const DraftTree tree{{-1, -1, 0, 0, 2}, {5, 6, 7, 8, 9}};
  const auto mask = exercise::tree_attention_mask(tree);
  REQUIRE(mask.size() == 5);
  CHECK(mask[0] == row({0}, 5));
  CHECK(mask[1] == row({1}, 5));
  CHECK(mask[2] == row({0, 2}, 5));
  CHECK(mask[3] == row({0, 3}, 5));  // not its sibling 2
  CHECK(mask[4] == row({0, 2, 4}, 5));
}

TEST_CASE("a chain is a plain draft: accepted up to the first wrong guess", "[exercise]") {
  const DraftTree chain{{-1, 0, 1, 2}, {3, 1, 4, 1}};
  // The target agrees with the first two guesses, then wants 2 instead of 4.
  const auto r = exercise::verify_tree(chain, 3, {1, 2, 0, 0});
  CHECK(r.accepted == std::vector<int32_t>{3, 1});
  CHECK(r.next == 2);
  // All four right: all accepted, and the token after the last one is free.
  const auto all = exercise::verify_tree(chain, 3, {1, 4, 1, 5});
  CHECK(all.accepted == std::vector<int32_t>{3, 1, 4, 1});
  CHECK(all.next == 5);
  // The first wrong: nothing accepted, the target's own token.
  const auto none = exercise::verify_tree(chain, 9, {1, 4, 1, 5});
  CHECK(none.accepted.empty());
  CHECK(none.next == 9);
}

TEST_CASE("the branch that agrees with the target wins, however deep the others", "[exercise]") {
  // Two branches: 0 → 2 → 4 (tokens 1, 2, 3) and 1 → 3 (tokens 7, 8). The target wants 7, then 8,
  // then 6: the second branch, fully accepted, then 6.
  const DraftTree tree{{-1, -1, 0, 1, 2}, {1, 7, 2, 8, 3}};
  const auto r = exercise::verify_tree(tree, 7, {2, 8, 3, 6, 0});
  CHECK(r.accepted == std::vector<int32_t>{7, 8});
  CHECK(r.next == 6);
}

TEST_CASE("a node whose parent was rejected is not accepted, even with the right token", "[exercise]") {
  // Node 1 (token 4) sits under node 0 (token 2); the target wants 9 first, so node 0 is wrong.
  // node_next[0] = 4 says what the target would say after 2 — irrelevant once 2 is rejected.
  const DraftTree tree{{-1, 0}, {2, 4}};
  const auto r = exercise::verify_tree(tree, 9, {4, 1});
  CHECK(r.accepted.empty());
  CHECK(r.next == 9);
}

TEST_CASE("random trees: the result is exactly greedy decoding's next tokens", "[exercise]") {
  std::mt19937 rng(46);
  for (int trial = 0; trial < 500; ++trial) {
    const std::vector<int32_t> prefix{static_cast<int32_t>(trial % 4), static_cast<int32_t>(trial / 4 % 4)};
    // A random tree of 1 … 15 nodes; half the guesses are the target's own choice after the
    // parent, so that deep accepted paths occur.
    const int n = 1 + static_cast<int>(rng() % 15);
    DraftTree tree;
    for (int i = 0; i < n; ++i) {
      const int parent = static_cast<int>(rng() % static_cast<unsigned>(i + 1)) - 1;  // −1 … i−1
      tree.parents.push_back(parent);
      std::vector<int32_t> before = prefix;
      if (parent >= 0) for (int32_t t : path(tree, parent)) before.push_back(t);
      tree.tokens.push_back(rng() % 2 ? toy_next(before) : static_cast<int32_t>(rng() % 4));
    }
    // What the one target pass gives: the argmax after the root and after every node's path.
    std::vector<int32_t> node_next;
    for (int i = 0; i < n; ++i) {
      std::vector<int32_t> seq = prefix;
      for (int32_t t : path(tree, i)) seq.push_back(t);
      node_next.push_back(toy_next(seq));
    }
    // Greedy decoding, walked down the tree: at each level the children holding the greedy token
    // (a tree may repeat a guess among siblings: every copy carries the same draft so far).
    std::vector<int32_t> want, seq = prefix;
    for (std::vector<int> at{-1};;) {
      const int32_t g = toy_next(seq);
      std::vector<int> children;
      for (int i = 0; i < n; ++i)
        if (std::find(at.begin(), at.end(), tree.parents[static_cast<std::size_t>(i)]) != at.end() &&
            tree.tokens[static_cast<std::size_t>(i)] == g)
          children.push_back(i);
      if (children.empty()) break;
      want.push_back(g), seq.push_back(g), at = children;
    }
    const auto r = exercise::verify_tree(tree, toy_next(prefix), node_next);
    INFO("trial " << trial << ": " << n << " nodes, " << want.size() << " tokens accepted by greedy decoding");
    REQUIRE(r.accepted == want);
    REQUIRE(r.next == toy_next(seq));
  }
}
