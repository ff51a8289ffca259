#include "app/cli.hpp"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("-m,--model", o.model_path, "GGUF model file (Llama architecture)")->capture_default_str();
  app.add_option("-p,--prompt", o.prompt, "prompt text")->capture_default_str();
  app.add_option("-n,--n-predict", o.n_predict, "number of tokens to generate")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--seed", o.sampling.seed, "random seed for sampling")->capture_default_str();
  app.add_option("--temp", o.sampling.temperature, "sampling temperature (0 = greedy)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "keep the k most likely tokens (0 = all)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "keep the smallest set with this probability")
      ->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  app.add_option("-t,--threads", o.threads, "CPU threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_flag("--chat", o.chat, "wrap the prompt in the model's chat template");
  app.add_option("--device", o.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--json", o.json_path, "write a machine-readable record of the run to FILE");
  app.add_option("--csv", o.csv_path, "write the printed tables as CSV to FILE");
}

LoadedModel load_model(const CommonOptions& o, DType weight_dtype) {
  set_num_threads(o.threads);
  Device device;
  try {
    device = Device::parse(o.device);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  require_device(device);
  if (!std::filesystem::exists(o.model_path)) {
    if (o.model_path == INFER_DEFAULT_MODEL)
      throw UsageError("model file " + o.model_path + " not found: run data/fetch_model.sh first");
    throw UsageError("model file " + o.model_path + " not found");
  }
  Stopwatch clock;
  gguf::GgufFile file = gguf::GgufFile::open(o.model_path);
  Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const LlamaConfig config = LlamaConfig::from_gguf(file);
  LlamaWeights weights = load_weights(file, config, {device, weight_dtype});
  const std::size_t bytes = weights.bytes_held();
  LoadedModel m{std::move(file), std::move(tokenizer), Llama(config, std::move(weights), device), clock.seconds()};
  fmt::print(stderr, "loaded {} in {}: {}; weights {} as {} on {}, {} threads\n",
             std::filesystem::path(o.model_path).filename().string(), format_seconds(m.load_seconds),
             config.describe(), format_bytes(static_cast<double>(bytes)), dtype_name(weight_dtype),
             device.name(), num_threads());
  return m;
}

std::vector<int32_t> repeated_tokens(const Tokenizer& tokenizer, std::string_view text, int64_t n) {
  const std::vector<int32_t> once = tokenizer.encode(text);
  if (once.empty()) throw std::invalid_argument("repeated_tokens: the text encodes to no tokens");
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n) out.push_back(once[out.size() % once.size()]);
  return out;
}

std::vector<int32_t> encode_prompt(const LoadedModel& m, const CommonOptions& o) {
  if (o.prompt.empty()) throw UsageError("the prompt is empty (give one with -p)");
  const std::string text = o.chat ? m.tokenizer.apply_chat_template({{"user", o.prompt}}) : o.prompt;
  std::vector<int32_t> ids = m.tokenizer.encode(text);
  const int context = m.model.config().context_length;
  if (static_cast<int64_t>(ids.size()) + o.n_predict > context)
    throw UsageError(fmt::format("prompt of {} tokens + {} to generate exceeds the context length {}",
                                 ids.size(), o.n_predict, context));
  return ids;
}

int run_main(CLI::App& app, int argc, char** argv, const std::function<void()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help (exit 0) or the error; any parse error is bad usage: exit 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
    return 1;
  }
}

}  // namespace infer
