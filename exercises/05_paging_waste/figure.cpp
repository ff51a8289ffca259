// The figure of exercise 05 (the block size): chapter 04's workload with your functions. Not
// graded; apart from test.cpp because it links chapters 03 and 04.
//   cmake --build build --target exercise_05_paging_waste_figure_student
//   ./build/exercises/exercise_05_paging_waste_figure_student
#include <iostream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "grouped_kv_cache.hpp"  // chapter 03: kv_bytes_per_token
#include "paging_waste.hpp"
#include "workload.hpp"          // chapter 04: draw_output_lengths, kWorkloadSeed

TEST_CASE("figure: chapter 04's workload, overhead by block size", "[exercise][figure]") {
  // 64 answers (median 18, longest 231 tokens) after 12-token prompts.
  const auto outputs = infer::draw_output_lengths(64, infer::kWorkloadSeed, 18, 1.05, 256);
  std::vector<int> lengths;
  for (int n : outputs) lengths.push_back(12 + n);
  const int64_t bpp = infer::kv_bytes_per_token(30, 3, 64, 4);  // fp32 K and V of SmolLM2-135M
  const std::vector<int> sizes{1, 2, 4, 8, 16, 32, 64};
  const auto written = exercise::block_cost(lengths, 1, bpp, 0).written_bytes;
  std::cout << fmt::format("64 sequences of chapter 04's workload (12-token prompts), fp32 K/V of SmolLM2-135M ({} B per position),\n"
                           "{:.1f} MiB written; overhead = unwritten tails + bookkeeping, KiB\n",
                           bpp, static_cast<double>(written) / (1 << 20));
  std::cout << "  bookkeeping per block";
  for (int b : sizes) std::cout << fmt::format("  {:>8}", "B = " + std::to_string(b));
  std::cout << "  best\n";
  for (int64_t per_block : {int64_t{4}, int64_t{256}, int64_t{4096}, int64_t{16384}, bpp, 4 * bpp}) {
    std::cout << fmt::format("  {:>19} B", per_block);
    for (int b : sizes)
      std::cout << fmt::format("  {:>8.0f}", static_cast<double>(exercise::block_cost(lengths, b, bpp, per_block).overhead_bytes()) / 1024.0);
    std::cout << fmt::format("  {:>4}\n", exercise::best_block_size(lengths, sizes, bpp, per_block));
  }
}
