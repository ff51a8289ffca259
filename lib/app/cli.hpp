// What every chapter binary shares: the common flags (DESIGN.md, after llama.cpp's habits),
// loading the model and tokenizer, and turning errors into one line and an exit status.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

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

// Adds -m, -p, -n, --seed, --temp, --top-k, --top-p, -t, --chat, --device, --json, --csv.
void add_common_options(CLI::App& app, CommonOptions& options);

// A model file opened once, with its tokenizer and its weights on a device.
struct LoadedModel {
  gguf::GgufFile file;
  Tokenizer tokenizer;
  Llama model;
  double load_seconds = 0;
};

// Opens, checks and loads the model; prints one line about it to stderr. Throws with a clear
// message (and a hint to run data/fetch_model.sh when the default model is missing).
LoadedModel load_model(const CommonOptions& options, DType weight_dtype = DType::f32);

// The prompt's token ids: with --chat wrapped in the chat template; refused with a clear
// message when empty or when prompt + n_predict exceeds the model's context.
std::vector<int32_t> encode_prompt(const LoadedModel& m, const CommonOptions& options);

// n real tokens for timing runs: `text` encoded, then repeated until there are n.
std::vector<int32_t> repeated_tokens(const Tokenizer& tokenizer, std::string_view text, int64_t n);

// Errors a user can cause (bad input, missing files) become this; main prints its message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses the command line and runs `body`, turning every exception into one line on stderr:
// exit 2 for bad usage (CLI11 errors, UsageError), 1 for runtime failures.
int run_main(CLI::App& app, int argc, char** argv, const std::function<void()>& body);

}  // namespace infer
