// The forward pass for many sequences at once. Their new tokens are stacked into one [N, d]
// matrix, so that every weight is read once for all N tokens: one matrix-matrix product per
// weight instead of N matrix-vector products. The layers are forward()'s (model/llama.cpp);
// only attention keeps the sequences apart.
#include <stdexcept>

#include <fmt/format.h>

#include "model/llama.hpp"

namespace infer {
namespace {

// Attention for a stacked batch: rows of q, k and v belong to the chunks in order, and each
// chunk's rows attend through its own KvStore over its own past.
class ChunkedAttention : public KvStore {
 public:
  explicit ChunkedAttention(std::span<const SequenceChunk> chunks) : chunks_(chunks) {}
  void attend(int layer, int64_t, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    int64_t row = 0;
    for (const SequenceChunk& ch : chunks_) {
      const auto n = std::ssize(ch.tokens);
      Tensor out_rows = out.rows(row, n);
      ch.kv->attend(layer, ch.pos0, q.rows(row, n), k.rows(row, n), v.rows(row, n), out_rows);
      row += n;
    }
  }

 private:
  std::span<const SequenceChunk> chunks_;
};

}  // namespace

// the-change: begin Llama::forward_batch
Tensor Llama::forward_batch(std::span<const SequenceChunk> chunks) const {
  const LlamaConfig& c = config_;

  // The batch as one list of token ids and their positions in their own sequences.
  std::vector<int32_t> ids, positions;
  int64_t n_logit_rows = 0;
  for (const SequenceChunk& ch : chunks) {
    if (ch.tokens.empty() || ch.kv == nullptr) throw std::invalid_argument("forward: empty chunk or no KvStore");
    if (ch.pos0 < 0 || ch.pos0 + std::ssize(ch.tokens) > c.context_length)
      throw std::invalid_argument(fmt::format("forward: positions {}…{} exceed the context length {}",
                                              ch.pos0, ch.pos0 + std::ssize(ch.tokens) - 1,
                                              c.context_length));
    for (int64_t i = 0; i < std::ssize(ch.tokens); ++i) {
      ids.push_back(ch.tokens[i]);
      positions.push_back(static_cast<int32_t>(ch.pos0 + i));
    }
    n_logit_rows += ch.all_logits ? std::ssize(ch.tokens) : 1;
  }
  const auto N = std::ssize(ids);

  Tensor x({N, c.d_model}, DType::f32, device_);  // the residual stream of every sequence [N, d]
  weights_.embed(ids, x);
  Activations a(c, N, device_);
  ChunkedAttention attention(chunks);
  for (int l = 0; l < c.n_layers; ++l) layer(l, x, a, positions, attention, 0);

  // Only the rows whose next-token distribution was asked for, gathered before the output matrix.
  Tensor wanted({n_logit_rows, c.d_model}, DType::f32, device_);
  int64_t row = 0, out_row = 0;
  for (const SequenceChunk& ch : chunks) {
    const auto n = std::ssize(ch.tokens);
    const int64_t take = ch.all_logits ? n : 1;
    Tensor dst = wanted.rows(out_row, take);
    dst.copy_from(x.rows(row + n - take, take));
    row += n;
    out_row += take;
  }
  return logits(wanted);
}
// the-change: end Llama::forward_batch

}  // namespace infer
