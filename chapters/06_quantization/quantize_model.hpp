// Chapter 06, part 1, file 3: a whole model quantized "in place".
//
// quantize_model() round-trips every weight matrix of the model through a scheme and puts the
// result back as a plain fp32 DenseLinear: Ŵ = dequantize(quantize(W)). The forward pass does
// not change at all; the model simply computes with the numbers the scheme could represent.
// That is exactly what the quality of a quantized model depends on (a kernel that multiplies
// from the packed codes computes the same products, up to fp32 summation order), so it is the
// honest way to measure quality — but it saves no memory and no time here. The packed sizes
// are reported beside it.
//
// Which matrices: the 7 projections of every layer and the token-embedding matrix. The default
// model ties its output matrix to the embedding, so both see the same Ŵ (quantized once), as in
// a GGUF file; an untied output matrix is quantized on its own. The norms stay fp32 (they are
// 0.02% of the weights), as in llama.cpp's quantized files.
//
// The starting point is always the reference weights kept by keep_reference(), never the result
// of a previous scheme: quantizing an already-quantized model would compound the errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/llama.hpp"
#include "quant_scheme.hpp"

namespace infer::quant {

struct NamedMatrix {
  std::string name;  // GGUF-style, e.g. "blk.12.ffn_down"
  Tensor weight;     // [out, in] f32 on the CPU (shares the model's storage)
};

// The model's projection matrices, layer by layer in the order q, k, v, o, gate, up, down.
// Throws std::runtime_error when a projection is not a DenseLinear of f32 on the CPU.
std::vector<NamedMatrix> projection_matrices(const LlamaWeights& weights);

// The 7 projection slots of a layer, in projection_matrices() order: q, k, v, o, gate, up, down.
std::vector<std::unique_ptr<Linear>*> projection_slots(LayerWeights& layer);

// The model's fp32 weights before any scheme is applied (shared storage, no copy).
struct ReferenceWeights {
  std::vector<Tensor> projections;  // 7 per layer: q, k, v, o, gate, up, down
  Tensor embedding;                 // [V, d]
  Tensor output;                    // [V, d]; the same storage as embedding when tied
  bool tied = false;
};
// Throws std::runtime_error for a model whose matrices are not dense f32 on the CPU.
ReferenceWeights keep_reference(const Llama& model);
// The model's own dense matrices, on any device and in any dtype (no copy): what part 2 packs
// when no reference was kept (packed/pack_model.hpp). Throws std::runtime_error for a layer that
// is not a DenseLinear (a model already packed).
ReferenceWeights dense_matrices(Llama& model);

struct QuantizedModel {
  std::string scheme;           // "fp32" for the reference
  int64_t weights = 0;          // weights in the quantized matrices (a tied matrix once)
  int64_t packed_bytes = 0;     // their packed size under the scheme (fp32: 4 per weight)
  double embedding_error = 0;   // ‖E − Ê‖ / ‖E‖ of the embedding matrix
  double seconds = 0;           // time to quantize and dequantize everything
  double bits_per_weight() const { return weights > 0 ? 8.0 * packed_bytes / weights : 0; }
};

// Replaces the model's matrices with the round trip of `reference` through `scheme`, or with
// the reference itself when scheme is nullptr.
QuantizedModel quantize_model(Llama& model, const ReferenceWeights& reference, const QuantScheme* scheme);

}  // namespace infer::quant
