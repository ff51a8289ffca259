// Chapter 04's studies: the course's model of latency and throughput.
//
// Arithmetic intensity = FLOPs done per byte moved between memory and the arithmetic units. A
// machine keeps its units busy only when the work's intensity reaches its own balance,
// peak FLOP/s ÷ bandwidth (an H100: 989 TFLOP/s ÷ 3.35 TB/s ≈ 295).
//
//   matrix product [B, D] × [D, F]:
//       FLOPs 2·B·D·F;  bytes e·(B·D + D·F + B·F)  →  ≈ B (B ≪ D, F), N/3 for square N (bf16)
//   MLP, B sequences × T new tokens, widths D and F, e bytes per element:
//       FLOPs 6·B·T·D·F;  bytes e·(2·B·T·D + 2·B·T·F + 3·D·F)  →  ≈ B·T  (bf16, B·T ≪ D, F)
//     every sequence uses the same weights: a bigger batch reuses each byte read.
//   attention, S cached and T new positions:
//       FLOPs 4·B·S·T·D;  bytes e·(2·B·T·D + 2·B·S·D)         →  S·T / (S + T)   (bf16)
//     B cancels: each sequence reads its own cache, so batching buys attention nothing.
//     Prefill (T = S): S / 2. Decode (T = 1): S / (S + 1) < 1 whatever the batch.
//
// A decode step is then priced by what it must move and what it must compute:
//   bytes  = weights (once per step) + B × S × cache bytes per token
//   FLOPs  = B × (2 × matrix weights + 4 × L × H × D × S)
//   latency = max(bytes / bandwidth, FLOPs / peak)      throughput = B / latency
// The course's version keeps only the first term (decode is memory-bound).
//
// More cards: M replicas each run the model as above (latency unchanged, M× the throughput);
// one model split over M cards (tensor parallel) reads each card's share of the bytes at once,
// which this model prices as one machine with M× the bandwidth, peak and memory — the ideal,
// without the communication between the cards.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.hpp"

namespace infer {

double matmul_intensity(double B, double D, double F, double bytes_per_element);
double mlp_intensity(double B, double T, double D, double F, double bytes_per_element);
double attention_intensity(double S, double T, double bytes_per_element);

struct Machine {
  std::string name;
  double bandwidth = 0;     // bytes/s
  double peak_flops = 0;    // FLOP/s
  double memory_bytes = 0;  // capacity; 0: not considered
  double balance() const { return peak_flops / bandwidth; }  // FLOP/byte where compute binds
};

// What one decode step of a model shape moves and computes.
struct DecodeShape {
  std::string name;
  double weight_bytes = 0;         // read once per step (and resident)
  double matmul_weights = 0;       // weights in matrix products: 2 FLOPs each per token
  double kv_bytes_per_token = 0;   // one cached position, every layer, keys and values
  double attn_flops_per_token = 0; // attention FLOPs of one decoded token per cached position

  // From the shape: parameter_count() weights of bytes_per_weight, a cache of
  // 2 × L × H_kv × D elements of bytes_per_kv per token, 4 × L × H × D attention FLOPs.
  static DecodeShape of(std::string name, const LlamaConfig& c, double bytes_per_weight, double bytes_per_kv);
};

struct StepModel {
  int batch = 0;
  double cached = 0;            // S, positions in each sequence's cache
  double bytes = 0, flops = 0;  // moved and computed by the step
  double memory_seconds = 0, compute_seconds = 0;
  double latency = 0;           // max of the two
  double throughput = 0;        // batch / latency
  double resident_bytes = 0;    // weights + every cache
  bool fits = true;             // resident_bytes ≤ machine memory (when given)
  bool memory_bound() const { return memory_seconds >= compute_seconds; }
};

StepModel model_decode_step(const DecodeShape& shape, const Machine& machine, int batch, double cached);

// The largest batch whose caches of `cached` positions fit beside the weights (0: not even the
// weights fit). Needs a machine with memory.
int largest_batch(const DecodeShape& shape, const Machine& machine, double cached);
// `cards` copies of `card` working as one (model-parallel, ideal): bandwidth, peak and memory × cards.
Machine sharded(const Machine& card, int cards);

// The course's worked example: Llama-2-13B (S = 1024, D = 5120, F = 13824, N = K = 40 heads of
// H = 128, L = 40, V = 32000, bf16) on an H100 (3.35 TB/s, 989 TFLOP/s dense bf16, 80 GB).
LlamaConfig llama2_13b_config();
Machine h100_sxm();
inline constexpr int kLlama13bCachedTokens = 1024;

}  // namespace infer
