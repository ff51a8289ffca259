// Causal grouped-query attention over a batch of B sequences, forward and backward.
//
//   q[B·S, H·D], k[B·S, H_kv·D], v[B·S, H_kv·D] → out[B·S, H·D]   (S tokens per sequence)
//   query head h reads key/value head h / (H / H_kv); token t of a sequence sees its tokens 0…t.
//
// For one query row and head, with scale = 1/√D:
//   s_j = scale · q·k_j,   p = softmax(s) over j ≤ t,   out = Σ_j p_j v_j
// and backwards, given d_out:
//   dp_j = d_out·v_j,   dv_j += p_j d_out,   ds_j = p_j (dp_j − Σ_i p_i dp_i)   (softmax)
//   dq += scale Σ_j ds_j k_j,   dk_j += scale ds_j q
// A key/value head collects gradients from all the query heads of its group.
#pragma once

#include <cstdint>

namespace infer::train {

struct AttentionShape {
  int64_t B = 1;  // sequences            (B and S are row counts: int64_t, as they enter offset products)
  int64_t S = 1;  // tokens per sequence
  int H = 1;      // query heads
  int H_kv = 1;   // key/value heads (H_kv divides H)
  int D = 1;      // head dimension

  int64_t q_stride() const { return static_cast<int64_t>(H) * D; }      // floats per row of q
  int64_t kv_stride() const { return static_cast<int64_t>(H_kv) * D; }  // floats per row of k, v
  int group() const { return H / H_kv; }                                // query heads per key/value head
  int64_t work() const { return B * H * S * S * D; }  // multiply-adds of q·k
};

// Saves probs[B, H, S, S] (p of query t over key j at [b][h][t][j], 0 for j > t).
template <class T>
void attention_forward(const T* q, const T* k, const T* v, const AttentionShape& shape, T* probs, T* out);

// Adds the gradients into dq, dk, dv.
template <class T>
void attention_backward(const T* d_out, const T* q, const T* k, const T* v, const T* probs,
                        const AttentionShape& shape, T* dq, T* dk, T* dv);

}  // namespace infer::train
