// Exercise 05 (paging waste) — reference solution.
#include <stdexcept>

#include "paging_waste.hpp"

namespace exercise {

Reservation contiguous_reservation(std::span<const int> lengths, int max_tokens) {
  Reservation r;
  for (int n : lengths) {
    if (n < 0 || n > max_tokens) throw std::invalid_argument("contiguous_reservation: a length outside 0 … max_tokens");
    r.used += n;
    r.reserved += max_tokens;  // sized for the worst case before the answer's length is known
  }
  return r;
}

Reservation paged_reservation(std::span<const int> lengths, int block_size) {
  if (block_size < 1) throw std::invalid_argument("paged_reservation: block_size must be at least 1");
  Reservation r;
  for (int n : lengths) {
    if (n < 0) throw std::invalid_argument("paged_reservation: a negative length");
    r.used += n;
    // ⌈n / B⌉ blocks: only the last, partly filled block wastes anything (at most B − 1 positions).
    r.reserved += static_cast<int64_t>((n + block_size - 1) / block_size) * block_size;
  }
  return r;
}

}  // namespace exercise
