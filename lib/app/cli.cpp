#include "app/cli.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "app/sha256.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/simd_target.hpp"

namespace infer {

void add_common_options(CLI::App& app, CommonOptions& o, PromptFlags prompt) {
  app.add_option("-m,--model", o.model_path, "GGUF model file (Llama architecture)")->capture_default_str();
  if (prompt == PromptFlags::offered) {
    app.add_option("-p,--prompt", o.prompt, "prompt text")->capture_default_str();
    app.add_option("-n,--n-predict", o.n_predict, "number of tokens to generate")
        ->check(whole_number(1))->capture_default_str();
  }
  app.add_option_function<int64_t>(
         "--seed",
         [&o](int64_t seed) {
           if (seed == -1) {
             seed = std::random_device{}();  // 32 bits, like llama.cpp's: short to type again
             fmt::print(stderr, "seed: {} (drawn at random; --seed {} repeats this run)\n", seed, seed);
           }
           o.sampling.seed = static_cast<uint64_t>(seed);
         },
         "random seed for sampling (-1: a random seed, printed)")
      ->check(whole_number(-1, std::numeric_limits<int64_t>::max()))->default_str(std::to_string(o.sampling.seed));
  app.add_option("--temp", o.sampling.temperature, "sampling temperature (0 = greedy)")
      ->check(real_number(0, std::numeric_limits<double>::infinity()))->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "keep the k most likely tokens (0 = all)")
      ->check(whole_number(0))->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "keep the smallest set of tokens with this probability (1 = all)")
      ->check(real_number(0, 1, /*min_exclusive=*/true))->capture_default_str();
  app.add_option("--repeat-penalty", o.sampling.repeat_penalty,
                 "divide the positive logits (multiply the negative ones) of tokens among the last --repeat-last-n "
                 "by this (1 = off)")
      ->check(real_number(0, 100, /*min_exclusive=*/true))->capture_default_str();
  app.add_option("--repeat-last-n", o.sampling.repeat_last_n, "how many recent tokens --repeat-penalty looks at "
                                                               "(0 = none, -1 = all)")
      ->check(whole_number(-1))->capture_default_str();
  app.add_option("-t,--threads", o.threads, "CPU threads (0 = all cores)")->check(whole_number(0))->capture_default_str();
  if (prompt == PromptFlags::offered) app.add_flag("--chat", o.chat, "wrap the prompt in the model's chat template");
  app.add_option("--device", o.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option_function<std::string>(
         "--backend", [](const std::string& name) { set_cpu_backend(*parse_cpu_backend(name)); },
         "CPU backend of lib's operations: fast (SIMD kernels, OpenBLAS, threads) or reference (plain "
         "single-threaded loops, lib/tensor/ops_reference.cpp); default: INFER_BACKEND, else fast")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            return parse_cpu_backend(name) ? "" : fmt::format("must be fast or reference, not '{}'", name);
          },
          "fast or reference"));
  app.add_option("--json", o.json_path, "write a machine-readable record of the run to FILE");
  app.add_option("--csv", o.csv_path, "write the printed tables as CSV to FILE");
}

