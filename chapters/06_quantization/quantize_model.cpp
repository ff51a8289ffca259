#include "quantize_model.hpp"

#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"
#include "packed_linear.hpp"

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

QuantizedModel quantize_for_kernels(Llama& model, const ReferenceWeights& ref, PackedFormat format,
                                    Activations activations) {
  Stopwatch clock;
  const auto scheme = scheme_for(format);
  QuantizedModel info;
  info.scheme = scheme->name();
  const Device dev = model.device();
  auto counted = [&](std::unique_ptr<PackedLinear> linear, const Tensor& w) {
    info.weights += w.numel();
    info.packed_bytes += static_cast<int64_t>(linear->weight_bytes());
    return linear;
  };

  // The projections' packed bytes lie one after another (64-byte aligned) in one buffer: a 4-bit
  // layer is ~2 MB, under the 2 MiB from which lib's allocator offers huge pages, whereas a 4-bit
  // model's ~65 MB lie on them but for the ends (tests/bench/bench_pages measures what it saves).
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const Tensor& p : ref.projections) {
    offsets.push_back(total);
    total += (scheme->packed_bytes(p.dim(0), p.dim(1)) + 63) / 64 * 64;
  }
  const auto buffer = std::make_shared<Storage>(dev, total);
  LlamaWeights& w = model.weights();
  std::size_t i = 0;
  for (LayerWeights& L : w.layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      const Tensor& p = ref.projections.at(i);
      *slot = counted(std::make_unique<PackedLinear>(pack_weight(p, format), format, buffer, offsets[i], activations), p);
      ++i;
    }
  if (i != ref.projections.size()) throw std::logic_error("quantize_for_kernels: the reference belongs to another model");

  auto packed = [&](const Tensor& m) { return counted(std::make_unique<PackedLinear>(m, format, dev, activations), m); };
  if (ref.tied) {
    auto output = packed(ref.embedding);
    w.token_embedding = std::make_shared<PackedEmbedding>(*output);  // the packed output matrix is the embedding now
    w.output = std::move(output);
    if (ref.embedding.device().is_cpu() && ref.embedding.dtype() == DType::f32) {
      const std::span<const float> e(ref.embedding.host<float>(), ref.embedding.numel());
      info.embedding_error = relative_error(e, round_trip(*scheme, e, ref.embedding.dim(0), ref.embedding.dim(1)));
    }
  } else {
    w.output = packed(ref.output);
    w.token_embedding = std::make_shared<DenseEmbedding>(ref.embedding);
  }
  info.seconds = clock.seconds();
  return info;
}

QuantizedModel quantize_for_kernels(Llama& model, PackedFormat format, Activations activations) {
  LlamaWeights& w = model.weights();
  ReferenceWeights current;
  for (LayerWeights& L : w.layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) current.projections.push_back(dense_weight(*slot, "a projection"));
  current.embedding = dense_table(w, "quantize_for_kernels: the model is already packed");
  current.output = dense_weight(w.output, "the output matrix");
  current.tied = model.config().tied_embeddings || current.output.raw() == current.embedding.raw();
  return quantize_for_kernels(model, current, format, activations);
}

Llama packed_copy(const Llama& model, const ReferenceWeights& reference, PackedFormat format, QuantizedModel* info,
                  Activations activations) {
  LlamaWeights w;
  w.output_norm = model.weights().output_norm;
  for (const LayerWeights& L : model.weights().layers) {
    LayerWeights copy;
    copy.attn_norm = L.attn_norm;
    copy.ffn_norm = L.ffn_norm;
    w.layers.push_back(std::move(copy));
  }
  Llama packed(model.config(), std::move(w), model.device());
  const QuantizedModel q = quantize_for_kernels(packed, reference, format, activations);
  if (info != nullptr) *info = q;
  return packed;
}

}  // namespace infer::quant
