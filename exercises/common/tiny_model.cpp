#include "tiny_model.hpp"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace exercise {

namespace {

infer::Tensor random_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  // Scaled by 1/√cols so that x·Wᵀ keeps the size of x: the usual initialisation.
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (float& e : w) e = normal(rng);
  return infer::Tensor::from_vector(w, {rows, cols});
}

std::unique_ptr<infer::Linear> random_linear(std::mt19937_64& rng, int64_t out, int64_t in) {
  return std::make_unique<infer::DenseLinear>(random_matrix(rng, out, in));
}

infer::Tensor ones(int64_t n) { return infer::Tensor::from_vector(std::vector<float>(static_cast<std::size_t>(n), 1.0f), {n}); }

}  // namespace

infer::Llama tiny_random_llama(uint64_t seed) {
  const infer::LlamaConfig c = infer::LlamaConfig::from_shape(/*layers*/ 2, /*d*/ 64, /*heads*/ 4, /*kv heads*/ 2,
                                                              /*d_ff*/ 128, /*vocab*/ 97, /*context*/ 256);
  std::mt19937_64 rng(seed);
  infer::LlamaWeights w;
  w.token_embedding = std::make_shared<infer::DenseEmbedding>(random_matrix(rng, c.vocab_size, c.d_model));
  for (int l = 0; l < c.n_layers; ++l) {
    infer::LayerWeights L;
    L.attn_norm = ones(c.d_model);
    L.ffn_norm = ones(c.d_model);
    L.wq = random_linear(rng, c.q_width(), c.d_model);
    L.wk = random_linear(rng, c.kv_width(), c.d_model);
    L.wv = random_linear(rng, c.kv_width(), c.d_model);
    L.wo = random_linear(rng, c.d_model, c.q_width());
    L.w_gate = random_linear(rng, c.d_ff, c.d_model);
    L.w_up = random_linear(rng, c.d_ff, c.d_model);
    L.w_down = random_linear(rng, c.d_model, c.d_ff);
    w.layers.push_back(std::move(L));
  }
  w.output_norm = ones(c.d_model);
  w.output = random_linear(rng, c.vocab_size, c.d_model);
  return infer::Llama(c, std::move(w), infer::Device::cpu());
}

}  // namespace exercise
