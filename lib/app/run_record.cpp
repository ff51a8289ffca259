#include "app/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <stdexcept>

namespace infer {

TopLogits top_logits(std::span<const float> logits, int k) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto n = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(k), ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)] ||
           (logits[static_cast<std::size_t>(a)] == logits[static_cast<std::size_t>(b)] && a < b);
  });
  TopLogits top;
  for (std::ptrdiff_t i = 0; i < n; ++i)
    top.emplace_back(ids[static_cast<std::size_t>(i)], logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])]);
  return top;
}

std::vector<int32_t> RunRecord::tokens() const {
  std::vector<int32_t> t;
  for (const auto& s : steps) t.push_back(s.token);
  return t;
}

nlohmann::json RunRecord::to_json() const {
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& s : steps) steps_json.push_back({{"token", s.token}, {"top", s.top}, {"seconds", s.seconds}});
  return {{"binary", binary}, {"model", model},     {"prompt", prompt}, {"prompt_ids", prompt_ids},
          {"steps", steps_json}, {"text", text},    {"figures", figures}};
}

RunRecord RunRecord::from_json(const nlohmann::json& j) {
  RunRecord r;
  r.binary = j.value("binary", "");
  r.model = j.value("model", "");
  r.prompt = j.at("prompt").get<std::string>();
  r.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  for (const auto& s : j.at("steps"))
    r.steps.push_back({s.at("token").get<int32_t>(), s.at("top").get<TopLogits>(), s.value("seconds", 0.0)});
  r.text = j.value("text", "");
  r.figures = j.value("figures", nlohmann::json::object());
  return r;
}

void RunRecord::write(const std::string& path) const {
  if (path.empty()) return;
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << to_json().dump(1) << "\n";
}

RunRecord RunRecord::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  try {
    return from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a run record (" + e.what() + ")");
  }
}

RunComparison compare_runs(const RunRecord& a, const RunRecord& b) {
  RunComparison c;
  c.same_prompt = a.prompt_ids == b.prompt_ids;
  c.compared_steps = static_cast<int64_t>(std::min(a.steps.size(), b.steps.size()));
  for (int64_t i = 0; i < c.compared_steps; ++i) {
    const StepRecord& sa = a.steps[static_cast<std::size_t>(i)];
    const StepRecord& sb = b.steps[static_cast<std::size_t>(i)];
    // Logits of one step are comparable even when its chosen tokens differ (the prefixes were
    // still equal); after a divergence the two runs see different sequences.
    for (const auto& [id, logit] : sa.top) {
      c.max_logit = std::max(c.max_logit, static_cast<double>(std::fabs(logit)));
      for (const auto& [id_b, logit_b] : sb.top)
        if (id_b == id) c.max_logit_diff = std::max(c.max_logit_diff, static_cast<double>(std::fabs(logit - logit_b)));
    }
    if (sa.token != sb.token) {
      c.first_divergence = i;
      break;
    }
  }
  if (a.steps.size() != b.steps.size() && c.first_divergence < 0) c.first_divergence = c.compared_steps;
  return c;
}

}  // namespace infer
