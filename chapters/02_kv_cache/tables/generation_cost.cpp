#include "generation_cost.hpp"

#include <stdexcept>

namespace infer::kv {
namespace {

void check(int64_t P, int64_t G) {
  if (P < 1 || G < 1) throw std::invalid_argument("generation cost: P and G must be at least 1");
}

// 1 + 3 + 6 + … + m(m+1)/2 = m(m+1)(m+2)/6 (the tetrahedral numbers).
int64_t tetrahedral(int64_t m) { return m * (m + 1) * (m + 2) / 6; }

}  // namespace

int64_t pass_scores(int64_t n, int64_t p) { return n * p + n * (n + 1) / 2; }

int64_t recompute_scores(int64_t P, int64_t G) {
  check(P, G);
  return tetrahedral(P + G - 1) - tetrahedral(P - 1);
}

int64_t cached_scores(int64_t P, int64_t G) {
  check(P, G);
  return P * (P + 1) / 2 + (G - 1) * P + (G - 1) * G / 2;
}

double recompute_scores_leading(double P, double G) { return P * P * G / 2 + P * G * G / 2 + G * G * G / 6; }
double cached_scores_leading(double P, double G) { return P * P / 2 + P * G + G * G / 2; }

GenerationMacs generation_macs(const LlamaConfig& c, int64_t P, int64_t G) {
  check(P, G);
  GenerationMacs m;
  for (int64_t t = 0; t < G; ++t) m.recompute += forward_cost(c, P + t, 0, 1).total();
  m.cached = forward_cost(c, P, 0, 1).total();
  for (int64_t t = 1; t < G; ++t) m.cached += forward_cost(c, 1, P + t - 1, 1).total();
  return m;
}

}  // namespace infer::kv