void check_common_options(const CommonOptions& o) {
  const auto cores = static_cast<int>(std::thread::hardware_concurrency());
  static bool warned = false;  // once per run, though read_model_config and load_model both check
  if (cores > 0 && o.threads > cores && !warned) {
    fmt::print(stderr, "warning: -t {} asks for more threads than the {} cores here; the run will be slower, not faster\n",
               o.threads, cores);
    warned = true;
  }
  Device device;
  try {
    device = Device::parse(o.device);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  CpuBackend backend = CpuBackend::fast;
  try {
    backend = cpu_backend();  // --backend, else INFER_BACKEND, which may name no backend
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  if (backend == CpuBackend::reference && !device.is_cpu())
    throw UsageError(fmt::format("--backend reference runs on the CPU, not on --device {}", device.name()));
  if (!std::filesystem::exists(o.model_path)) {
    if (o.model_path == INFER_DEFAULT_MODEL)
      throw UsageError("model file " + o.model_path + " not found: run data/fetch_model.sh first");
    throw UsageError("model file " + o.model_path + " not found");
  }
  check_output_path(o.json_path, "--json");
  check_output_path(o.csv_path, "--csv");
}

LlamaConfig read_model_config(const CommonOptions& o) {
  // The same checks, in the same order, as load_model: a bad flag or device is named before the
  // file is read, whichever of the two a binary calls first.
  check_common_options(o);
  require_device(Device::parse(o.device));
  return LlamaConfig::from_gguf(gguf::GgufFile::open(o.model_path));
}

LoadedModel load_model(const CommonOptions& o, DType weight_dtype) {
  check_common_options(o);
  set_num_threads(o.threads);
  const Device device = Device::parse(o.device);
  require_device(device);
  Stopwatch clock;
  gguf::GgufFile file = gguf::GgufFile::open(o.model_path);
  Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const LlamaConfig config = LlamaConfig::from_gguf(file);
  LlamaWeights weights = load_weights(file, config, {device, weight_dtype});
  const std::size_t bytes = weights.bytes_held();
  LoadedModel m{std::move(file), std::move(tokenizer), Llama(config, std::move(weights), device), clock.seconds()};
  // With the reference backend the thread count and SIMD target are those of the chapters' own
  // kernels (chapter 06's packed ones); lib's operations run the plain loops on one thread.
  const std::string backend =
      cpu_backend() == CpuBackend::reference && device.is_cpu()
          ? fmt::format("reference backend (lib's operations in plain loops, one thread; {} threads, {} kernels elsewhere)",
                        num_threads(), simd::target_name())
          : fmt::format("{} threads, {} kernels", num_threads(), simd::target_name());
  fmt::print(stderr, "loaded {} in {}: {}; weights {} as {} on {}, {}\n",
             std::filesystem::path(o.model_path).filename().string(), format_seconds(m.load_seconds),
             config.describe(), format_bytes(static_cast<double>(bytes)), dtype_name(weight_dtype),
             device.name(), backend);
  return m;
}

std::vector<int32_t> repeated_tokens(const Tokenizer& tokenizer, std::string_view text, int64_t n) {
  const std::vector<int32_t> once = tokenizer.encode(text);
  if (once.empty()) throw std::invalid_argument("repeated_tokens: the text encodes to no tokens");
  std::vector<int32_t> out;
  while (std::ssize(out) < n) out.push_back(once[out.size() % once.size()]);
  return out;
}

std::vector<int32_t> encode_prompt(const LoadedModel& m, const CommonOptions& o) {
  if (o.prompt.empty()) throw UsageError("the prompt is empty (give one with -p)");
  const std::string text = o.chat ? m.tokenizer.apply_chat_template({{"user", o.prompt}}) : o.prompt;
  std::vector<int32_t> ids = m.tokenizer.encode(text);
  const int context = m.model.config().context_length;
  if (std::ssize(ids) + o.n_predict > context)
    throw UsageError(fmt::format("prompt of {} tokens + {} to generate exceeds the context length {}",
                                 ids.size(), o.n_predict, context));
  return ids;
}

RunRecord new_record(const std::string& binary, const CommonOptions& o, const std::string& kind) {
  RunRecord r;
  r.binary = binary;
  r.kind = kind;
  r.model = o.model_path;
  if (!o.json_path.empty()) r.model_sha256 = sha256_file(o.model_path);
  r.settings = {o.sampling.temperature, o.sampling.top_k, o.sampling.top_p, o.sampling.seed,
                o.chat, o.n_predict, Device::parse(o.device).name()};
  r.backend = cpu_backend_name(cpu_backend());
  if (kind == "generation") r.prompt = o.prompt;
  return r;
}

void save_record(RunRecord& record, const CommonOptions& o, const Tokenizer* tokenizer) {
  if (o.json_path.empty()) return;
  if (tokenizer != nullptr) {
    record.step_texts.clear();
    for (const StepRecord& step : record.steps) record.step_texts.push_back(tokenizer->decode({step.token}));
  }
  record.write(o.json_path);
}

}  // namespace infer
