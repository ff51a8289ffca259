#include "multi_query.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace infer {

Tensor pool_heads(const Tensor& w, int n_heads, int new_heads) {
  if (w.rank() != 2) throw std::invalid_argument("pool_heads: expected a matrix, got " + shape_string(w.shape()));
  if (n_heads <= 0 || new_heads <= 0 || n_heads % new_heads != 0 || w.dim(0) % n_heads != 0)
    throw std::invalid_argument(fmt::format("pool_heads: cannot pool {} heads of a {} matrix into {}",
                                            n_heads, shape_string(w.shape()), new_heads));
  const int64_t head_dim = w.dim(0) / n_heads, in = w.dim(1);
  const int r = n_heads / new_heads;  // old heads per new head
  const std::vector<float> src = w.to_vector();
  std::vector<float> dst(new_heads * head_dim * in, 0.0f);
  const int64_t row_elems = head_dim * in;  // one head's block of rows
  for (int j = 0; j < new_heads; ++j) {
    float* out = dst.data() + j * row_elems;
    // Sum in double, then divide: the mean of r blocks, rounded once.
    for (int64_t e = 0; e < row_elems; ++e) {
      double sum = 0.0;
      for (int i = 0; i < r; ++i) sum += src[(j * r + i) * row_elems + e];
      out[e] = static_cast<float>(sum / r);
    }
  }
  return Tensor::from_vector(dst, {new_heads * head_dim, in}, w.device());
}

namespace {

std::unique_ptr<Linear> share_linear(const Linear* layer, const std::string& name) {
  const auto* dense = dynamic_cast<const DenseLinear*>(layer);
  if (dense == nullptr)
    throw std::invalid_argument(fmt::format("share_weights: {} is stored as {}, only dense layers can be shared",
                                            name, layer ? layer->storage() : std::string("nothing")));
  return std::make_unique<DenseLinear>(dense->weight());  // the Tensor copy shares its storage
}

const Tensor& dense_weight(const Linear* layer, const std::string& name) {
  const auto* dense = dynamic_cast<const DenseLinear*>(layer);
  if (dense == nullptr) throw std::invalid_argument(fmt::format("pool_kv_heads: {} is not a dense layer", name));
  return dense->weight();
}

}  // namespace

LlamaWeights share_weights(const LlamaWeights& w) {
  LlamaWeights out;
  out.token_embedding = w.token_embedding;
  out.output_norm = w.output_norm;
  out.output = share_linear(w.output.get(), "output");
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& s = w.layers[l];
    const std::string p = fmt::format("layer {} ", l);
    LayerWeights d;
    d.attn_norm = s.attn_norm;
    d.ffn_norm = s.ffn_norm;
    d.wq = share_linear(s.wq.get(), p + "wq");
    d.wk = share_linear(s.wk.get(), p + "wk");
    d.wv = share_linear(s.wv.get(), p + "wv");
    d.wo = share_linear(s.wo.get(), p + "wo");
    d.w_gate = share_linear(s.w_gate.get(), p + "w_gate");
    d.w_up = share_linear(s.w_up.get(), p + "w_up");
    d.w_down = share_linear(s.w_down.get(), p + "w_down");
    out.layers.push_back(std::move(d));
  }
  return out;
}

Llama pool_kv_heads(const Llama& model, int new_kv_heads) {
  LlamaConfig config = model.config();
  if (new_kv_heads <= 0 || config.n_kv_heads % new_kv_heads != 0)
    throw std::invalid_argument(fmt::format("pool_kv_heads: {} key/value heads cannot be pooled into {}",
                                            config.n_kv_heads, new_kv_heads));
  LlamaWeights weights = share_weights(model.weights());
  for (std::size_t l = 0; l < weights.layers.size(); ++l) {
    LayerWeights& L = weights.layers[l];
    const LayerWeights& src = model.weights().layers[l];
    const std::string p = fmt::format("layer {} ", l);
    L.wk = std::make_unique<DenseLinear>(pool_heads(dense_weight(src.wk.get(), p + "wk"), config.n_kv_heads, new_kv_heads));
    L.wv = std::make_unique<DenseLinear>(pool_heads(dense_weight(src.wv.get(), p + "wv"), config.n_kv_heads, new_kv_heads));
  }
  config.n_kv_heads = new_kv_heads;
  return Llama(config, std::move(weights), model.device());
}

}  // namespace infer
