// Exercise 05 (the block size) — reference solution.
#include <stdexcept>

#include "paging_waste.hpp"

namespace exercise {

BlockCost block_cost(std::span<const int> lengths, int block_size, int64_t bytes_per_position, int64_t per_block_bytes) {
  if (block_size < 1 || bytes_per_position < 1 || per_block_bytes < 0)
    throw std::invalid_argument("block_cost: block_size and bytes_per_position must be ≥ 1, per_block_bytes ≥ 0");
  BlockCost cost;
  for (int n : lengths) {
    if (n < 0) throw std::invalid_argument("block_cost: a negative length");
    // Each sequence its own ⌈n / B⌉ blocks: only its last, partly filled block leaves positions
    // unwritten, and no one else can write them.
    const int64_t blocks = (int64_t{n} + block_size - 1) / block_size;
    cost.written_bytes += int64_t{n} * bytes_per_position;
    cost.reserved_bytes += blocks * block_size * bytes_per_position;
    cost.table_bytes += blocks * per_block_bytes;
  }
  return cost;
}

int best_block_size(std::span<const int> lengths, std::span<const int> candidates, int64_t bytes_per_position, int64_t per_block_bytes) {
  if (candidates.empty()) throw std::invalid_argument("best_block_size: no candidate block sizes");
  int best = 0;
  int64_t least = 0;
  for (int b : candidates) {
    const int64_t overhead = block_cost(lengths, b, bytes_per_position, per_block_bytes).overhead_bytes();
    // A tie goes to the larger block, whatever order the candidates come in.
    if (best == 0 || overhead < least || (overhead == least && b > best)) {
      best = b;
      least = overhead;
    }
  }
  return best;
}

}  // namespace exercise
