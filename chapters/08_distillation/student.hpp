// The student: a Llama of any depth held for training, in the layout of llm.c — every
// trainable number in one flat array `params`, its gradient at the same index in `grads`.
//
//   params = block 0 | block 1 | … | block L−1 | output_norm[d]      (block: see training/train_block.hpp)
//
// The token embedding E[V, d] is frozen, and so is the output projection, which for the course
// model is the same matrix (tied embeddings): logits = rmsnorm(x) · Eᵀ. The backward still
// passes the gradient through Eᵀ to the hidden state, but never forms ∂loss/∂E. Why frozen:
// E holds 28 M of the model's 135 M numbers, its gradient costs another N·V·d multiply-adds per
// step (as much as the logits themselves) and AdamW three more copies of it; and a student that
// keeps the teacher's E speaks in the teacher's token space, where the soft labels live — a
// depth-pruned student has to repair its blocks, not relearn what a token means.
//
// Built from the teacher (Student::from_teacher copies the chosen layers: Minitron's depth
// pruning) or at random (tests). T is float for training, double for the gradient checks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.hpp"
#include "model/llama.hpp"
#include "train_block.hpp"

namespace infer::train {

template <class T>
class Student {
 public:
  // A student of shape `config` with zero parameters and the given frozen matrices. `output`
  // stays empty when the embedding is tied (config.tied_embeddings).
  Student(const LlamaConfig& config, std::vector<T> embedding, std::vector<T> output = {});
  // Layers `keep` (ascending teacher indices) of the teacher, its final norm and its embedding.
  static Student from_teacher(const Llama& teacher, std::span<const int> keep);
  // Every number drawn from the seed: weights ±scale, norm weights 1 ± scale (tests, exercises).
  static Student random(const LlamaConfig& config, uint64_t seed, double scale = 0.1);

  const LlamaConfig& config() const { return config_; }
  const std::vector<T>& embedding() const { return embedding_; }  // [V, d], frozen
  const T* output_matrix() const { return output_.empty() ? embedding_.data() : output_.data(); }  // [V, d]
  const std::vector<T>& output_weights() const { return output_; }  // empty when tied

  std::vector<T> params;  // trainable, flat
  std::vector<T> grads;   // same layout; sized by the first backward
  template <class E>
  BlockTensors<E> block(int layer, E* base) const { return block_tensors(config_, base + layer * block_size_); }
  template <class E>
  E* output_norm(E* base) const { return base + config_.n_layers * block_size_; }

  // Runs B sequences of S tokens (tokens[B·S], each sequence from position 0) and keeps what the
  // backward needs. Returns the logits [B·S, V], valid until the next forward; with
  // want_logits = false stops after the last block (see hidden()).
  const T* forward(std::span<const int32_t> tokens, int B, int S, bool want_logits = true);
  // Adds ∂loss/∂params into grads, given d_logits = ∂loss/∂logits [B·S, V] of the last forward.
  void backward(const T* d_logits);
  void zero_grad();
  // The residual stream of the last forward entering block l ([B·S, d]); l = n_layers: after the last.
  const T* hidden(int l) const { return hidden_[l].data(); }
  // Block l's activations in the last forward (the heads' outputs `att`, the MLP's `a`, …).
  const BlockActivations<T>& activations(int l) const { return acts_[l]; }

 private:
  LlamaConfig config_;
  int64_t block_size_;
  std::vector<T> embedding_, output_;
  // Saved by forward: the stream into each block, each block's activations, the final norm.
  int B_ = 0, S_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<std::vector<T>> hidden_;
  std::vector<BlockActivations<T>> acts_;
  std::vector<T> final_normed_, final_inv_rms_, logits_;
};

// A lib Llama (fp32, CPU) with the student's weights: evaluation with lib's tools.
Llama to_llama(const Student<float>& student);

}  // namespace infer::train
