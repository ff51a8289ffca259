#include "memory_budget.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "gguf/gguf_file.hpp"


namespace infer::quant {
namespace {

// A Llama-2 shape: untied embeddings, vocabulary 32 000, head_dim 128, context 4 096.
LlamaConfig llama2(int layers, int d_model, int heads, int kv_heads, int d_ff) {
  return LlamaConfig::from_shape(layers, d_model, heads, kv_heads, d_ff, 32000, 4096);
}

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / kGiB); }

std::string kib(int64_t bytes) {
  return bytes % 1024 == 0 ? fmt::format("{} KiB", bytes / 1024) : fmt::format("{:.1f} KiB", bytes / 1024.0);
}

std::string billions(int64_t n) {
  return n >= 1'000'000'000 ? fmt::format("{:.2f} B", n / 1e9) : fmt::format("{:.1f} M", n / 1e6);
}

// `lead`: cells in front of the usual ones (the card, in the table of the course's setting).
void add_budget_row(Table& table, const Budget& b, std::vector<std::string> lead = {}) {
  std::vector<std::string> row = std::move(lead);
  for (std::string cell : {b.model, b.format, billions(b.parameters), gib(b.weight_bytes),
                           b.fits() ? gib(b.left_bytes) : fmt::format("-{}", gib(-b.left_bytes)), kib(b.kv_bytes_per_token),
                           b.fits() ? format_count(b.context_tokens) : std::string("does not fit"),
                           b.fits() ? format_count(b.users) : std::string("—")})
    row.push_back(std::move(cell));
  table.add_row(row);
}

// Token counts the course's closing text quotes for its own setting (its 16 GB int8 rows and its
// 8 GB int4 13B row), each with the card, model and format it belongs to.
struct CourseFigure {
  int card_gib;
  const char* model;
  const char* format;
  int64_t tokens;
};
constexpr CourseFigure kCourseFigures[] = {{16, "7B (8 KV heads)", "int8", 65378},
                                           {16, "13B (40 KV heads)", "int8", 3136},
                                           {8, "13B (40 KV heads)", "int4", 337}};

const std::vector<std::string> kHeaders = {"model",    "format",   "parameters",     "weights GiB",
                                           "left GiB", "KV/token", "context tokens", "users @ 4096"};

}  // namespace

NamedConfig mistral_7b() {
  // config.json of mistralai/Mistral-7B-v0.1: hidden 4096, 32 layers, 32 heads, 8 key/value heads,
  // intermediate 14336, vocabulary 32000, untied; its 32 768-token context (with a 4 096-token
  // sliding window) does not enter the budget. parameter_count() gives 7.24 B.
  return {"Mistral-7B", LlamaConfig::from_shape(32, 4096, 32, 8, 14336, 32000, 32768)};
}

