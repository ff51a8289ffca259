#include "student.hpp"

#include <algorithm>
#include <iterator>  // std::ssize
#include <memory>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "train_kernels.hpp"

namespace infer::train {
namespace {

template <class T>
std::vector<T> converted(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The fp32 matrix of a teacher's linear layer.
std::vector<float> dense_weights(const Linear& layer, const std::string& what) {
  const auto* dense = dynamic_cast<const DenseLinear*>(&layer);
  if (dense == nullptr || dense->weight().dtype() != DType::f32 || !dense->weight().device().is_cpu())
    throw std::invalid_argument(fmt::format("student: the teacher's {} is stored as {}; load the teacher with fp32 "
                                            "weights on the CPU", what, layer.storage()));
  return dense->weight().to_vector();
}

template <class T>
void copy_into(const std::vector<float>& src, T* dst) {
  std::copy(src.begin(), src.end(), dst);
}

}  // namespace

template <class T>
Student<T>::Student(const LlamaConfig& config, std::vector<T> embedding, std::vector<T> output)
    : config_(config), block_size_(block_parameter_count(config)), embedding_(std::move(embedding)),
      output_(std::move(output)) {
  const int64_t Vd = int64_t{config.vocab_size} * config.d_model;
  if (std::ssize(embedding_) != Vd || std::ssize(output_) != (config.tied_embeddings ? 0 : Vd))
    throw std::invalid_argument(fmt::format("student: embedding of {} and output of {} numbers do not fit {}",
                                            embedding_.size(), output_.size(), config.describe()));
  params.assign(config.n_layers * block_size_ + config.d_model, T(0));
}

template <class T>
Student<T> Student<T>::from_teacher(const Llama& teacher, std::span<const int> keep) {
  const LlamaConfig& tc = teacher.config();
  if (keep.empty()) throw std::invalid_argument("student: no layers to keep");
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i] < 0 || keep[i] >= tc.n_layers || (i > 0 && keep[i] <= keep[i - 1]))
      throw std::invalid_argument(fmt::format("student: layers to keep must rise within 0…{}, got {} at place {}",
                                              tc.n_layers - 1, keep[i], i));
  const LlamaWeights& W = teacher.weights();
  const auto* embedding = dynamic_cast<const DenseEmbedding*>(W.token_embedding.get());
  if (embedding == nullptr || embedding->table().dtype() != DType::f32 || !embedding->table().device().is_cpu())
    throw std::invalid_argument("student: the teacher's embedding is not held in fp32 on the CPU");
  LlamaConfig c = tc;
  c.n_layers = static_cast<int>(keep.size());
  Student s(c, converted<T>(embedding->table().to_vector()),
            tc.tied_embeddings ? std::vector<T>{} : converted<T>(dense_weights(*W.output, "output matrix")));
  for (int i = 0; i < c.n_layers; ++i) {
    const LayerWeights& L = W.layers[keep[i]];
    const BlockTensors<T> b = s.block(i, s.params.data());
    copy_into(L.attn_norm.to_vector(), b.attn_norm);
    copy_into(dense_weights(*L.wq, "attn_q"), b.wq);
    copy_into(dense_weights(*L.wk, "attn_k"), b.wk);
    copy_into(dense_weights(*L.wv, "attn_v"), b.wv);
    copy_into(dense_weights(*L.wo, "attn_output"), b.wo);
    copy_into(L.ffn_norm.to_vector(), b.ffn_norm);
    copy_into(dense_weights(*L.w_gate, "ffn_gate"), b.w_gate);
    copy_into(dense_weights(*L.w_up, "ffn_up"), b.w_up);
    copy_into(dense_weights(*L.w_down, "ffn_down"), b.w_down);
  }
  copy_into(W.output_norm.to_vector(), s.output_norm(s.params.data()));
  return s;
}

template <class T>
Student<T> Student<T>::random(const LlamaConfig& c, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2.0 - 1.0; };  // [−1, 1)
  auto draw = [&](std::size_t n, double centre) {
    std::vector<T> v(n);
    for (T& x : v) x = static_cast<T>(centre + scale * uniform());
    return v;
  };
  const int64_t Vd = int64_t{c.vocab_size} * c.d_model;
  Student s(c, draw(Vd, 0.0), c.tied_embeddings ? std::vector<T>{} : draw(Vd, 0.0));
  s.params = draw(s.params.size(), 0.0);
  for (int l = 0; l <= c.n_layers; ++l) {  // the norm weights start near 1
    T* norms[2] = {nullptr, nullptr};
    if (l < c.n_layers) {
      norms[0] = s.block(l, s.params.data()).attn_norm;
      norms[1] = s.block(l, s.params.data()).ffn_norm;
    } else {
      norms[0] = s.output_norm(s.params.data());
    }
    for (T* w : norms)
      if (w != nullptr)
        for (int i = 0; i < c.d_model; ++i) w[i] += T(1);
  }
  return s;
}

