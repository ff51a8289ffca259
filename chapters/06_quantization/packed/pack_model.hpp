// Chapter 06, part 2, file 3: a whole model packed for the kernels.
//
// Part 1's quantize_model() put every matrix back as fp32 after its round trip: the model
// computed with Ŵ but still streamed 4 bytes per weight. quantize_for_kernels() keeps the same
// matrices packed instead, each in a PackedLinear (packed_linear.hpp) whose forward() multiplies
// straight from the bytes (packed_kernels.hpp), so a decode step streams what the scheme stores.
#pragma once

#include "packed_kernels.hpp"
#include "quantize_model.hpp"

namespace infer::quant {

// Replaces every projection and the output matrix with a PackedLinear in `format`, on the
// model's device. With tied embeddings (the default model) the fp32 embedding is dropped as
// well: the packed output matrix is its only copy, and the lookup reads its rows (a
// PackedEmbedding on the same bytes, packed_linear.hpp). An untied embedding table stays fp32 (a
// decode step reads one row of it). The model then computes with exactly the Ŵ of
// quantize_model(model, reference, scheme_for(format)), multiplied in another order;
// quantize_model(model, reference, nullptr) turns it back into the fp32 model.
// `activations`: what the layers multiply Ŵ with (packed_kernels.hpp; int8: CPU only).
QuantizedModel quantize_for_kernels(Llama& model, const ReferenceWeights& reference, PackedFormat format,
                                    Activations activations = Activations::fp32);
// The same from the model's own dense matrices, on any device and in any dtype (a CUDA model
// loaded in f16 too); throws std::runtime_error for a layer that is already packed.
QuantizedModel quantize_for_kernels(Llama& model, PackedFormat format, Activations activations = Activations::fp32);
// A second model beside `model`: the same config, device and (shared) norms, its matrices
// packed from `reference` as quantize_for_kernels does. The speed table keeps one per format
// and times them in turn.
Llama packed_copy(const Llama& model, const ReferenceWeights& reference, PackedFormat format,
                  QuantizedModel* info = nullptr, Activations activations = Activations::fp32);

}  // namespace infer::quant
