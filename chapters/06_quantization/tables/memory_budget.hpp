// Chapter 06's study: what fits — the memory budget of a model on a card.
//
// Pure arithmetic, no model run. Memory holds the weights and, for every token of every
// request in flight, that token's keys and values in every layer:
//
//   weights           = parameters × bits per weight / 8
//   KV bytes / token  = 2 (K and V) × layers × key/value heads × head_dim × bytes per value
//                       (LlamaConfig::kv_bytes_per_token, model/config.hpp: the same
//                       function for this model and for the hypothetical 7B/13B/70B)
//   left              = memory − reserve − weights        (negative: the weights alone do not fit)
//   context tokens    = ⌊left / KV bytes per token⌋        (over all requests together)
//   users             = ⌊context tokens / tokens per user⌋
//
// Quantizing the weights buys context, and the KV-head count decides how much: Llama-2-13B has
// full multi-head attention (40 key/value heads), Llama-2-70B grouped-query attention (8), so a
// token of 70B's cache costs less than one of 13B's although the model is five times larger.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "measure/table.hpp"
#include "model/config.hpp"

namespace infer::quant {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A weight storage format as the budget sees it: bits per weight, scales included.
struct WeightFormat {
  std::string name;
  double bits_per_weight = 0;
};
// fp16 (16), int8 (8: one fp16 scale per row of thousands adds < 0.01 bit), int4 (4.125: the
// chapter's INT4 g128, 4 + 16/128).
std::vector<WeightFormat> gpu_weight_formats();

// A model by name and shape.
struct NamedConfig {
  std::string name;
  LlamaConfig config;
  int64_t nominal_parameters = 0;  // > 0: the budget uses this count ("7 B") instead of the shape's exact one
  int64_t parameters() const { return nominal_parameters > 0 ? nominal_parameters : config.parameter_count(); }
};
// Llama-2-7B, -13B and -70B, their shapes as released (config.json of meta-llama/Llama-2-*-hf).
std::vector<NamedConfig> llama2_models();
// Mistral-7B (v0.1): Llama-2-7B's depth and width with grouped-query attention, 8 key/value heads
// of 128 — the 7B shape the course's closing tables assume.
NamedConfig mistral_7b();
// The course's closing tables' own setting: nominal 7, 13 and 70 billion parameters, 7B and 70B
// with 8 key/value heads of 128, 13B with full multi-head attention (40 heads).
std::vector<NamedConfig> course_models();

// parameters × bits / 8, rounded up to a whole byte.
int64_t weight_bytes(int64_t parameters, double bits_per_weight);

struct Budget {
  std::string model, format;
  int64_t parameters = 0;
  int64_t weight_bytes = 0;
  double memory_bytes = 0;   // the card (or the RAM)
  double reserve_bytes = 0;  // kept back for the runtime: CUDA context, workspaces, activations
  double left_bytes = 0;     // memory − reserve − weights; negative when the weights do not fit
  int64_t kv_bytes_per_token = 0;
  int64_t context_tokens = 0;  // 0 when nothing is left
  int64_t users = 0;           // context_tokens / tokens_per_user
  bool fits() const { return left_bytes >= 0; }
};

Budget memory_budget(const NamedConfig& model, const WeightFormat& format, double memory_bytes, double reserve_bytes,
                     int kv_bytes_per_value, int64_t tokens_per_user);

// The reserves r for which memory_budget(model, format, memory, r, …) gives exactly `tokens`
// context tokens: ⌊(memory − r − weights) / kv⌋ = tokens  ⇔  r in (memory − weights − (tokens+1)·kv,
// memory − weights − tokens·kv]. How the course's quoted token counts pin down its reserve.
struct ReserveRange {
  double lo = 0, hi = 0;  // lo exclusive, hi inclusive, in bytes
  bool contains(double r) const { return r > lo && r <= hi; }
};
ReserveRange reserve_for_tokens(const NamedConfig& model, const WeightFormat& format, double memory_bytes,
                                int kv_bytes_per_value, int64_t tokens);

// MemTotal and MemAvailable of /proc/meminfo, in bytes. MemAvailable is the kernel's estimate of
// what a new process can allocate without swapping: free memory plus the page cache it can drop.
struct MachineMemory {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};
// Parses the text of /proc/meminfo ("MemTotal:  24683656 kB" lines); nullopt without both keys.
std::optional<MachineMemory> parse_meminfo(const std::string& text);
std::optional<MachineMemory> read_meminfo(const std::string& path = "/proc/meminfo");

// The printed tables of ch06_quantization --memory: one per card (8, 16, 24 GiB) with every
// Llama-2 model and Mistral-7B at fp16, int8 and int4 (fp16 KV cache, 1.5 GiB reserve), then the
// course's own setting (course_models(), all three cards in one table) and the reserve that the
// course's quoted figures imply; and one for `model` (the loaded model) in this machine's
// available RAM, with the fp32 KV cache of chapter 02.
inline constexpr double kGpuReserveBytes = 1.5 * kGiB;
inline constexpr int64_t kTokensPerUser = 4096;
std::vector<Table> gpu_budget_tables();
Table machine_budget_table(const NamedConfig& model, const MachineMemory& memory);

// ch06_quantization --memory: prints those tables. Arithmetic on shapes only: the model file is
// opened for its configuration, never run (nor its weights loaded).
void memory_tables(const CommonOptions& o, nlohmann::json& figures);

}  // namespace infer::quant
