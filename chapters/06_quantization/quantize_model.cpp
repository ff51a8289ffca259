#include "quantize_model.hpp"

#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"

namespace infer::quant {
namespace {

const Tensor& dense_weight(const std::unique_ptr<Linear>& linear, const char* what) {
  const auto* dense = dynamic_cast<const DenseLinear*>(linear.get());
  if (dense == nullptr) throw std::runtime_error(std::string(what) + " is not a DenseLinear");
  return dense->weight();
}

// The embedding table, when it is a dense one.
const Tensor& dense_table(const LlamaWeights& w, const char* what) {
  const auto* dense = dynamic_cast<const DenseEmbedding*>(w.token_embedding.get());
  if (dense == nullptr) throw std::runtime_error(what);
  return dense->table();
}

}  // namespace

std::vector<NamedMatrix> projection_matrices(const LlamaWeights& weights) {
  std::vector<NamedMatrix> out;
  auto add = [&](const std::string& name, const std::unique_ptr<Linear>& linear) {
    const auto* dense = dynamic_cast<const DenseLinear*>(linear.get());
    if (dense == nullptr || dense->weight().dtype() != DType::f32 || !dense->weight().device().is_cpu())
      throw std::runtime_error(fmt::format("{}: not a dense f32 matrix on the CPU (storage {})", name,
                                           linear ? linear->storage() : "none"));
    out.push_back({name, dense->weight()});
  };
  for (std::size_t l = 0; l < weights.layers.size(); ++l) {
    const LayerWeights& L = weights.layers[l];
    const std::string p = fmt::format("blk.{}.", l);
    add(p + "attn_q", L.wq);
    add(p + "attn_k", L.wk);
    add(p + "attn_v", L.wv);
    add(p + "attn_output", L.wo);
    add(p + "ffn_gate", L.w_gate);
    add(p + "ffn_up", L.w_up);
    add(p + "ffn_down", L.w_down);
  }
  return out;
}

std::vector<std::unique_ptr<Linear>*> projection_slots(LayerWeights& L) {
  return {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
}

ReferenceWeights dense_matrices(Llama& model) {
  LlamaWeights& w = model.weights();
  ReferenceWeights current;
  for (LayerWeights& L : w.layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L))
      current.projections.push_back(dense_weight(*slot, "a projection"));
  current.embedding = dense_table(w, "the model is already packed");
  current.output = dense_weight(w.output, "the output matrix");
  current.tied = model.config().tied_embeddings || current.output.raw() == current.embedding.raw();
  return current;
}

ReferenceWeights keep_reference(const Llama& model) {
  const LlamaWeights& w = model.weights();
  ReferenceWeights ref;
  for (NamedMatrix& m : projection_matrices(w)) ref.projections.push_back(std::move(m.weight));
  ref.embedding = dense_table(w, "quantization needs the model's matrices in f32 on the CPU");
  ref.output = dense_weight(w.output, "the output matrix");
  if (!ref.embedding.device().is_cpu() || ref.embedding.dtype() != DType::f32 || ref.output.dtype() != DType::f32 ||
      !ref.output.device().is_cpu())
    throw std::runtime_error("quantization needs the model's matrices in f32 on the CPU");
  ref.tied = ref.output.raw() == ref.embedding.raw();
  return ref;
}

// the-change: begin quantize_model
QuantizedModel quantize_model(Llama& model, const ReferenceWeights& ref, const QuantScheme* scheme) {
  Stopwatch clock;
  QuantizedModel info;
  info.scheme = scheme ? scheme->name() : "fp32";

  // Ŵ of one matrix as a new tensor (the reference stays untouched).
  double last_error = 0;
  auto apply = [&](const Tensor& w) -> Tensor {
    const int64_t rows = w.dim(0), cols = w.dim(1);
    info.weights += rows * cols;
    if (scheme == nullptr) {
      info.packed_bytes += static_cast<int64_t>(w.nbytes());
      last_error = 0;
      return w;
    }
    const std::span<const float> values(w.host<float>(), rows * cols);
    const PackedMatrix packed = scheme->quantize(values, rows, cols);
    info.packed_bytes += std::ssize(packed.bytes);
    Tensor out({rows, cols});
    std::span<float> dst(out.host<float>(), rows * cols);
    scheme->dequantize(packed, dst);
    last_error = relative_error(values, dst);
    return out;
  };

  LlamaWeights& w = model.weights();
  std::size_t i = 0;
  for (LayerWeights& L : w.layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) *slot = std::make_unique<DenseLinear>(apply(ref.projections.at(i++)));
  if (i != ref.projections.size()) throw std::logic_error("quantize_model: the reference belongs to another model");

  const Tensor embedding = apply(ref.embedding);
  w.token_embedding = std::make_shared<DenseEmbedding>(embedding);
  info.embedding_error = last_error;
  if (ref.tied)
    w.output = std::make_unique<DenseLinear>(embedding);  // one Ê for both uses
  else
    w.output = std::make_unique<DenseLinear>(apply(ref.output));
  info.seconds = clock.seconds();
  return info;
}
// the-change: end quantize_model

}  // namespace infer::quant
