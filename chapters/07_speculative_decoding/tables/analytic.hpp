// The course's tables of its model of speculative decoding (the formulas are the lesson's,
// speedup.hpp): E(α, γ), and the predicted speed-up S(α, γ, c), over the α and γ of the course.
#pragma once

#include <vector>

#include "measure/table.hpp"
#include "speedup.hpp"

namespace infer::spec {

// The course's table: E(α, γ), and S(α, γ, c) for each c, over the α and γ of the course.
inline const std::vector<double> kCourseAlphas = {0.3, 0.5, 0.7, 0.8, 0.9};
inline const std::vector<int> kCourseGammas = {1, 2, 3, 4, 6, 8};
Table expected_tokens_table();
Table analytic_speedup_table(const std::vector<double>& costs);

}  // namespace infer::spec
