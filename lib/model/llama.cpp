// One forward pass of a Llama model, top to bottom. Shapes: N tokens in the batch, d model
// width, H query heads and H_kv key/value heads of size D, F MLP width, V vocabulary.
#include "model/llama.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer {

Tensor Llama::forward(std::span<const int32_t> tokens, int64_t pos0, KvStore& kv, bool all_logits) {
  const SequenceChunk chunk{tokens, pos0, &kv, all_logits};
  return forward(std::span<const SequenceChunk>(&chunk, 1));
}

Tensor Llama::forward(std::span<const SequenceChunk> chunks) {
  const LlamaConfig& c = config_;
  const LlamaWeights& W = weights_;

  // The batch as one list of token ids and their positions in their own sequences.
  std::vector<int32_t> ids, positions;
  int64_t n_logit_rows = 0;
  for (const SequenceChunk& ch : chunks) {
    if (ch.tokens.empty() || ch.kv == nullptr) throw std::invalid_argument("forward: empty chunk or no KvStore");
    if (ch.pos0 < 0 || ch.pos0 + static_cast<int64_t>(ch.tokens.size()) > c.context_length)
      throw std::invalid_argument(fmt::format("forward: positions {}…{} exceed the context length {}",
                                              ch.pos0, ch.pos0 + static_cast<int64_t>(ch.tokens.size()) - 1,
                                              c.context_length));
    for (std::size_t i = 0; i < ch.tokens.size(); ++i) {
      ids.push_back(ch.tokens[i]);
      positions.push_back(static_cast<int32_t>(ch.pos0 + static_cast<int64_t>(i)));
    }
    n_logit_rows += ch.all_logits ? static_cast<int64_t>(ch.tokens.size()) : 1;
  }
  const int64_t N = static_cast<int64_t>(ids.size());
  const Device dev = device_;

  Tensor x({N, c.d_model}, DType::f32, dev);       // the residual stream
  Tensor h({N, c.d_model}, DType::f32, dev);       // normalised input of a sub-layer
  Tensor q({N, c.q_width()}, DType::f32, dev);     // queries     [N, H·D]
  Tensor k({N, c.kv_width()}, DType::f32, dev);    // keys        [N, H_kv·D]
  Tensor v({N, c.kv_width()}, DType::f32, dev);    // values      [N, H_kv·D]
  Tensor attn({N, c.q_width()}, DType::f32, dev);  // attention output, heads side by side
  Tensor proj({N, c.d_model}, DType::f32, dev);    // a sub-layer's output, added to x
  Tensor gate({N, c.d_ff}, DType::f32, dev);       // MLP hidden [N, F]
  Tensor up({N, c.d_ff}, DType::f32, dev);

  W.embed(ids, x);  // x[N, d] = E[ids]

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = W.layers[static_cast<std::size_t>(l)];

    // --- attention sub-layer: x += Wo · attention(rope(Wq h), rope(Wk h), Wv h)
    ops::rmsnorm(x, L.attn_norm, c.norm_eps, h);
    L.wq->forward(h, q);  // [N, d] → [N, H·D]
    L.wk->forward(h, k);  // [N, d] → [N, H_kv·D]
    L.wv->forward(h, v);
    ops::rope(q, c.n_heads, positions, c.rope_theta);
    ops::rope(k, c.n_kv_heads, positions, c.rope_theta);
    // Attention is the only step where tokens of different sequences must not mix: each
    // chunk attends through its own KvStore over its own past.
    int64_t row = 0;
    for (const SequenceChunk& ch : chunks) {
      const int64_t n = static_cast<int64_t>(ch.tokens.size());
      Tensor out_rows = attn.rows(row, n);
      ch.kv->attend(l, ch.pos0, q.rows(row, n), k.rows(row, n), v.rows(row, n), out_rows);
      row += n;
    }
    L.wo->forward(attn, proj);  // [N, H·D] → [N, d]
    ops::add_inplace(x, proj);

    // --- MLP sub-layer: x += W_down · (silu(W_gate h) ⊙ W_up h)
    ops::rmsnorm(x, L.ffn_norm, c.norm_eps, h);
    L.w_gate->forward(h, gate);  // [N, d] → [N, F]
    L.w_up->forward(h, up);
    ops::silu_mul(gate, up, gate);
    L.w_down->forward(gate, proj);  // [N, F] → [N, d]
    ops::add_inplace(x, proj);
  }

  // --- output: only the rows whose next-token distribution was asked for
  Tensor last({n_logit_rows, c.d_model}, DType::f32, dev);
  int64_t row = 0, out_row = 0;
  for (const SequenceChunk& ch : chunks) {
    const int64_t n = static_cast<int64_t>(ch.tokens.size());
    const int64_t take = ch.all_logits ? n : 1;
    Tensor dst = last.rows(out_row, take);
    dst.copy_from(x.rows(row + n - take, take));
    row += n;
    out_row += take;
  }
  Tensor normed({n_logit_rows, c.d_model}, DType::f32, dev);
  ops::rmsnorm(last, W.output_norm, c.norm_eps, normed);
  Tensor logits({n_logit_rows, c.vocab_size}, DType::f32, dev);
  W.output->forward(normed, logits);  // [R, d] → [R, V]
  return logits;
}

}  // namespace infer
