// Exercise 06 (asymmetric INT4) — your answer goes here (see README.md).
#include <stdexcept>

#include "asymmetric_int4.hpp"

namespace exercise {

std::vector<float> asymmetric_int4_round_trip(std::span<const float> w, int64_t group) {
  // For each group: lo, hi (both including 0), scale, zero point; then every weight's code and
  // its dequantized value. Watch the group whose scale is 0.
  (void)w; (void)group;
  throw std::logic_error("exercise 06_asymmetric_int4: asymmetric_int4_round_trip is not written yet");
}

}  // namespace exercise
