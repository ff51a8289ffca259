// The Llama forward pass for one sequence, top to bottom. Shapes: N new tokens, d model width,
// H query heads and H_kv key/value heads of size D, F MLP width, V vocabulary.
#include "model/llama.hpp"

#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer {

// the-change: begin Llama::forward
Tensor Llama::forward(std::span<const int32_t> tokens, int64_t pos0, KvStore& kv, bool all_logits) const {
  const LlamaConfig& c = config_;
  const auto N = std::ssize(tokens);
  if (N == 0) throw std::invalid_argument("forward: no tokens");
  if (pos0 < 0 || pos0 + N > c.context_length)
    throw std::invalid_argument(fmt::format("forward: positions {}…{} exceed the context length {}", pos0,
                                            pos0 + N - 1, c.context_length));
  std::vector<int32_t> positions(N);  // pos0 … pos0+N-1: where RoPE turns q and k
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(pos0));

  Tensor x({N, c.d_model}, DType::f32, device_);  // the residual stream [N, d]
  weights_.embed(tokens, x);                      // x = E[tokens]
  Activations a(c, N, device_);
  for (int l = 0; l < c.n_layers; ++l) layer(l, x, a, positions, kv, pos0);  // x [N, d] → x [N, d]
  // The next-token distribution after every position (scoring a text) or after the last (generating).
  return logits(all_logits ? x : x.rows(N - 1, 1));
}
// the-change: end Llama::forward

Llama::Activations::Activations(const LlamaConfig& c, int64_t N, const Device& dev)
    : h({N, c.d_model}, DType::f32, dev),       // normalised input of a sub-layer [N, d]
      q({N, c.q_width()}, DType::f32, dev),     // queries [N, H·D]
      k({N, c.kv_width()}, DType::f32, dev),    // keys    [N, H_kv·D]
      v({N, c.kv_width()}, DType::f32, dev),    // values  [N, H_kv·D]
      attn({N, c.q_width()}, DType::f32, dev),  // attention output, heads side by side [N, H·D]
      proj({N, c.d_model}, DType::f32, dev),    // a sub-layer's output, added to x [N, d]
      gate({N, c.d_ff}, DType::f32, dev),       // MLP hidden [N, F]
      up({N, c.d_ff}, DType::f32, dev) {}

void Llama::layer(int l, Tensor& x, Activations& a, std::span<const int32_t> positions, KvStore& kv,
                  int64_t pos0) const {
  const LlamaConfig& c = config_;
  const LayerWeights& L = weights_.layers[l];

  // --- attention sub-layer: x += Wo · attention(rope(Wq h), rope(Wk h), Wv h)
  ops::rmsnorm(x, L.attn_norm, c.norm_eps, a.h);
  L.wq->forward(a.h, a.q);  // [N, d] → [N, H·D]
  L.wk->forward(a.h, a.k);  // [N, d] → [N, H_kv·D]
  L.wv->forward(a.h, a.v);
  ops::rope(a.q, c.n_heads, positions, c.rope_theta);
  ops::rope(a.k, c.n_kv_heads, positions, c.rope_theta);
  kv.attend(l, pos0, a.q, a.k, a.v, a.attn);  // each query over its own position and every earlier one
  L.wo->forward(a.attn, a.proj);              // [N, H·D] → [N, d]
  ops::add_inplace(x, a.proj);

  // --- MLP sub-layer: x += W_down · (silu(W_gate h) ⊙ W_up h)
  ops::rmsnorm(x, L.ffn_norm, c.norm_eps, a.h);
  L.w_gate->forward(a.h, a.gate);  // [N, d] → [N, F]
  L.w_up->forward(a.h, a.up);
  ops::silu_mul(a.gate, a.up, a.gate);
  L.w_down->forward(a.gate, a.proj);  // [N, F] → [N, d]
  ops::add_inplace(x, a.proj);
}

Tensor Llama::logits(const Tensor& rows) const {
  const int64_t R = rows.dim(0);
  Tensor normed({R, config_.d_model}, DType::f32, device_);
  ops::rmsnorm(rows, weights_.output_norm, config_.norm_eps, normed);
  Tensor out({R, config_.vocab_size}, DType::f32, device_);
  weights_.output->forward(normed, out);  // [R, d] → [R, V]
  return out;
}

}  // namespace infer
