// Exercise 05 (the block size) — your answer goes here (see README.md).
#include <stdexcept>

#include "paging_waste.hpp"

namespace exercise {

BlockCost block_cost(std::span<const int> lengths, int block_size, int64_t bytes_per_position, int64_t per_block_bytes) {
  // How many blocks does one sequence of n positions hold? (n = 16, 17 and 0 with B = 16.)
  // Then: bytes written, bytes reserved, bytes of bookkeeping.
  (void)lengths; (void)block_size; (void)bytes_per_position; (void)per_block_bytes;
  throw std::logic_error("exercise 05_paging_waste: block_cost is not written yet");
}

int best_block_size(std::span<const int> lengths, std::span<const int> candidates, int64_t bytes_per_position, int64_t per_block_bytes) {
  // The smallest overhead over the candidates; on a tie, which one?
  (void)lengths; (void)candidates; (void)bytes_per_position; (void)per_block_bytes;
  throw std::logic_error("exercise 05_paging_waste: best_block_size is not written yet");
}

}  // namespace exercise
