// The machine-readable record a binary writes with --json: what went in (prompt and
// its token ids), what came out (each generated token with the top logits that chose it, and
// the text), how it was made (the binary, the model file and its sha256, every setting that
// shapes the tokens), and the run's figures. stage_diff compares two such records, which is how
// a student checks that a stage changed nothing but cost.
//
// The JSON schema, one object:
//   binary        the name of the program that wrote it
//   kind          "generation" (a prompt and its generated steps) or "tables" (figures only)
//   model         {"file": name, "path": as given, "sha256": hex of the file's bytes ("" if unknown)}
//   settings      {"temperature", "top_k", "top_p", "seed", "chat", "n_predict", "device"}
//   prompt        the prompt as text; prompt_ids its token ids
//   steps         [{"token", "text" (the token's own text), "top": [[id, logit], ...], "seconds"}]
//   text          the generated text
//   figures       the run's tables and measurements
//   simd          the SIMD target the kernels ran (tensor/simd_target.hpp): "AVX2", "AVX3_DL", …
//   backend       the CPU backend of lib's operations (tensor/ops.hpp): "fast" or "reference"
//                 (a record without it is read as "fast": records older than the choice)
// Every string is valid UTF-8. A prompt or text that is not (the bytes of a prompt are the
// user's) is stored with each broken sequence replaced by U+FFFD, and its exact bytes beside it
// as an array of numbers: "prompt_bytes", "text_bytes". Other strings are only replaced.
// write() replaces the file atomically: a run that fails half-way leaves no partial record.
#pragma once

#include <cstdint>
#include <istream>
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

// Every setting that shapes the generated tokens.
struct RunSettings {
  float temperature = 0;
  int top_k = 0;
  float top_p = 1;
  uint64_t seed = 0;
  bool chat = false;
  int n_predict = 0;
  std::string device = "cpu";
  bool operator==(const RunSettings&) const = default;
};
// "temperature 0 vs 0.8", one entry per setting that differs.
std::vector<std::string> settings_differences(const RunSettings& a, const RunSettings& b);

struct RunRecord {
  std::string binary;
  std::string kind = "generation";  // or "tables"
  std::string model;                // the model file's path
  std::string model_sha256;         // hex; empty when not computed
  RunSettings settings;
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<StepRecord> steps;
  std::vector<std::string> step_texts;  // each step's token as text, for people (empty: not known)
  std::string text;                 // the generated text
  nlohmann::json figures = nlohmann::json::object();  // the run's tables and measurements
  std::string backend;              // "fast" or "reference"; empty: the backend of the process writing it

  std::vector<int32_t> tokens() const;
  nlohmann::json to_json() const;
  static RunRecord from_json(const nlohmann::json& j);
  void write(const std::string& path) const;  // atomic (temporary file, then rename); no-op for an empty path
  static RunRecord read(const std::string& path);
  // What read() does once the file is open: parse the JSON text from `in` and build the record;
  // anything malformed throws std::runtime_error "NAME: not a run record (...)". The fuzz
  // harness tests/fuzz/fuzz_record.cpp calls this with arbitrary bytes.
  static RunRecord parse(std::istream& in, const std::string& name);
};

// How two runs of the same prompt compare: the question "did this stage change anything but
// cost?" answered from their --json records.
struct RunComparison {
  bool same_model = false;       // same sha256 (or, when either is unknown, the same file name)
  std::vector<std::string> setting_differences;
  bool same_prompt = false;
  int64_t compared_steps = 0;    // steps present in both
  int64_t first_divergence = -1; // first step whose tokens differ, -1 if none
  double max_logit_diff = 0;     // largest |a - b| over top logits of the same token id, up to the divergence;
                                 // steps are compared only when the prompts are the same
  double max_logit = 0;          // largest |logit| seen, to turn the above into a relative figure
  bool identical_tokens() const { return same_prompt && first_divergence < 0; }
};
RunComparison compare_runs(const RunRecord& a, const RunRecord& b);

}  // namespace infer
