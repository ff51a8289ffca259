#include "analytic_tables.hpp"

#include <cmath>

#include <fmt/format.h>

namespace infer::batching {

void intensity_table(const Machine& here, const CommonOptions& o, json& figures) {
  const LlamaConfig c13 = llama2_13b_config();
  const double D = c13.d_model, F = c13.d_ff;
  const Machine h100 = h100_sxm();
  struct Row {
    std::string computation, shape, formula;
    double bf16 = 0, fp32 = 0;  // intensity with 2- and 4-byte elements
    std::string approximation;
  };
  std::vector<Row> rows;
  for (double B : {1.0, 64.0, 1024.0})
    rows.push_back({"matrix product", fmt::format("[{:g}, D] × [D, F]", B), "2BDF / e(BD + DF + BF)", matmul_intensity(B, D, F, 2),
                    matmul_intensity(B, D, F, 4), fmt::format("≈ B = {:g}", B)});
  constexpr double N = 4096;
  rows.push_back({"matrix product", fmt::format("square, N = {:g}", N), "2N³ / 3eN²", matmul_intensity(N, N, N, 2),
                  matmul_intensity(N, N, N, 4), fmt::format("N/3 = {:.0f}", N / 3)});
  for (const auto& [B, T, phase] : {std::tuple{1.0, 1024.0, "MLP, prefill"}, std::tuple{1.0, 1.0, "MLP, decode"},
                                    std::tuple{64.0, 1.0, "MLP, decode"}, std::tuple{256.0, 1.0, "MLP, decode"}})
    rows.push_back({phase, fmt::format("B = {:g}, T = {:g}", B, T), "6BTDF / e(2BTD + 2BTF + 3DF)", mlp_intensity(B, T, D, F, 2),
                    mlp_intensity(B, T, D, F, 4), fmt::format("≈ B·T = {:g}", B * T)});
  for (double S : {1024.0, 4096.0})
    rows.push_back({"attention, prefill", fmt::format("S = T = {:g}, any B", S), "4BSTD / e(2BTD + 2BSD)", attention_intensity(S, S, 2),
                    attention_intensity(S, S, 4), fmt::format("S·T/(S+T) = S/2 = {:g}", S / 2)});
  for (double S : {1024.0, 4096.0})
    rows.push_back({"attention, decode", fmt::format("S = {:g}, T = 1, any B", S), "4BSTD / e(2BTD + 2BSD)", attention_intensity(S, 1, 2),
                    attention_intensity(S, 1, 4), fmt::format("S/(S+1) = {:.4f}", S / (S + 1))});

  Table t(fmt::format("5. Arithmetic intensity (FLOP per byte moved) in prefill and decode, beside a plain matrix product: the lecture's "
                      "formulas with Llama-2-13B's widths D = {:g}, F = {:g}", D, F),
          {"computation", "shape", "intensity = FLOPs / bytes", "bf16 (FLOP/B)", "the lecture's approximation",
           fmt::format("H100, bf16 (balance {:.0f})", h100.balance()), "fp32 (FLOP/B)",
           fmt::format("this machine, fp32 (balance {:.1f})", here.balance())});
  auto bound = [](double intensity, double balance) { return intensity >= balance ? "compute-bound" : "memory-bound"; };
  for (const Row& r : rows) {
    t.add_row({r.computation, r.shape, r.formula, fmt::format("{:.2f}", r.bf16), r.approximation, bound(r.bf16, h100.balance()),
               fmt::format("{:.2f}", r.fp32), bound(r.fp32, here.balance())});
    figures["intensity"].push_back({{"computation", r.computation}, {"shape", r.shape}, {"bf16", r.bf16}, {"fp32", r.fp32}});
  }
  t.add_note("e: bytes per element (2 in bf16, 4 in fp32). Attention's B and D cancel: every sequence reads its own keys and values, so "
             "only the lengths matter — S/2 in a prefill of S tokens, under 1 in decode, whatever the batch.");
  t.add_note(fmt::format("balance = peak FLOP/s ÷ bandwidth: {:.0f} TFLOP/s ÷ {:.2f} TB/s for the H100 (datasheet), {:.1f} GFLOP/s ÷ {:.1f} GB/s "
                         "measured here. Above it a computation is priced by its FLOPs, below it by its bytes.",
                         h100.peak_flops / 1e12, h100.bandwidth / 1e12, here.peak_flops / 1e9, here.bandwidth / 1e9));
  t.emit(o.csv_path);
}

void worked_example(const CommonOptions& o, json& figures) {
  const LlamaConfig c13 = llama2_13b_config();
  const Machine h100 = h100_sxm();
  const DecodeShape mha = DecodeShape::of("Llama-2-13B, bf16", c13, 2, 2);
  LlamaConfig gqa_config = c13;
  gqa_config.n_kv_heads = 8;
  const DecodeShape gqa = DecodeShape::of("the same with 8 kv heads (GQA)", gqa_config, 2, 2);
  const double S = kLlama13bCachedTokens;
  Table t(fmt::format("6. The course's worked example: {} on an {} — {:.2f} B parameters, {} of weights, {} of cache per "
                      "sequence of {} tokens",
                      mha.name, h100.name, static_cast<double>(c13.parameter_count()) / 1e9, format_bytes(mha.weight_bytes),
                      format_bytes(S * mha.kv_bytes_per_token), kLlama13bCachedTokens),
          {"kv heads", "B", "memory (GB)", "fits in 80 GB", "latency (s/token)", "throughput (tokens/s)", "bound by"});
  for (const DecodeShape* shape : {&mha, &gqa}) {
    for (int B : {1, 16, 64, 128, 256}) {
      const StepModel m = model_decode_step(*shape, h100, B, S);
      t.add_row({shape == &mha ? "40 (MHA)" : "8 (GQA)", std::to_string(B), fmt::format("{:.1f}", m.resident_bytes / 1e9),
                 m.fits ? "yes" : "NO: out of memory", fmt::format("{:.4f}", m.latency), fmt::format("{:.1f}", m.throughput),
                 m.memory_bound() ? "memory" : "compute"});
      figures["worked_example"].push_back({{"kv_heads", shape == &mha ? 40 : 8}, {"batch", B},
                                               {"memory_bytes", m.resident_bytes}, {"fits", m.fits},
                                               {"latency", m.latency}, {"throughput", m.throughput}});
    }
  }
  const double max_batch = std::floor((h100.memory_bytes - mha.weight_bytes) / (S * mha.kv_bytes_per_token));
  t.add_note("Parameters (the course's): S = 1024 cached tokens, D = 5120, F = 13824, N = 40 query heads, K = 40 kv heads (no GQA), "
             "H = 128, L = 40, V = 32000, untied embeddings, bf16 (2 B) weights and cache; H100 SXM: 3.35 TB/s HBM3, 989 TFLOP/s "
             "dense bf16 (balance 295), 80 GB.");
  t.add_note(fmt::format("memory = 2 B × parameters + B × 2 × S × K × H × L × 2 B; latency = memory / bandwidth (every byte read "
                         "once per step; the compute term is below it at every B here); throughput = B / latency. The largest "
                         "batch that fits is {:.0f}: by B = 256 the caches alone need {:.0f} GB.",
                         max_batch, 256 * S * mha.kv_bytes_per_token / 1e9));
  t.add_note("The course: 0.008 s/token and 124 tokens/s at B = 1; out of memory at B = 256, which fits once K = 8.");
  t.emit(o.csv_path);
}

void parallel_table(const CommonOptions& o, json& figures) {
  const LlamaConfig c13 = llama2_13b_config();
  const Machine card = h100_sxm();
  const DecodeShape shape = DecodeShape::of("Llama-2-13B, bf16", c13, 2, 2);
  const double S = kLlama13bCachedTokens;
  Table t(fmt::format("7. Replicas or one model split over the cards: {} with {}-token caches on {} cards of {:.0f} GB (the course's model)",
                      shape.name, kLlama13bCachedTokens, card.name, card.memory_bytes / 1e9),
          {"cards", "layout", "batch (all cards)", "weights per card (GB)", "memory per card (GB)", "latency (ms/token)",
           "tokens/s, all cards", "tokens/s per card", "bound by"});
  auto add = [&](int cards, const std::string& layout, int batch, const StepModel& step, double weights_per_card, double memory_per_card,
                 double throughput) {
    t.add_row({std::to_string(cards), layout, std::to_string(batch), fmt::format("{:.1f}", weights_per_card / 1e9),
               fmt::format("{:.1f}", memory_per_card / 1e9), fmt::format("{:.2f}", step.latency * 1e3), fmt::format("{:.0f}", throughput),
               fmt::format("{:.0f}", throughput / cards), step.memory_bound() ? "memory" : "compute"});
    figures["parallel"].push_back({{"cards", cards}, {"layout", layout}, {"batch", batch}, {"memory_per_card", memory_per_card},
                                      {"latency", step.latency}, {"throughput", throughput}, {"throughput_per_card", throughput / cards}});
  };
  const int one_card_batch = largest_batch(shape, card, S);
  for (int M : {1, 2, 4, 8}) {
    // M replicas: each card holds the whole model and serves its own users.
    for (int per_card : {1, one_card_batch}) {
      const StepModel step = model_decode_step(shape, card, per_card, S);
      add(M, M == 1 ? "one card" : fmt::format("replicas × {}", M), M * per_card, step, shape.weight_bytes, step.resident_bytes,
          M * step.throughput);
    }
    if (M == 1) continue;
    // One model over M cards: each holds 1/M of every weight and of every cache.
    const Machine split = sharded(card, M);
    for (int batch : {1, M * one_card_batch, largest_batch(shape, split, S)}) {
      const StepModel step = model_decode_step(shape, split, batch, S);
      add(M, fmt::format("split over {} cards", M), batch, step, shape.weight_bytes / M, step.resident_bytes / M, step.throughput);
    }
  }
  t.add_note(fmt::format("batch: one user per card, the most that fit beside the weights on one card ({}), and for a split model also the replicas' "
                         "total and the most that fit in all the cards' memory.", one_card_batch));
  t.add_note("latency = bytes read per step ÷ bandwidth (the cards read their shares at once: M× the bandwidth), throughput = batch ÷ latency; "
             "the split ignores the all-reduces between the cards, which a real tensor-parallel step pays on every layer.");
  t.add_note("Replicas: the lecture's \"M copies: latency the same, throughput × M\". A split model reads the weights once for all M cards: "
             "lower latency for each user, and room for larger batches, so more tokens per card.");
  t.emit(o.csv_path);
}

}  // namespace infer::batching
