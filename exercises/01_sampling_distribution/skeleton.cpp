// Exercise 01 (sampling) — your answer goes here (see README.md).
#include <stdexcept>

#include "sampling_exercise.hpp"

namespace exercise {

std::vector<float> sampling_distribution(std::span<const float> logits, const SamplingKnobs& knobs) {
  // 0. refuse impossible knobs; temperature 0: put 1 on the argmax and return.
  // 1. order the token ids by logit, largest first; keep the first top_k (all when 0).
  // 2. top_p < 1: softmax at temperature 1 over the kept ids (subtract the largest first), walk
  //    down the order adding probabilities, stop at the first id where the sum reaches top_p.
  // 3. min_p: which of the kept ids are within a factor min_p of the most likely one?
  // 4. only now the temperature: softmax of logit / temperature over what is left.
  (void)logits; (void)knobs;
  throw std::logic_error("exercise 01_sampling_distribution: sampling_distribution is not written yet");
}

}  // namespace exercise
