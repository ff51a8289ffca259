// Grades exercise 05 (prefix reuse) on prompts built to show each rule: full blocks only, the
// last token always computed, hashes chained over the whole prefix.
#include <iostream>
#include <numeric>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "prefix_reuse.hpp"

namespace {

// n tokens first, first+1, …
std::vector<int32_t> run(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<int32_t> join(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("a repeated prompt reuses all its full blocks", "[exercise]") {
  const auto p = run(0, 17);  // 4 full blocks of 4 + 1 token
  const auto r = exercise::replay_prefix_cache({p, p}, 4);
  CHECK(r.positions == 34);
  CHECK(r.reused == 16);
  CHECK(r.indexed == 4);
}

TEST_CASE("the last token is always computed", "[exercise]") {
  const auto p = run(0, 16);  // exactly 4 full blocks: the 4th must be computed again
  const auto r = exercise::replay_prefix_cache({p, p}, 4);
  CHECK(r.reused == 12);
}

TEST_CASE("prompts that share their first blocks", "[exercise]") {
  const auto system = run(100, 8);
  const auto r = exercise::replay_prefix_cache({join(system, run(0, 6)), join(system, run(50, 6)), join(system, run(0, 6))}, 4);
  // Second: the 2 system blocks. Third: the same prompt as the first, all 3 full blocks.
  CHECK(r.reused == 8 + 12);
  CHECK(r.indexed == 3 + 1);  // first prompt's 3 blocks, the second's own third block
}

TEST_CASE("a block indexed after a hit is found after the same prefix", "[exercise]") {
  // The second prompt finds the first's 2 blocks and indexes its own third block, chained on the
  // hash of the second block it found; the third prompt, the same as the second, finds all 3.
  const auto r = exercise::replay_prefix_cache({run(0, 9), run(0, 13), run(0, 13)}, 4);
  CHECK(r.reused == 0 + 8 + 12);
  CHECK(r.indexed == 3);
}

TEST_CASE("equal blocks after different prefixes are different blocks", "[exercise]") {
  const auto tail = run(500, 8);
  const auto r = exercise::replay_prefix_cache({join(run(0, 4), tail), join(run(10, 4), tail)}, 4);
  CHECK(r.reused == 0);
  CHECK(r.indexed == 6);
}

TEST_CASE("a prompt shorter than a block is neither indexed nor found", "[exercise]") {
  const auto p = run(0, 3);
  const auto r = exercise::replay_prefix_cache({p, p}, 4);
  CHECK(r.reused == 0);
  CHECK(r.indexed == 0);
}

TEST_CASE("figure: a shared system prompt, and the block size", "[exercise][figure]") {
  // 16 requests: the same 200-token system prompt, then a 30-token question of their own.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back(join(run(0, 200), run(1000 + 100 * i, 30)));
  std::cout << "16 prompts = the same 200-token system prompt + 30 tokens of their own (3 680 positions)\n"
               "  block size   positions reused   of all   blocks indexed\n";
  for (int b : {1, 4, 16, 64, 256}) {
    const auto r = exercise::replay_prefix_cache(prompts, b);
    std::cout << fmt::format("  {:>10}   {:>16}   {:>5.1f}%   {:>14}\n", b, r.reused, 100.0 * static_cast<double>(r.reused) / static_cast<double>(r.positions),
                             r.indexed);
  }
}
