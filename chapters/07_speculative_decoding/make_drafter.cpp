#include "make_drafter.hpp"

#include <charconv>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "model_drafter.hpp"
#include "06_quantization/packed/packed_kernels.hpp"
#include "prompt_lookup.hpp"
#include "06_quantization/packed/pack_model.hpp"

namespace infer::spec {

namespace {

std::optional<int> layer_count(const std::string& name) {
  if (name.rfind("layers-", 0) != 0) return std::nullopt;
  int k = 0;
  const char* first = name.data() + 7;
  const char* last = name.data() + name.size();
  const auto [end, error] = std::from_chars(first, last, k);
  if (error != std::errc() || end != last || first == last) return std::nullopt;
  return k;
}

const char* kChoices = "int8, int4-g128, nf4, q8_0, q4_1, layers-K (1 ≤ K ≤ layers), lookup, target, file";

}  // namespace

std::string draft_label(const std::string& name, const std::string& draft_model_path) {
  return name == "file" ? std::filesystem::path(draft_model_path).filename().string() : name;
}

void check_draft_name(const std::string& name, const std::string& draft_model_path) {
  if (quant::parse_format_flag(name) || layer_count(name) || name == "lookup" || name == "target") return;
  if (name == "file") {
    if (draft_model_path.empty()) throw UsageError("draft 'file' needs --draft-model PATH");
    return;
  }
  throw UsageError(fmt::format("unknown draft '{}' (choose from {})", name, kChoices));
}

std::unique_ptr<Drafter> make_drafter(const std::string& name, LoadedModel& target, const CommonOptions& o,
                                      const std::string& draft_model_path, int64_t capacity) {
  check_draft_name(name, draft_model_path);
  const Llama& t = target.model;
  SamplingParams sampling = o.sampling;
  sampling.seed = o.sampling.seed + 1;  // the draft's own stream of draws
  if (name == "lookup") return std::make_unique<PromptLookupDrafter>();
  if (name == "target") return std::make_unique<ModelDrafter>("target (itself)", first_layers(t, t.config().n_layers), capacity, sampling);
  if (const auto k = layer_count(name)) {
    if (*k > t.config().n_layers)
      throw UsageError(fmt::format("draft {}: the model has {} layers", name, t.config().n_layers));
    return std::make_unique<ModelDrafter>(fmt::format("first {} layers", *k), first_layers(t, *k), capacity, sampling);
  }
  if (const auto format = quant::parse_format_flag(name)) {
    const std::string label = quant::scheme_for(*format)->name();
    if (t.device().is_cpu())
      return std::make_unique<ModelDrafter>(label, quant::packed_copy(t, quant::keep_reference(t), *format), capacity, sampling);
    // On a GPU: a second copy of the file's weights, packed on the device.
    LoadedModel copy = load_model(o);
    quant::quantize_for_kernels(copy.model, *format);
    return std::make_unique<ModelDrafter>(label, std::move(copy.model), capacity, sampling);
  }
  // name == "file": another model; it must speak the same tokens.
  CommonOptions draft_options = o;
  draft_options.model_path = draft_model_path;
  LoadedModel draft = load_model(draft_options);
  const int vd = draft.model.config().vocab_size, vt = t.config().vocab_size;
  if (vd != vt || draft.tokenizer.decode({vt - 1}) != target.tokenizer.decode({vt - 1}))
    throw UsageError(fmt::format("--draft-model {}: its vocabulary ({} tokens) is not the target's ({})", draft_model_path, vd, vt));
  return std::make_unique<ModelDrafter>(draft_label(name, draft_model_path), std::move(draft.model), capacity, sampling);
}

}  // namespace infer::spec
