// Chapter 05's foil for paging, without a model: the first-fit contiguous allocator that table 6
// sets against the block pool. Placement is first fit, freed ranges merge with free neighbours,
// and a request that no single range holds, though the free ranges together would, is measured
// as external fragmentation to the position.
#include "catch_compat.hpp"

#include <random>
#include <vector>

#include "first_fit_arena.hpp"

using infer::paging::FirstFitArena;

TEST_CASE("FirstFitArena: first fit takes the lowest free range that holds the request", "[unit][paged][fragmentation]") {
  FirstFitArena a(100);
  CHECK(a.allocate(20) == 0);
  CHECK(a.allocate(10) == 20);
  CHECK(a.allocate(10) == 30);
  CHECK(a.allocate(10) == 40);
  a.release(0);   // holes: [0, 20), 20 positions;
  a.release(30);  //        [30, 40), 10; and the untouched [50, 100), 50
  // 8 goes to the lowest hole that holds it: first fit (best fit would take [30, 40), worst fit [50, 100)).
  CHECK(a.allocate(8) == 0);
  // 15 does not fit what is left at [8, 20) (12) nor [30, 40) (10): it goes to [50, 100).
  CHECK(a.allocate(15) == 50);
  CHECK(a.free_positions() == 12 + 10 + 35);
  CHECK(a.largest_free() == 35);
  CHECK(a.free_ranges().size() == 3);
  a.check_invariants();

  CHECK_THROWS_AS(FirstFitArena(0), std::invalid_argument);
  CHECK_THROWS_AS(a.allocate(0), std::invalid_argument);
  CHECK_THROWS_AS(a.release(5), std::logic_error);  // inside a range, not its start
  a.release(20);
  CHECK_THROWS_AS(a.release(20), std::logic_error);  // double free
}

TEST_CASE("FirstFitArena: a freed range merges with free neighbours on both sides", "[unit][paged][fragmentation]") {
  FirstFitArena a(40);
  const auto r0 = a.allocate(10), r1 = a.allocate(10), r2 = a.allocate(10), r3 = a.allocate(10);
  REQUIRE((r0 && r1 && r2 && r3));
  CHECK(a.free_positions() == 0);
  a.release(*r0);
  a.release(*r2);
  CHECK(a.free_ranges().size() == 2);  // [0, 10) and [20, 30): not touching
  a.release(*r1);                       // touches both: one range [0, 30)
  REQUIRE(a.free_ranges().size() == 1);
  CHECK(a.free_ranges().begin()->first == 0);
  CHECK(a.free_ranges().begin()->second == 30);
  // Broken coalescing would leave three holes of 10 and refuse this.
  CHECK(a.allocate(30) == 0);
  a.release(0);
  a.release(*r3);  // merges with the range before it: the whole arena again
  REQUIRE(a.free_ranges().size() == 1);
  CHECK(a.largest_free() == 40);
  a.check_invariants();
}

TEST_CASE("FirstFitArena: enough free positions, none in one piece, measured exactly", "[unit][paged][fragmentation]") {
  // Five ranges of 20 fill the arena; freeing the 1st, 3rd and 5th leaves 60 positions free in
  // three separate holes of 20, with held ranges between them.
  FirstFitArena a(100);
  std::vector<int64_t> at;
  for (int i = 0; i < 5; ++i) at.push_back(*a.allocate(20));
  for (int i : {0, 2, 4}) a.release(at[i]);
  CHECK(a.free_positions() == 60);
  CHECK(a.largest_free() == 20);
  CHECK(a.free_ranges().size() == 3);
  // A request of 30: 60 ≥ 30 free, yet no hole holds it. All 60 free positions are unusable.
  CHECK_FALSE(a.allocate(30).has_value());
  CHECK(a.unusable_for(30) == 60);
  // A request of 20 fits (no fragmentation for it), and one of 61 is a plain shortage.
  CHECK(a.unusable_for(20) == 0);
  CHECK(a.unusable_for(61) == 0);
  CHECK_FALSE(a.allocate(61).has_value());
  // Freeing the range between the first two holes joins them with it: 60 in one piece, and 30 fits.
  a.release(at[1]);
  CHECK(a.free_ranges().size() == 2);
  CHECK(a.largest_free() == 60);
  CHECK(a.unusable_for(30) == 0);
  CHECK(a.allocate(30) == 0);
  a.check_invariants();
}

TEST_CASE("FirstFitArena: thousands of random allocations and frees keep the ranges tiling the arena", "[unit][paged][fragmentation]") {
  std::mt19937_64 rng(11);
  FirstFitArena a(1000);
  std::vector<std::pair<int64_t, int64_t>> held;  // offset, length
  for (int op = 0; op < 5000; ++op) {
    if (held.empty() || rng() % 2 == 0) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % 80);
      const int64_t largest = a.largest_free(), free = a.free_positions();
      const auto at = a.allocate(n);
      REQUIRE(at.has_value() == (largest >= n));
      if (at) {
        held.emplace_back(*at, n);
      } else {
        REQUIRE(a.unusable_for(n) == (free >= n ? free : 0));
      }
    } else {
      const std::size_t i = rng() % held.size();
      a.release(held[i].first);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    }
    a.check_invariants();  // also: no two free ranges touch, so every free was coalesced
  }
  for (const auto& [offset, length] : held) a.release(offset);
  CHECK(a.free_ranges().size() == 1);
  CHECK(a.free_positions() == 1000);
}
