// Grades exercise 05 (paging waste) on hand-counted reservations. figure.cpp prints the waste of
// chapter 04's workload both ways.
#include <vector>

#include "catch_compat.hpp"

#include "paging_waste.hpp"

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
