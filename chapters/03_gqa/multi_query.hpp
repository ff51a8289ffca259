// Chapter 03's layer, part 2: fewer key/value heads by mean-pooling, the multi-query experiment.
//
// The GQA paper (Ainslie et al., 2023) converts a multi-head checkpoint to grouped-query attention
// by mean-pooling the key and value projection heads of each group into one head, then training
// a little more ("uptraining"). Here we apply the recipe one step further and without any
// training: the 3 key/value heads of the default model become 1 (multi-query attention, MQA), so
// the cache shrinks 3× again, and we measure what it costs in quality.
//
// The k projection wk is a [H_kv·D, d] matrix whose rows [g·D, (g+1)·D) produce head g (the same
// for wv). Pooling to H_new heads averages, for each new head j, the r = H_kv / H_new consecutive
// blocks of heads j·r … j·r + r - 1. Query head h then reads new head h / (H / H_new): every
// query head of an old group keeps reading (the average of) its group's head.
#pragma once

#include "model/llama.hpp"
#include "tensor/tensor.hpp"

namespace infer {

// w: [n_heads·head_dim, in] → [new_heads·head_dim, in], new head j = mean of heads j·r … j·r+r-1
// (r = n_heads / new_heads, which must be a whole number). Any device; computed on the host, the
// result is f32 on w's device.
Tensor pool_heads(const Tensor& w, int n_heads, int new_heads);

// A copy of `weights` that shares every tensor's storage (nothing is duplicated in memory).
// Linear layers must be DenseLinear (throws std::invalid_argument naming the layer otherwise).
LlamaWeights share_weights(const LlamaWeights& weights);

// The model with its key/value heads mean-pooled to `new_kv_heads` (1: multi-query attention).
// Only wk and wv are new matrices; every other weight shares its storage with `model`
// (reference-counted, so either model may be destroyed first).
Llama pool_kv_heads(const Llama& model, int new_kv_heads);

}  // namespace infer
