// The course's model of speculative decoding, in two formulas. If each guess is accepted with
// probability α, independently, a round of γ guesses yields on average
//
//   E(α, γ) = 1 + α + α² + … + α^γ = (1 − α^(γ+1)) / (1 − α)      tokens per verification pass
//
// (the accepted run of guesses, plus the target's own token that ends every round). A round
// costs γ draft steps at a fraction c of a target step each, plus one verification pass that
// costs v(γ) target steps (the course assumes v = 1), so the speed-up over plain decoding is
//
//   S(α, γ, c) = E(α, γ) / (γ·c + v(γ)).
#pragma once

#include <vector>

#include "measure/table.hpp"

namespace infer::spec {

// γ may be fractional: a mean number of guesses per round.
double expected_tokens(double alpha, double gamma);
double predicted_speedup(double alpha, double gamma, double c, double verify_cost = 1.0);

// The course's table: E(α, γ), and S(α, γ, c) for each c, over the α and γ of the course.
inline const std::vector<double> kCourseAlphas = {0.3, 0.5, 0.7, 0.8, 0.9};
inline const std::vector<int> kCourseGammas = {1, 2, 3, 4, 6, 8};
Table expected_tokens_table();
Table analytic_speedup_table(const std::vector<double>& costs);

}  // namespace infer::spec