template <class T>
const T* Student<T>::forward(std::span<const int32_t> tokens, int B, int S, bool want_logits) {
  const LlamaConfig& c = config_;
  const int N = B * S, d = c.d_model, L = c.n_layers;  // int: N and d go to BLAS
  const int64_t Nd = int64_t{N} * d;                    // elements of one hidden state
  if (B < 1 || S < 1 || std::ssize(tokens) != N || S > c.context_length)
    throw std::invalid_argument(fmt::format("student forward: {} tokens are not {} sequences of {} (context {})",
                                            tokens.size(), B, S, c.context_length));
  B_ = B, S_ = S;
  hidden_.resize(L + 1);
  for (auto& h : hidden_) h.resize(Nd);
  acts_.resize(L);

  // x = E[tokens]
  for (int64_t r = 0; r < N; ++r) {
    const int64_t id = tokens[r];
    if (id < 0 || id >= c.vocab_size)
      throw std::invalid_argument(fmt::format("student forward: token {} outside the vocabulary of {}", id, c.vocab_size));
    std::copy_n(embedding_.data() + id * d, d, hidden_[0].data() + r * d);
  }
  const T* P = params.data();
  for (int l = 0; l < L; ++l)
    block_forward(c, B, S, block(l, P), hidden_[l].data(), acts_[l], hidden_[l + 1].data());
  if (!want_logits) return nullptr;

  // logits = rmsnorm(x) ⊙ output_norm · Eᵀ
  final_normed_.resize(Nd);
  final_inv_rms_.resize(N);
  rmsnorm_forward(hidden_.back().data(), output_norm(P), N, d, c.norm_eps, final_normed_.data(), final_inv_rms_.data());
  logits_.resize(int64_t{N} * c.vocab_size);
  linear_forward(final_normed_.data(), output_matrix(), N, d, c.vocab_size, logits_.data());
  return logits_.data();
}

template <class T>
void Student<T>::backward(const T* d_logits) {
  const LlamaConfig& c = config_;
  const int N = B_ * S_, d = c.d_model;
  if (N == 0 || logits_.empty()) throw std::logic_error("student backward: no forward with logits before it");
  if (grads.size() != params.size()) grads.assign(params.size(), T(0));
  const T* P = params.data();
  const int64_t Nd = int64_t{N} * d;

  // logits = normed · Eᵀ with E frozen: only the gradient of the hidden state, d_normed = d_logits · E.
  std::vector<T> d_normed(Nd), dx(Nd), dx_below(Nd);
  linear_backward<T>(d_logits, final_normed_.data(), output_matrix(), N, d, c.vocab_size, d_normed.data(), nullptr);
  rmsnorm_backward(d_normed.data(), hidden_.back().data(), output_norm(P), final_inv_rms_.data(), N, d, dx.data(),
                   output_norm(grads.data()));
  for (int l = c.n_layers - 1; l >= 0; --l) {
    std::fill(dx_below.begin(), dx_below.end(), T(0));
    block_backward(c, B_, S_, block(l, P), hidden_[l].data(), acts_[l], dx.data(), block(l, grads.data()),
                   dx_below.data());
    std::swap(dx, dx_below);
  }
  // dx is now ∂loss/∂E[tokens]; the frozen embedding takes none of it.
}

template <class T>
void Student<T>::zero_grad() {
  grads.assign(params.size(), T(0));
}

template class Student<float>;
template class Student<double>;

Llama to_llama(const Student<float>& s) {
  const LlamaConfig& c = s.config();
  const int64_t d = c.d_model, V = c.vocab_size, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  auto tensor = [](const float* p, Shape shape) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    return Tensor::from_vector(std::span<const float>(p, n), std::move(shape));
  };
  auto linear = [&](const float* p, int64_t out, int64_t in) { return std::make_unique<DenseLinear>(tensor(p, {out, in})); };
  LlamaWeights w;
  const Tensor embedding = tensor(s.embedding().data(), {V, d});
  w.token_embedding = std::make_shared<DenseEmbedding>(embedding);
  w.output = c.tied_embeddings ? std::make_unique<DenseLinear>(embedding) : linear(s.output_matrix(), V, d);
  const float* P = s.params.data();
  w.output_norm = tensor(s.output_norm(P), {d});
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockTensors<const float> b = s.block(l, P);
    LayerWeights L;
    L.attn_norm = tensor(b.attn_norm, {d});
    L.wq = linear(b.wq, qw, d);
    L.wk = linear(b.wk, kvw, d);
    L.wv = linear(b.wv, kvw, d);
    L.wo = linear(b.wo, d, qw);
    L.ffn_norm = tensor(b.ffn_norm, {d});
    L.w_gate = linear(b.w_gate, F, d);
    L.w_up = linear(b.w_up, F, d);
    L.w_down = linear(b.w_down, d, F);
    w.layers.push_back(std::move(L));
  }
  return Llama(c, std::move(w), Device::cpu());
}

}  // namespace infer::train
