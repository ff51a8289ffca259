// The figure of exercise 05 (paging waste): chapter 04's workload, reserved and wasted, with your
// functions. Not graded; apart from test.cpp because it links chapters 03 and 04.
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

TEST_CASE("figure: chapter 04's workload, reserved and wasted", "[exercise][figure]") {
  // 64 answers (median 18, longest 231 tokens) after 12-token prompts; a contiguous cache must
  // hold the prompt plus the 256-token cap.
  const auto outputs = infer::draw_output_lengths(64, infer::kWorkloadSeed, 18, 1.05, 256);
  std::vector<int> lengths;
  for (int n : outputs) lengths.push_back(12 + n);
  const double mib_per_position = static_cast<double>(infer::kv_bytes_per_token(30, 3, 64, 4)) / (1024.0 * 1024.0);
  std::cout << "64 sequences of chapter 04's workload (12-token prompts), fp32 K/V of SmolLM2-135M (45 KiB per position)\n"
               "  layout                positions used   reserved   wasted    MiB reserved\n";
  const auto row = [&](const std::string& name, const exercise::Reservation& r) {
    std::cout << fmt::format("  {:<20}  {:>14}   {:>8}   {:>5.1f}%   {:>12.1f}\n", name, r.used, r.reserved, 100.0 * r.wasted_fraction(),
                             static_cast<double>(r.reserved) * mib_per_position);
  };
  row("contiguous (268)", exercise::contiguous_reservation(lengths, 12 + 256));
  for (int b : {64, 16, 4}) row(fmt::format("blocks of {}", b), exercise::paged_reservation(lengths, b));
}