std::vector<NamedConfig> course_models() {
  // The course text: "the 7B and 70B rows assume 8 key-value heads of dimension 128, the 13B row
  // full multi-head attention with 40 heads"; its weights are parameters × bits / 8 with the
  // nominal counts (its 5.6 GB between 7B and 13B at int8 is 6·10^9 bytes).
  std::vector<NamedConfig> m = {{"7B (8 KV heads)", mistral_7b().config, 7'000'000'000},
                                {"13B (40 KV heads)", llama2_models()[1].config, 13'000'000'000},
                                {"70B (8 KV heads)", llama2_models()[2].config, 70'000'000'000}};
  return m;
}

ReserveRange reserve_for_tokens(const NamedConfig& model, const WeightFormat& format, double memory_bytes,
                                int kv_bytes_per_value, int64_t tokens) {
  const Budget b = memory_budget(model, format, memory_bytes, 0, kv_bytes_per_value, 1);
  const double room = memory_bytes - b.weight_bytes;  // what reserve and cache share
  const double kv = b.kv_bytes_per_token;
  return {room - (tokens + 1) * kv, room - tokens * kv};
}

std::vector<WeightFormat> gpu_weight_formats() { return {{"fp16", 16.0}, {"int8", 8.0}, {"int4", 4.125}}; }

// The shapes are those of the released checkpoints' config.json (hidden_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, intermediate_size, vocab_size 32000, untied), as
// mirrored on Hugging Face, e.g. TheBloke/Llama-2-7B-fp16, NousResearch/Llama-2-13b-chat-hf and
// TheBloke/Llama-2-70B-fp16 (_name_or_path meta-llama/Llama-2-70b-hf); grouped-query attention for
// 70B only, as in the Llama 2 paper (Touvron et al., 2023, arXiv:2307.09288, table 1).
// LlamaConfig::parameter_count() then gives 6.74 B, 13.02 B and 68.98 B parameters.
std::vector<NamedConfig> llama2_models() {
  return {{"Llama-2-7B", llama2(32, 4096, 32, 32, 11008)},
          {"Llama-2-13B", llama2(40, 5120, 40, 40, 13824)},
          {"Llama-2-70B", llama2(80, 8192, 64, 8, 28672)}};
}

int64_t weight_bytes(int64_t parameters, double bits_per_weight) {
  return static_cast<int64_t>(std::ceil(parameters * bits_per_weight / 8.0));
}

Budget memory_budget(const NamedConfig& model, const WeightFormat& format, double memory_bytes, double reserve_bytes,
                     int kv_bytes_per_value, int64_t tokens_per_user) {
  Budget b;
  b.model = model.name;
  b.format = format.name;
  b.parameters = model.parameters();
  b.weight_bytes = weight_bytes(b.parameters, format.bits_per_weight);
  b.memory_bytes = memory_bytes;
  b.reserve_bytes = reserve_bytes;
  b.left_bytes = memory_bytes - reserve_bytes - b.weight_bytes;
  const LlamaConfig& c = model.config;
  b.kv_bytes_per_token = static_cast<int64_t>(c.kv_bytes_per_token(kv_bytes_per_value));
  if (b.fits()) {
    b.context_tokens = static_cast<int64_t>(std::floor(b.left_bytes / b.kv_bytes_per_token));
    b.users = b.context_tokens / tokens_per_user;
  }
  return b;
}

std::optional<MachineMemory> parse_meminfo(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::optional<int64_t> total, available;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    int64_t value = 0;
    if (!(fields >> key >> value)) continue;
    fields >> unit;
    const int64_t scale = unit == "kB" ? 1024 : 1;  // /proc/meminfo's "kB" are KiB
    if (key == "MemTotal:") total = value * scale;
    if (key == "MemAvailable:") available = value * scale;
  }
  if (!total || !available) return std::nullopt;
  return MachineMemory{*total, *available};
}

std::optional<MachineMemory> read_meminfo(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return parse_meminfo(text.str());
}

std::vector<Table> gpu_budget_tables() {
  std::vector<Table> tables;
  std::vector<NamedConfig> models = llama2_models();
  models.insert(models.begin() + 1, mistral_7b());  // beside Llama-2-7B: the same size, a quarter of the cache
  for (const int card : {8, 16, 24}) {
    Table t(fmt::format("What fits in {} GB of GPU memory: {:.1f} GiB for weights and KV cache after a {:.1f} GiB reserve; "
                        "KV cache in fp16",
                        card, card - kGpuReserveBytes / kGiB, kGpuReserveBytes / kGiB),
            kHeaders);
    for (const NamedConfig& m : models)
      for (const WeightFormat& f : gpu_weight_formats())
        add_budget_row(t, memory_budget(m, f, card * kGiB, kGpuReserveBytes, 2, kTokensPerUser));
    if (card == 8) {
      t.add_note("A card sold as 8 GB has 8 GiB. Reserve: the CUDA context, library workspaces and activations; "
                 "1.5 GiB is the reserve the course's own figures imply (the last table).");
      t.add_note("weights: parameters × bits / 8 — fp16 16 bits, int8 8 (a per-row fp16 scale adds < 0.01 bit), "
                 "int4 4.125 (INT4 g128: 4 + 16/128). left = card − reserve − weights.");
      t.add_note("KV/token = 2 × layers × KV heads × 128 × 2 bytes: Llama-2-7B 32 KV heads, Mistral-7B 8 "
                 "(grouped-query), 13B 40, 70B 8. "
                 "context tokens = ⌊left / KV per token⌋ over all requests together; users = ⌊tokens / 4096⌋.");
    }
    if (card == 24) {
      const NamedConfig& big = models.back();
      const Budget b = memory_budget(big, gpu_weight_formats().back(), 0, kGpuReserveBytes, 2, kTokensPerUser);
      const double one_user = b.weight_bytes + kGpuReserveBytes + kTokensPerUser * b.kv_bytes_per_token;
      t.add_note(fmt::format("{} does not fit on any of these cards even at int4: weights, reserve and one user's 4096 "
                             "tokens need {:.1f} GiB.", big.name, one_user / kGiB));
    }
    tables.push_back(std::move(t));
  }

  // The course's own setting, every card in one table: its quoted figures appear as computed here.
  std::vector<std::string> headers = {"card"};
  headers.insert(headers.end(), kHeaders.begin(), kHeaders.end());
  Table course("The course's setting: nominal 7 / 13 / 70 B parameters, 7B and 70B with 8 KV heads of 128, 13B with "
               "40; 1.5 GiB reserve, fp16 KV cache",
               headers);
  for (const int card : {8, 16, 24})
    for (const NamedConfig& m : course_models())
      for (const WeightFormat& f : gpu_weight_formats())
        add_budget_row(course, memory_budget(m, f, card * kGiB, kGpuReserveBytes, 2, kTokensPerUser),
                       {fmt::format("{} GB", card)});
  course.add_note("The course quotes 65 378 tokens (7B) against 3 136 (13B) at int8 on 16 GB, and 337 for 13B at int4 "
                  "on 8 GB: the same cache per token as Mistral-7B (128 KiB) against Llama-2-13B's 800 KiB.");
  tables.push_back(std::move(course));

  // Which reserve gives the course's figures: each pins it to within one token's cache.
  Table reserve("The reserve the course's figures imply: ⌊(card − reserve − weights) / KV per token⌋ = the quoted tokens",
                {"card", "model", "format", "course's tokens", "reserve from (MiB, exclusive)", "reserve to (MiB)",
                 "1.5 GiB inside"});
  ReserveRange all{-1e300, 1e300};
  const std::vector<NamedConfig> course_set = course_models();
  const std::vector<WeightFormat> formats = gpu_weight_formats();
  for (const CourseFigure& c : kCourseFigures) {
    const NamedConfig& m = *std::find_if(course_set.begin(), course_set.end(), [&](const NamedConfig& x) { return x.name == c.model; });
    const WeightFormat& f = *std::find_if(formats.begin(), formats.end(), [&](const WeightFormat& x) { return x.name == c.format; });
    const ReserveRange r = reserve_for_tokens(m, f, c.card_gib * kGiB, 2, c.tokens);
    all = {std::max(all.lo, r.lo), std::min(all.hi, r.hi)};
    reserve.add_row({fmt::format("{} GB", c.card_gib), c.model, c.format, format_count(c.tokens),
                     fmt::format("{:.3f}", r.lo / (1 << 20)), fmt::format("{:.3f}", r.hi / (1 << 20)),
                     r.contains(kGpuReserveBytes) ? "yes" : "no"});
  }
  reserve.add_row({"all three", "", "", "", fmt::format("{:.3f}", all.lo / (1 << 20)), fmt::format("{:.3f}", all.hi / (1 << 20)),
                   all.contains(kGpuReserveBytes) ? "yes" : "no"});
  reserve.add_note("The text never states its reserve; its figures fix it: only reserves in the last row's range give all "
                   "three, and 1.5 GiB = 1536 MiB is the round number inside it.");
  tables.push_back(std::move(reserve));
  return tables;
}

Table machine_budget_table(const NamedConfig& model, const MachineMemory& memory) {
  const double available = memory.available_bytes;
  Table t(fmt::format("What fits in this machine's RAM: {} ({:.2f} GiB available of {:.2f} GiB, MemAvailable of "
                      "/proc/meminfo); KV cache in fp32",
                      model.name, available / kGiB, memory.total_bytes / kGiB),
          kHeaders);
  std::vector<WeightFormat> formats = {{"fp32", 32.0}};
  for (const WeightFormat& f : gpu_weight_formats()) formats.push_back(f);
  for (const WeightFormat& f : formats) add_budget_row(t, memory_budget(model, f, available, 0, 4, kTokensPerUser));
  t.add_note(fmt::format("{}: {}.", model.name, model.config.describe()));
  t.add_note(fmt::format("No reserve: the process itself takes a few MB. KV/token = 2 × {} layers × {} KV heads × {} × 4 "
                         "bytes (chapter 02's cache stores fp32). The model was trained for {} tokens, so one "
                         "request can use at most that many; users = ⌊tokens / 4096⌋.",
                         model.config.n_layers, model.config.n_kv_heads, model.config.head_dim,
                         model.config.context_length));
  return t;
}

void memory_tables(const CommonOptions& o, nlohmann::json& figures) {
  auto record = [&](const Table& t) {
    t.emit(o.csv_path);
    figures["memory"].push_back({{"title", t.title()}, {"rows", t.rows()}});
  };
  for (const Table& t : gpu_budget_tables()) record(t);
  const std::optional<MachineMemory> ram = read_meminfo();
  if (!ram) {
    fmt::print(stderr, "/proc/meminfo has no MemTotal/MemAvailable: no table for this machine\n");
    return;
  }
  const gguf::GgufFile file = gguf::GgufFile::open(o.model_path);
  std::string name = std::filesystem::path(o.model_path).filename().string();  // SmolLM2-135M-Instruct.Q4_1.gguf
  name = name.substr(0, name.find('.'));  // the model, not the file's own quantization
  const NamedConfig model{name, LlamaConfig::from_gguf(file)};
  record(machine_budget_table(model, *ram));
  figures["machine_memory"] = {{"mem_total_bytes", ram->total_bytes}, {"mem_available_bytes", ram->available_bytes}};
}

}  // namespace infer::quant
