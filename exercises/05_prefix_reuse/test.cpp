// Grades exercise 05 (prefix reuse under a budget) on prompts built to show each rule, counted by
// hand, and on seeded random prompts against a reference written here another way: the cache as a
// sorted set of token prefixes (std::map), where a prefix is a leaf when the next prefix in the
// set does not extend it. Links nothing of the course's library (chapter 05's PrefixCache shares
// whole blocks and evicts through its block pool).
#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "prefix_reuse.hpp"

using exercise::PrefixReuse;
using exercise::replay_prefix_cache;

namespace {

constexpr int64_t kUnlimited = int64_t{1} << 40;

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

PrefixReuse reference(const std::vector<std::vector<int32_t>>& prompts, int64_t budget) {
  std::map<std::vector<int32_t>, int64_t> cache;  // every cached prefix → when it was last used
  PrefixReuse out;
  int64_t now = 0;
  for (const auto& prompt : prompts) {
    ++now;
    const auto P = std::ssize(prompt);
    out.positions += P;
    const auto prefix = [&](int64_t n) { return std::vector<int32_t>(prompt.begin(), prompt.begin() + n); };
    int64_t m = 0;
    while (m < P - 1 && cache.count(prefix(m + 1))) ++m;
    out.reused += m;
    for (int64_t n = 1; n <= P; ++n) cache[prefix(n)] = now;
    while (std::ssize(cache) > budget) {
      auto victim = cache.end();
      for (auto it = cache.begin(); it != cache.end(); ++it) {
        const auto next = std::next(it);
        const bool extended = next != cache.end() && next->first.size() > it->first.size() &&
                              std::equal(it->first.begin(), it->first.end(), next->first.begin());
        if (!extended && (victim == cache.end() || it->second < victim->second)) victim = it;
      }
      cache.erase(victim);
    }
  }
  out.cached = std::ssize(cache);
  return out;
}

}  // namespace

TEST_CASE("a repeated prompt reuses every position but its last", "[exercise]") {
  const auto p = run(0, 17);
  const auto r = replay_prefix_cache({p, p}, kUnlimited);
  CHECK(r.positions == 34);
  CHECK(r.reused == 16);
  CHECK(r.cached == 17);
}

TEST_CASE("sharing is by position, not by block", "[exercise]") {
  // A 10-token system prompt: all 10 positions are shared (blocks of 4 would share 8).
  const auto system = run(100, 10);
  const auto r = replay_prefix_cache({join(system, run(0, 5)), join(system, run(50, 5))}, kUnlimited);
  CHECK(r.reused == 10);
  CHECK(r.cached == 20);
}

TEST_CASE("a prompt's last position is cached too, and a prefix of a cached prompt adds nothing", "[exercise]") {
  // The second prompt extends the first by one token: all 10 of the first's positions are found.
  // The third is a prefix of the first: 4 of its 5 positions are found, and nothing is added.
  const auto r = replay_prefix_cache({run(0, 10), run(0, 11), run(0, 5)}, kUnlimited);
  CHECK(r.reused == 10 + 4);
  CHECK(r.cached == 11);
}

TEST_CASE("a hit is a use: the least RECENTLY used goes first, not the oldest", "[exercise]") {
  // Three 4-token prompts with nothing in common, room for two. A, B, A, C: C's insertion evicts
  // B (last used at time 2), not A (inserted at time 1, used again at time 3); A then hits again.
  const auto A = run(0, 4), B = run(10, 4), C = run(20, 4);
  const auto r = replay_prefix_cache({A, B, A, C, A}, 8);
  CHECK(r.reused == 3 + 3);
  CHECK(r.cached == 8);
}

TEST_CASE("prompts in turn, one more than the budget holds: LRU keeps none of them", "[exercise]") {
  const auto A = run(0, 4), B = run(10, 4), C = run(20, 4);
  // Each prompt is evicted just before its turn comes back.
  CHECK(replay_prefix_cache({A, B, C, A, B, C}, 8).reused == 0);
  // With room for all three, the second round hits all three.
  CHECK(replay_prefix_cache({A, B, C, A, B, C}, 12).reused == 9);
}

