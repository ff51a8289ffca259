// What every binary shares: the common flags (after llama.cpp's habits),
// checking them before any work, loading the model and tokenizer, and the run record.
// flags.hpp has the pieces that need no model: validators, run_main and its exit statuses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/flags.hpp"
#include "app/run_record.hpp"
#include "gguf/gguf_file.hpp"
#include "model/llama.hpp"
#include "sampling/sampler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer {

struct CommonOptions {
  std::string model_path = INFER_DEFAULT_MODEL;
  std::string prompt;
  int n_predict = 32;
  SamplingParams sampling;
  int threads = 0;  // 0: all cores
  bool chat = false;
  std::string device = "cpu";
  std::string json_path;
  std::string csv_path;
};

// Whether a binary generates from a prompt. One that never does (it makes its own requests)
// leaves out -p, -n and --chat, so that they are refused instead of silently ignored.
enum class PromptFlags { offered, absent };

// Adds -m, -p, -n, --seed, --temp, --top-k, --top-p, --repeat-penalty, --repeat-last-n, -t, --chat,
// --device, --backend, --json, --csv, each number checked as it is parsed (-n 0, --temp nan and --top-p 0 are refused). --seed -1 draws a
// random seed and prints it on stderr, so that the run can be repeated (llama.cpp's habit).
// --backend fast|reference chooses the CPU backend of lib's operations (tensor/ops.hpp) as it is
// parsed, before any work; without it INFER_BACKEND decides, else fast.
void add_common_options(CLI::App& app, CommonOptions& options, PromptFlags prompt = PromptFlags::offered);

// The checks of the common flags that need no model, done by load_model before it loads
// anything (call it yourself if you never call load_model): --device is known, INFER_BACKEND (when
// --backend is not given) names a backend, the reference backend runs on the CPU, the model file
// exists, --json and --csv can be written; more threads than cores gets a one-line warning.
void check_common_options(const CommonOptions& options);

// check_common_options and the device, then the model's shape from the file's metadata alone (no
// weights: milliseconds, not seconds). For flags whose limits depend on the model (a window or a cache
// longer than its context), so that they are refused before load_model does any work.
LlamaConfig read_model_config(const CommonOptions& options);

// A model file opened once, with its tokenizer and its weights on a device.
struct LoadedModel {
  gguf::GgufFile file;
  Tokenizer tokenizer;
  Llama model;
  double load_seconds = 0;
};

// check_common_options, then opens, checks and loads the model; prints one line about it to
// stderr. Throws with a clear message (and a hint to run data/fetch_model.sh when the default
// model is missing).
LoadedModel load_model(const CommonOptions& options, DType weight_dtype = DType::f32);

// The prompt's token ids: with --chat wrapped in the chat template; refused with a clear
// message when empty or when prompt + n_predict exceeds the model's context.
std::vector<int32_t> encode_prompt(const LoadedModel& m, const CommonOptions& options);

// n real tokens for timing runs: `text` encoded, then repeated until there are n.
std::vector<int32_t> repeated_tokens(const Tokenizer& tokenizer, std::string_view text, int64_t n);

// A run record that says how it was made: `binary`, the model file (its sha256 only when --json
// asks for a record: hashing costs a read of the file), the settings that shape the tokens, the
// prompt. `kind` is "generation" or "tables" (a run that records figures, no generated steps).
RunRecord new_record(const std::string& binary, const CommonOptions& options, const std::string& kind = "generation");

// Writes `record` to --json (nothing without it): each step's token text from `tokenizer`
// (nullptr: none), then the file, atomically.
void save_record(RunRecord& record, const CommonOptions& options, const Tokenizer* tokenizer);

}  // namespace infer
