// Grades exercise 05 (paging waste) on hand-counted reservations, then prints the waste of
// chapter 04's workload both ways.
#include <iostream>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "grouped_kv_cache.hpp"  // chapter 03: kv_bytes_per_token
#include "paging_waste.hpp"
#include "workload.hpp"          // chapter 04: draw_output_lengths, kWorkloadSeed

TEST_CASE("contiguous: every sequence holds max_tokens", "[exercise]") {
  const std::vector<int> lengths{10, 256, 1};
  const auto r = exercise::contiguous_reservation(lengths, 256);
  CHECK(r.used == 267);
  CHECK(r.reserved == 3 * 256);
}

TEST_CASE("paged: a partly filled last block is held whole", "[exercise]") {
  const std::vector<int> lengths{17, 20, 31};
  const auto r = exercise::paged_reservation(lengths, 16);
  CHECK(r.used == 68);
  CHECK(r.reserved == 32 + 32 + 32);
}

TEST_CASE("paged: a length that fills its blocks wastes nothing", "[exercise]") {
  const std::vector<int> lengths{16, 32, 0};
  const auto r = exercise::paged_reservation(lengths, 16);
  CHECK(r.reserved == 48);
  CHECK(r.wasted_fraction() == 0.0);
}

TEST_CASE("paged with blocks of one position: no waste at all", "[exercise]") {
  const std::vector<int> lengths{3, 7, 100};
  CHECK(exercise::paged_reservation(lengths, 1).reserved == 110);
}

TEST_CASE("impossible inputs are refused", "[exercise]") {
  const std::vector<int> too_long{300}, negative{-1};
  CHECK_THROWS_AS(exercise::contiguous_reservation(too_long, 256), std::invalid_argument);
  CHECK_THROWS_AS(exercise::paged_reservation(negative, 16), std::invalid_argument);
  CHECK_THROWS_AS(exercise::paged_reservation(too_long, 0), std::invalid_argument);
}

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
