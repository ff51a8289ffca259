// Exercise 05 (paging waste) — your answer goes here (see README.md).
#include <stdexcept>

#include "paging_waste.hpp"

namespace exercise {

Reservation contiguous_reservation(std::span<const int> lengths, int max_tokens) {
  (void)lengths; (void)max_tokens;
  throw std::logic_error("exercise 05_paging_waste: contiguous_reservation is not written yet");
}

Reservation paged_reservation(std::span<const int> lengths, int block_size) {
  // How many blocks does a sequence of n positions hold? (n = 16, 17 and 0 with B = 16.)
  (void)lengths; (void)block_size;
  throw std::logic_error("exercise 05_paging_waste: paged_reservation is not written yet");
}

}  // namespace exercise
