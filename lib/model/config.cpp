#include "model/config.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "gguf/gguf_file.hpp"

namespace infer {
namespace {

int positive(const gguf::GgufFile& file, const std::string& key, uint64_t limit = 1u << 24) {
  const uint64_t v = file.get_uint(key);
  if (v == 0 || v > limit)
    throw std::runtime_error(fmt::format("{}: {} = {} is out of range (1…{})", file.path(), key, v, limit));
  return static_cast<int>(v);
}

}  // namespace

LlamaConfig LlamaConfig::from_shape(int layers, int d_model, int heads, int kv_heads, int d_ff, int vocab, int context) {
  LlamaConfig c;
  c.n_layers = layers;
  c.d_model = d_model;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = d_model / heads;
  c.d_ff = d_ff;
  c.vocab_size = vocab;
  c.context_length = context;
  c.tied_embeddings = false;
  return c;
}

LlamaConfig LlamaConfig::from_gguf(const gguf::GgufFile& file) {
  if (!file.has("general.architecture") || file.get_string("general.architecture") != "llama")
    throw std::runtime_error(file.path() + ": not a llama-architecture model (general.architecture = '" +
                             (file.has("general.architecture") ? file.get_string("general.architecture")
                                                               : std::string("missing")) + "')");
  LlamaConfig c;
  c.n_layers = positive(file, "llama.block_count", 1024);
  c.d_model = positive(file, "llama.embedding_length");
  c.n_heads = positive(file, "llama.attention.head_count", 1024);
  c.n_kv_heads = file.has("llama.attention.head_count_kv")
                     ? positive(file, "llama.attention.head_count_kv", 1024)
                     : c.n_heads;
  c.d_ff = positive(file, "llama.feed_forward_length");
  c.context_length = positive(file, "llama.context_length", 1u << 22);
  if (file.has("llama.rope.freq_base")) c.rope_theta = static_cast<float>(file.get_float("llama.rope.freq_base"));
  c.norm_eps = static_cast<float>(file.get_float("llama.attention.layer_norm_rms_epsilon"));
  if (c.n_heads % c.n_kv_heads != 0)
    throw std::runtime_error(fmt::format("{}: {} query heads cannot share {} key/value heads",
                                         file.path(), c.n_heads, c.n_kv_heads));
  // The head size: llama.attention.key_length where the file states it (heads need not be d / H
  // wide: a model whose heads were pruned keeps d and its head size), else d / H.
  if (file.has("llama.attention.key_length")) {
    c.head_dim = positive(file, "llama.attention.key_length", 1u << 16);
    if (file.has("llama.attention.value_length") &&
        file.get_uint("llama.attention.value_length") != static_cast<uint64_t>(c.head_dim))
      throw std::runtime_error(fmt::format("{}: key heads of {} and value heads of {} differ; not supported",
                                           file.path(), c.head_dim, file.get_uint("llama.attention.value_length")));
  } else {
    if (c.d_model % c.n_heads != 0)
      throw std::runtime_error(fmt::format("{}: width {} is not a multiple of {} heads", file.path(),
                                           c.d_model, c.n_heads));
    c.head_dim = c.d_model / c.n_heads;
  }
  if (c.head_dim % 2 != 0)
    throw std::runtime_error(fmt::format("{}: head size {} is odd; rotary embedding needs pairs",
                                         file.path(), c.head_dim));
  if (file.has("llama.rope.dimension_count") && file.get_uint("llama.rope.dimension_count") != static_cast<uint64_t>(c.head_dim))
    throw std::runtime_error(file.path() + ": partial rotary embedding (llama.rope.dimension_count != head size) is not supported");
  // The vocabulary size is the number of rows of the embedding matrix.
  const auto& embd = file.tensor("token_embd.weight");
  if (embd.dims.size() != 2 || embd.dims[0] != static_cast<uint64_t>(c.d_model))
    throw std::runtime_error(file.path() + ": token_embd.weight is not [vocab, d_model]");
  c.vocab_size = static_cast<int>(embd.dims[1]);
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  return c;
}

int64_t LlamaConfig::parameter_count() const {
  const int64_t d = d_model, per_layer = d * q_width() + 2 * d * kv_width() + q_width() * d +
                                         3 * d * d_ff + 2 * d;
  return n_layers * per_layer + static_cast<int64_t>(vocab_size) * d * (tied_embeddings ? 1 : 2) + d;
}

std::string LlamaConfig::describe() const {
  return fmt::format("{} layers, d={}, {} query heads / {} key-value heads of {}, MLP {}, vocab {}, "
                     "context {}, rope θ={:g}{}",
                     n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab_size,
                     context_length, rope_theta, tied_embeddings ? ", tied embeddings" : "");
}

}  // namespace infer
