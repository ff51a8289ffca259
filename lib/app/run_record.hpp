// The machine-readable record a chapter binary writes with --json: what went in (prompt and
// its token ids), what came out (each generated token with the top logits that chose it, and
// the text), and the run's figures. tools/stage_diff compares two such records, which is how
// a student checks that a stage changed nothing but cost.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace infer {

using TopLogits = std::vector<std::pair<int32_t, float>>;

// The k largest logits, largest first (ties: lower id first).
TopLogits top_logits(std::span<const float> logits, int k);

struct StepRecord {
  int32_t token = 0;
  TopLogits top;          // the top logits of the distribution the token was drawn from
  double seconds = 0;     // wall time of the step
};

struct RunRecord {
  std::string binary;
  std::string model;
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<StepRecord> steps;
  std::string text;                 // the generated text
  nlohmann::json figures = nlohmann::json::object();  // the run's tables and measurements

  std::vector<int32_t> tokens() const;
  nlohmann::json to_json() const;
  static RunRecord from_json(const nlohmann::json& j);
  void write(const std::string& path) const;  // no-op for an empty path
  static RunRecord read(const std::string& path);
};

// How two runs of the same prompt compare: the question "did this stage change anything but
// cost?" answered from their --json records.
struct RunComparison {
  bool same_prompt = false;
  int64_t compared_steps = 0;    // steps present in both
  int64_t first_divergence = -1; // first step whose tokens differ, -1 if none
  double max_logit_diff = 0;     // largest |a - b| over top logits of the same token id, up to the divergence
  double max_logit = 0;          // largest |logit| seen, to turn the above into a relative figure
  bool identical_tokens() const { return same_prompt && first_divergence < 0; }
};
RunComparison compare_runs(const RunRecord& a, const RunRecord& b);

}  // namespace infer
