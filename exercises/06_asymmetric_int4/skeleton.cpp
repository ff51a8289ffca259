// Exercise 06 (asymmetric INT4, clipping search) — your answer goes here (see README.md).
#include <stdexcept>

#include "asymmetric_int4.hpp"

namespace exercise {

std::vector<float> clipped_int4_round_trip(std::span<const float> w, int64_t group) {
  // For each group: lo and hi (both including 0); then for every clipping factor, quantize_group
  // on the shrunk range and measure the squared error. Keep the best ŵ of each group.
  (void)w; (void)group;
  throw std::logic_error("exercise 06_asymmetric_int4: clipped_int4_round_trip is not written yet");
}

}  // namespace exercise
