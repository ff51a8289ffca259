#include "kernel_speed.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "app/cli.hpp"  // repeated_tokens
#include "app/table_context.hpp"  // machine_line
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/timing.hpp"
#include "int8_activations.hpp"
#include "pack_model.hpp"
#include "tensor/ops.hpp"
#include "tensor/simd_target.hpp"

namespace infer::quant {
namespace {

// Real tokens (a text repeated) for the prompts the timings feed.
std::vector<int32_t> filler_tokens(const Tokenizer& tokenizer, int64_t n) {
  return repeated_tokens(
      tokenizer,
      "A decode step reads every weight of the model once, so the fewer bytes a weight takes, the "
      "sooner the step is done; a prefill reads them once for the whole prompt and computes instead. ",
      n);
}

// One model under test, with its caches prefilled once.
struct Candidate {
  Llama* model = nullptr;
  SpeedRow row;
  std::unique_ptr<GroupedKvCache> decode_cache;   // positions 0 … context − 1 filled
  std::unique_ptr<GroupedKvCache> prefill_cache;  // overwritten by every timed prefill
  std::vector<double> decode_times, prefill_times;
};

}  // namespace

std::vector<PackedKernel> every_packed_kernel() {
  std::vector<PackedKernel> kernels;
  for (PackedFormat f : kPackedFormats) kernels.push_back({f, Activations::fp32});
  for (PackedFormat f : kPackedFormats)
    if (has_int8_activation_kernel(f)) kernels.push_back({f, Activations::int8});
  return kernels;
}

std::vector<SpeedRow> measure_speed(Llama& model, const Tokenizer& tokenizer, const std::vector<PackedKernel>& kernels,
                                    const SpeedOptions& o, BandwidthResult& bandwidth) {
  const LlamaConfig& c = model.config();
  if (o.context < 1 || o.prefill_tokens < 1 || o.context + 1 > c.context_length || o.prefill_tokens > c.context_length)
    throw std::invalid_argument(fmt::format("measure_speed: context {} / prefill {} do not fit the context length {}",
                                            o.context, o.prefill_tokens, c.context_length));
  const ReferenceWeights reference = keep_reference(model);
  std::vector<Llama> packed;
  packed.reserve(kernels.size());  // the candidates point into it
  std::vector<Candidate> all;
  auto add = [&](Llama* m, SpeedRow row) {
    Candidate k;
    k.model = m;
    k.row = std::move(row);
    all.push_back(std::move(k));
  };
  add(&model, {.scheme = "fp32", .flag = "", .bits_per_weight = 32});
  {
    ProgressBar bar("packing the model in each format", std::ssize(kernels));
    for (const PackedKernel& k : kernels) {
      QuantizedModel info;
      packed.push_back(packed_copy(model, reference, k.format, &info, k.activations));
      add(&packed.back(), {.scheme = info.scheme, .flag = format_flag(k.format), .activations = activations_name(k.activations),
                           .bits_per_weight = info.bits_per_weight()});
      bar.advance();
    }
    bar.done();
  }

  const std::vector<int32_t> tokens = filler_tokens(tokenizer, std::max(o.context + 1, o.prefill_tokens));
  const std::span<const int32_t> prompt(tokens.data(), o.context);
  const std::span<const int32_t> next(tokens.data() + o.context, 1);
  const std::span<const int32_t> long_prompt(tokens.data(), o.prefill_tokens);
  for (Candidate& k : all) {
    k.row.model_bytes = static_cast<int64_t>(k.model->weights().bytes_held());
    k.row.bytes_per_token = static_cast<int64_t>(k.model->weights().bytes_per_token());
    k.decode_cache = std::make_unique<GroupedKvCache>(c, o.context + 1, k.model->device());
    k.prefill_cache = std::make_unique<GroupedKvCache>(c, o.prefill_tokens, k.model->device());
    (void)k.model->forward(prompt, 0, *k.decode_cache);
    (void)k.model->forward(next, o.context, *k.decode_cache);  // warm-up step
    // A warm-up prefill too: the first pass of a longer prompt grows the activation buffers and
    // touches their pages, a cost paid once per model, not per prefill (bench_quant --rounds 1 times one).
    (void)k.model->forward(long_prompt, 0, *k.prefill_cache);
  }

  const ReadBandwidthProbe probe;
  std::vector<double> read_times;
  ProgressBar bar(fmt::format("timing {} models, {} rounds", all.size(), o.rounds), o.rounds * std::ssize(all));
  for (int round = 0; round < o.rounds; ++round) {
    for (Candidate& k : all) {
      Stopwatch read_clock;
      probe.read_once();
      read_times.push_back(read_clock.seconds());
      // The token at position `context`, again and again: it overwrites its own cache slot.
      for (int s = 0; s < o.decode_steps; ++s) {
        Stopwatch clock;
        (void)k.model->forward(next, o.context, *k.decode_cache).to(Device::cpu());
        k.decode_times.push_back(clock.seconds());
      }
      for (int s = 0; s < o.prefill_repeats; ++s) {
        Stopwatch clock;
        (void)k.model->forward(long_prompt, 0, *k.prefill_cache).to(Device::cpu());
        k.prefill_times.push_back(clock.seconds());
      }
      bar.advance();
    }
  }
  bar.done();
  bandwidth = probe.result(median(read_times));

  std::vector<SpeedRow> rows;
  for (Candidate& k : all) {
    k.row.decode_seconds = median(k.decode_times);
    k.row.prefill_seconds = median(k.prefill_times);
    rows.push_back(k.row);
  }
  return rows;
}

Table speed_table(const std::vector<SpeedRow>& rows, const SpeedOptions& o, const BandwidthResult& bw) {
  if (rows.empty()) throw std::invalid_argument("speed_table: no rows");
  const double bandwidth = bw.bytes_per_second;
  Table t(fmt::format("Decode and prefill through the packed kernels ({})", machine_line(bw)),
          {"scheme", "--quant", "activations", "model bytes", "bits/weight", fmt::format("decode tok/s (ctx {})", o.context),
           "weights streamed (GB/s)", "of read bandwidth", fmt::format("prefill tok/s ({} tokens)", o.prefill_tokens),
           "decode speed-up", "prefill speed-up"});
  const SpeedRow& base = rows[0];
  for (const SpeedRow& r : rows) {
    const double streamed = r.bytes_per_token / r.decode_seconds;  // bytes/s
    const std::string label = r.activations == "int8" ? r.scheme + " · int8 x" : r.scheme;  // a plot's points too
    t.add_row({label, r.flag.empty() ? "(none)" : r.flag, r.activations, format_bytes(r.model_bytes),
               fmt::format("{:.3f}", r.bits_per_weight), fmt::format("{:.1f}", 1.0 / r.decode_seconds),
               fmt::format("{:.2f}", streamed / 1e9), fmt::format("{:.0f}%", 100.0 * streamed / bandwidth),
               fmt::format("{:.0f}", o.prefill_tokens / r.prefill_seconds),
               fmt::format("{:.2f}×", base.decode_seconds / r.decode_seconds),
               fmt::format("{:.2f}×", base.prefill_seconds / r.prefill_seconds)});
  }
  t.add_note("model bytes: every weight as held (packed matrices, the tied embedding/output matrix once, fp32 norms); "
             "bits/weight: 8 × packed bytes / weights of the quantized matrices.");
  t.add_note(fmt::format("decode: one token at position {} against a chapter 03 cache, median of {} steps ({} rounds × {}); "
                         "weights streamed = the bytes a step reads (every matrix once, one embedding row, the norms) / "
                         "step time.", o.context, o.rounds * o.decode_steps, o.rounds, o.decode_steps));
  t.add_note("activations int8 (--int8-activations): decode rounds x to int8 in blocks of 32 and multiplies with "
             "integer dot products (int8_activations.hpp); prefill keeps fp32 activations, so its column repeats "
             "the format's.");
  t.add_note(fmt::format("prefill: {} tokens in one pass, median of {}. The models are timed in turn, round after round, so "
                         "the speed-ups compare measurements taken side by side; the read bandwidth is the median of the plain read loop "
                         "run once before each model's steps, in the same rounds.", o.prefill_tokens, o.rounds * o.prefill_repeats));
  return t;
}

void speed_figures(const std::vector<SpeedRow>& rows, const SpeedOptions& s, const BandwidthResult& bw,
                   nlohmann::json& figures) {
  figures["machine"] = {{"threads", num_threads()}, {"simd", simd::target_name()},
                        {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};
  for (const SpeedRow& r : rows)
    figures["speed"].push_back({{"scheme", r.scheme}, {"flag", r.flag}, {"activations", r.activations},
                                {"model_bytes", r.model_bytes},
                                {"bits_per_weight", r.bits_per_weight}, {"bytes_per_token", r.bytes_per_token},
                                {"decode_seconds", r.decode_seconds}, {"prefill_seconds", r.prefill_seconds},
                                {"context", s.context}, {"prefill_tokens", s.prefill_tokens},
                                {"rounds", s.rounds}, {"decode_steps", s.decode_steps}});
}

void speed_tables(LoadedModel& m, const CommonOptions& o, const SpeedOptions& s, nlohmann::json& figures) {
  BandwidthResult bw;
  const std::vector<SpeedRow> rows = measure_speed(m.model, m.tokenizer, every_packed_kernel(), s, bw);
  speed_table(rows, s, bw).emit(o.csv_path);
  speed_figures(rows, s, bw, figures);
}

}  // namespace infer::quant
