#include "analytic.hpp"

#include <fmt/format.h>

namespace infer::spec {

namespace {
std::vector<std::string> gamma_headers(std::string first) {
  std::vector<std::string> h = {std::move(first)};
  for (int g : kCourseGammas) h.push_back(fmt::format("γ = {}", g));
  return h;
}
}  // namespace

Table expected_tokens_table() {
  Table t("Expected tokens per verification pass, E = (1 − α^(γ+1)) / (1 − α)", gamma_headers("acceptance α"));
  for (double a : kCourseAlphas) {
    std::vector<std::string> row = {fmt::format("{:.1f}", a)};
    for (int g : kCourseGammas) row.push_back(fmt::format("{:.2f}", expected_tokens(a, g)));
    t.add_row(row);
  }
  t.add_note("Each round ends with one token of the target's own, so even α = 0 yields 1 token per pass; "
             "a guess deep in the draft is reached only if every guess before it was accepted (α^i).");
  return t;
}

Table analytic_speedup_table(const std::vector<double>& costs) {
  Table t("Predicted speed-up over plain decoding, S = E / (γ·c + 1), c = draft step ÷ target step",
          gamma_headers("draft cost c, α"));
  for (double c : costs)
    for (double a : kCourseAlphas) {
      std::vector<std::string> row = {fmt::format("c = {:.1f}, α = {:.1f}", c, a)};
      for (int g : kCourseGammas) {
        const double s = predicted_speedup(a, g, c);
        row.push_back(fmt::format("{:.2f}×{}", s, s < 1.0 ? " slower" : ""));
      }
      t.add_row(row);
    }
  t.add_note(fmt::format("The course's cases: α = 0.3 and c = 0.2 at γ = 4 run five forward passes a round (four "
                         "of the draft, one of the target: 1.8 target steps of time) and keep E = {:.2f} tokens: {:.2f}×, "
                         "slower than not speculating.",
                         expected_tokens(0.3, 4), predicted_speedup(0.3, 4, 0.2)));
  t.add_note(fmt::format("γ = 8, c = 0.1: {:.2f}× at α = 0.9 but {:.2f}× at α = 0.3 — the same configuration wins "
                         "or loses by a number measured on your own traffic.",
                         predicted_speedup(0.9, 8, 0.1), predicted_speedup(0.3, 8, 0.1)));
  return t;
}

}  // namespace infer::spec
