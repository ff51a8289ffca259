// Grades exercise 05 (the block size) on hand-counted workloads, and on seeded random ones
// against a count made here position by position (a sequence takes a new block whenever it
// writes the first position of one), a different route from ⌈n / B⌉. figure.cpp prints chapter
// 04's workload.
#include <random>
#include <vector>

#include "catch_compat.hpp"

#include "paging_waste.hpp"

using exercise::best_block_size;
using exercise::block_cost;

namespace {

// Overhead in bytes, position by position.
int64_t counted_overhead(const std::vector<int>& lengths, int block_size, int64_t bytes_per_position, int64_t per_block_bytes) {
  int64_t overhead = 0;
  for (int n : lengths) {
    int64_t free_rows = 0;  // unwritten positions in the sequence's last block
    for (int p = 0; p < n; ++p) {
      if (free_rows == 0) {  // a new block: its rows, and its bookkeeping
        free_rows = block_size;
        overhead += per_block_bytes;
      }
      --free_rows;
    }
    overhead += free_rows * bytes_per_position;
  }
  return overhead;
}

}  // namespace

TEST_CASE("a partly filled last block is held whole", "[exercise]") {
  const std::vector<int> lengths{17, 20, 31};
  const auto c = block_cost(lengths, 16, 1, 0);
  CHECK(c.written_bytes == 68);
  CHECK(c.reserved_bytes == 32 + 32 + 32);
  CHECK(c.table_bytes == 0);
  CHECK(c.overhead_bytes() == 28);
}

TEST_CASE("a length that fills its blocks wastes nothing; an empty sequence holds no block", "[exercise]") {
  const std::vector<int> lengths{16, 32, 0};
  const auto c = block_cost(lengths, 16, 2, 8);
  CHECK(c.written_bytes == 96);
  CHECK(c.reserved_bytes == 96);
  CHECK(c.table_bytes == 3 * 8);  // 1 + 2 + 0 blocks
  CHECK(block_cost(std::vector<int>{3, 7, 100}, 1, 5, 0).overhead_bytes() == 0);
}

TEST_CASE("K/V bytes per position, bookkeeping per block, each sequence its own blocks", "[exercise]") {
  // 5, 13 and 20 positions of 10 bytes in blocks of 8: 1 + 2 + 3 blocks (not ⌈38 / 8⌉ = 5, as if
  // the sequences could share a last block), 480 bytes reserved for 380 written, 6 × 40 of tables.
  const std::vector<int> lengths{5, 13, 20};
  const auto c = block_cost(lengths, 8, 10, 40);
  CHECK(c.written_bytes == 380);
  CHECK(c.reserved_bytes == 480);
  CHECK(c.table_bytes == 240);
  CHECK(c.overhead_bytes() == 340);
}

TEST_CASE("the block size that costs the workload least", "[exercise]") {
  // Overheads of the same workload, waste + tables: B = 1: 0 + 1520, 2: 20 + 800, 4: 60 + 440,
  // 8: 100 + 240, 16: 260 + 160, 32: 580 + 120. Smaller blocks waste less, larger ones need fewer.
  const std::vector<int> lengths{5, 13, 20}, candidates{1, 2, 4, 8, 16, 32};
  CHECK(best_block_size(lengths, candidates, 10, 40) == 8);
  // Bookkeeping for free: the smallest block wins; bookkeeping dear: larger ones.
  CHECK(best_block_size(lengths, candidates, 10, 0) == 1);
  CHECK(best_block_size(lengths, candidates, 10, 400) == 32);
}

TEST_CASE("equal overheads go to the larger block", "[exercise]") {
  // 2 and 7 positions of 1 byte, 4 bytes a block: B = 4 costs 3 + 12, B = 8 costs 7 + 8.
  const std::vector<int> lengths{2, 7};
  CHECK(block_cost(lengths, 4, 1, 4).overhead_bytes() == 15);
  CHECK(block_cost(lengths, 8, 1, 4).overhead_bytes() == 15);
  CHECK(best_block_size(lengths, std::vector<int>{1, 2, 4, 8}, 1, 4) == 8);
  CHECK(best_block_size(lengths, std::vector<int>{8, 4, 2, 1}, 1, 4) == 8);
}

TEST_CASE("seeded random workloads against a position-by-position count", "[exercise]") {
  std::mt19937 rng(5);
  const std::vector<int> candidates{1, 2, 3, 4, 8, 16, 32, 64};
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<int> lengths(1 + rng() % 50);
    for (int& n : lengths) n = static_cast<int>(rng() % 300);
    const int64_t bpp = 1 + static_cast<int64_t>(rng() % 64), pbb = std::vector<int64_t>{0, 4, 100, 1000, 5000}[trial % 5];
    int want = 0;
    int64_t least = 0;
    for (int b : candidates) {
      const int64_t got = block_cost(lengths, b, bpp, pbb).overhead_bytes(), o = counted_overhead(lengths, b, bpp, pbb);
      INFO("trial " << trial << ", B = " << b << ", " << bpp << " bytes per position, " << pbb << " per block");
      CHECK(got == o);
      if (want == 0 || o <= least) {  // ascending candidates: a tie moves to the larger one
        want = b;
        least = o;
      }
    }
    const int best = best_block_size(lengths, candidates, bpp, pbb);
    INFO("trial " << trial);
    CHECK(best == want);
  }
}

TEST_CASE("impossible inputs are refused", "[exercise]") {
  const std::vector<int> ok{3}, negative{-1}, none{};
  CHECK_THROWS_AS(block_cost(ok, 0, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(block_cost(ok, 16, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(block_cost(ok, 16, 1, -1), std::invalid_argument);
  CHECK_THROWS_AS(block_cost(negative, 16, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(best_block_size(ok, none, 1, 0), std::invalid_argument);
}
