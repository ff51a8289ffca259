// Exercise 05 — how much reserved K/V memory is never written: contiguous caches against blocks.
#pragma once

#include <cstdint>
#include <span>

namespace exercise {

struct Reservation {
  int64_t used = 0;      // positions the sequences really fill (Σ length)
  int64_t reserved = 0;  // positions held for them
  double wasted_fraction() const { return reserved > 0 ? 1.0 - static_cast<double>(used) / static_cast<double>(reserved) : 0.0; }
};

// Chapter 04's way: every sequence reserves a contiguous cache for the longest it may become,
// max_tokens positions, whatever its final length. Throws std::invalid_argument if a length
// exceeds max_tokens or is negative.
Reservation contiguous_reservation(std::span<const int> lengths, int max_tokens);

// Chapter 05's way: every sequence holds whole blocks of block_size positions, as many as its
// length needs and no more. Throws std::invalid_argument if block_size < 1 or a length is negative.
Reservation paged_reservation(std::span<const int> lengths, int block_size);

}  // namespace exercise
