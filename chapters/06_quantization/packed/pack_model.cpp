#include "pack_model.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include "measure/timing.hpp"
#include "packed_linear.hpp"

namespace infer::quant {

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
  return quantize_for_kernels(model, dense_matrices(model), format, activations);
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
