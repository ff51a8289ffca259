#include "analytic_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace infer {

double matmul_intensity(double B, double D, double F, double e) { return 2 * B * D * F / (e * (B * D + D * F + B * F)); }

double mlp_intensity(double B, double T, double D, double F, double e) {
  return 6 * B * T * D * F / (e * (2 * B * T * D + 2 * B * T * F + 3 * D * F));
}

double attention_intensity(double S, double T, double e) {
  // 4·B·S·T·D / (e·(2·B·T·D + 2·B·S·D)): B and D cancel.
  return 2 * S * T / (e * (S + T));
}

DecodeShape DecodeShape::of(std::string name, const LlamaConfig& c, double bytes_per_weight, double bytes_per_kv) {
  DecodeShape s;
  s.name = std::move(name);
  const auto params = static_cast<double>(c.parameter_count());
  s.weight_bytes = params * bytes_per_weight;
  // An untied input embedding is a lookup, not a product; a tied one is the output product.
  s.matmul_weights = params - (c.tied_embeddings ? 0.0 : static_cast<double>(c.vocab_size) * c.d_model);
  s.kv_bytes_per_token = static_cast<double>(c.kv_bytes_per_token(1)) * bytes_per_kv;
  s.attn_flops_per_token = 4.0 * c.n_layers * c.n_heads * c.head_dim;
  return s;
}

StepModel model_decode_step(const DecodeShape& shape, const Machine& m, int batch, double cached) {
  if (batch < 1 || cached < 0 || m.bandwidth <= 0 || m.peak_flops <= 0)
    throw std::invalid_argument("model_decode_step: batch < 1, negative cache, or a machine without bandwidth/peak");
  StepModel s;
  s.batch = batch;
  s.cached = cached;
  const double caches = batch * cached * shape.kv_bytes_per_token;
  s.bytes = shape.weight_bytes + caches;
  s.flops = batch * (2 * shape.matmul_weights + shape.attn_flops_per_token * cached);
  s.memory_seconds = s.bytes / m.bandwidth;
  s.compute_seconds = s.flops / m.peak_flops;
  s.latency = std::max(s.memory_seconds, s.compute_seconds);
  s.throughput = batch / s.latency;
  s.resident_bytes = shape.weight_bytes + caches;
  s.fits = m.memory_bytes <= 0 || s.resident_bytes <= m.memory_bytes;
  return s;
}

int largest_batch(const DecodeShape& shape, const Machine& m, double cached) {
  if (m.memory_bytes <= 0 || cached <= 0) throw std::invalid_argument("largest_batch: a machine with memory and a positive cache length");
  const double free = m.memory_bytes - shape.weight_bytes;
  return free <= 0 ? 0 : static_cast<int>(std::floor(free / (cached * shape.kv_bytes_per_token)));
}

Machine sharded(const Machine& card, int cards) {
  if (cards < 1) throw std::invalid_argument("sharded: at least one card");
  return {card.name + (cards > 1 ? " × " + std::to_string(cards) : ""), card.bandwidth * cards, card.peak_flops * cards,
          card.memory_bytes * cards};
}

LlamaConfig llama2_13b_config() {
  LlamaConfig c;
  c.n_layers = 40;
  c.d_model = 5120;
  c.n_heads = 40;
  c.n_kv_heads = 40;  // no grouped-query attention in the 13B
  c.head_dim = 128;
  c.d_ff = 13824;
  c.vocab_size = 32000;
  c.context_length = 4096;
  c.tied_embeddings = false;
  return c;
}

Machine h100_sxm() { return {"H100 SXM (datasheet)", 3.35e12, 989e12, 80e9}; }

}  // namespace infer
