// Exercise 08 (reverse KL) — your answer goes here (see README.md).
#include <stdexcept>

#include "reverse_kl.hpp"

namespace exercise {

double reverse_kl(std::span<const double> student_logits, std::span<const double> teacher_logits, double T,
                  std::span<double> d_student) {
  // 1. log q and log p with a stable log-sum-exp (subtract the largest logit / T).
  // 2. The loss. 3. The gradient: differentiate through q = softmax(s / T) — README.md, "Hints".
  (void)student_logits; (void)teacher_logits; (void)T; (void)d_student;
  throw std::logic_error("exercise 08_reverse_kl: reverse_kl is not written yet");
}

}  // namespace exercise
