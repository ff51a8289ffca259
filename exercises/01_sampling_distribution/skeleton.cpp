// Exercise 01 (sampling) — your answer goes here (see README.md).
#include <stdexcept>

#include "sampling_exercise.hpp"

namespace exercise {

std::vector<float> sampling_distribution(std::span<const float> logits, float temperature, int top_k, float top_p) {
  std::vector<float> p(logits.size(), 0.0f);
  // 1. temperature 0: put 1 on the argmax and return.
  // 2. order the token ids by logit, largest first; keep the first top_k (all when 0).
  // 3. softmax of logit / temperature over the kept ids (subtract the largest first).
  // 4. top_p < 1: walk down the order adding probabilities; stop at the first id where the
  //    running sum reaches top_p (that id is kept). Renormalise what is kept.
  (void)temperature; (void)top_k; (void)top_p;
  throw std::logic_error("exercise 01_sampling_distribution: sampling_distribution is not written yet");
  return p;
}

}  // namespace exercise