TEST_CASE("only leaves are evicted: a prompt longer than the budget keeps its start", "[exercise]") {
  // 6 positions, room for 4: the last two go (the leaf, then its parent), so the same prompt
  // again finds its first 4 — not 0, as it would if the first positions had been dropped.
  const auto p = run(0, 6);
  const auto r = replay_prefix_cache({p, p}, 4);
  CHECK(r.reused == 4);
  CHECK(r.cached == 4);
  // Two prompts that share 3 positions, room for 5: the shared positions are inner nodes while
  // both tails are cached, and the older tail goes first.
  const auto s = replay_prefix_cache({join(run(0, 3), run(10, 2)), join(run(0, 3), run(20, 2)), join(run(0, 3), run(20, 2))}, 5);
  CHECK(s.reused == 3 + 4);
  CHECK(s.cached == 5);
}

TEST_CASE("a budget of 0 caches nothing", "[exercise]") {
  const auto p = run(0, 8);
  const auto r = replay_prefix_cache({p, p, p}, 0);
  CHECK(r.positions == 24);
  CHECK(r.reused == 0);
  CHECK(r.cached == 0);
}

TEST_CASE("seeded random prompts against the reference", "[exercise]") {
  // Prompts from 4 system prompts (3 … 12 tokens) and short tails from an alphabet of 3 tokens,
  // so that tails share prefixes too.
  std::mt19937 rng(46);
  std::vector<std::vector<int32_t>> systems;
  for (int s = 0; s < 4; ++s) systems.push_back(run(100 * (s + 1), 3 + 3 * s));
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 60; ++i) {
    auto p = systems[rng() % 4];
    const int tail = static_cast<int>(rng() % 7);
    for (int t = 0; t < tail; ++t) p.push_back(static_cast<int32_t>(rng() % 3));
    prompts.push_back(p);
  }
  for (int64_t budget : {1, 5, 17, 40, 100, 10000}) {
    for (std::size_t n = 10; n <= prompts.size(); n += 10) {
      const std::vector<std::vector<int32_t>> first(prompts.begin(), prompts.begin() + static_cast<std::ptrdiff_t>(n));
      const PrefixReuse got = replay_prefix_cache(first, budget), want = reference(first, budget);
      INFO("budget " << budget << ", the first " << n << " prompts");
      CHECK(got.positions == want.positions);
      CHECK(got.reused == want.reused);
      CHECK(got.cached == want.cached);
    }
  }
}

TEST_CASE("a negative budget is refused", "[exercise]") {
  CHECK_THROWS_AS(replay_prefix_cache({run(0, 3)}, -1), std::invalid_argument);
}

TEST_CASE("figure: one system prompt or four in turn, by budget", "[exercise][figure]") {
  // 32 requests of a 200-token system prompt and 30 tokens of their own (7 360 positions): every
  // request the same system prompt, or four tenants' system prompts in turn.
  std::vector<std::vector<int32_t>> one, four;
  for (int i = 0; i < 32; ++i) {
    const auto own = run(100000 + 100 * i, 30);
    one.push_back(join(run(0, 200), own));
    four.push_back(join(run(1000 * (i % 4), 200), own));
  }
  std::cout << "32 prompts = a 200-token system prompt + 30 tokens of their own (7 360 positions)\n"
               "  budget (positions)   one system prompt: reused   four in turn: reused\n";
  for (int64_t budget : {0, 200, 690, 760, 800, 860, 900, 7360}) {
    const auto a = replay_prefix_cache(one, budget), b = replay_prefix_cache(four, budget);
    std::cout << fmt::format("  {:>18}   {:>17} {:>5.1f}%   {:>12} {:>5.1f}%\n", budget, a.reused,
                             100.0 * static_cast<double>(a.reused) / static_cast<double>(a.positions), b.reused,
                             100.0 * static_cast<double>(b.reused) / static_cast<double>(b.positions));
  }
}
