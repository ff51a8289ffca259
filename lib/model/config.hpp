// The shape of a Llama-architecture model, read from the GGUF metadata `llama.*`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace infer {
namespace gguf { class GgufFile; }

struct LlamaConfig {
  int n_layers = 0;        // transformer blocks
  int d_model = 0;         // width of the residual stream (d)
  int n_heads = 0;         // query heads (H)
  int n_kv_heads = 0;      // key/value heads (H_kv); H_kv < H is grouped-query attention
  int head_dim = 0;        // D = d / H
  int d_ff = 0;            // hidden width of the SwiGLU MLP
  int vocab_size = 0;      // V
  int context_length = 0;  // the longest sequence the model was trained for
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  bool tied_embeddings = false;  // the output matrix is the token-embedding matrix

  // A published shape (untied embeddings, D = d / H, default rope and norm constants): the
  // well-known models that formula and memory tables compare with.
  static LlamaConfig from_shape(int layers, int d_model, int heads, int kv_heads, int d_ff, int vocab, int context);

  // Reads and checks every field (positive, divisible where it must be). Throws
  // std::runtime_error naming the key for a missing or inconsistent value.
  static LlamaConfig from_gguf(const gguf::GgufFile& file);

  int q_width() const { return n_heads * head_dim; }      // H·D
  int kv_width() const { return n_kv_heads * head_dim; }  // H_kv·D
  // Bytes one position takes in this model's K/V cache (kv_bytes_per_token below): H_kv heads,
  // each key/value head stored once, or `stored_heads` heads for a cache that copies them.
  std::size_t kv_bytes_per_token(int bytes_per_value) const;
  std::size_t kv_bytes_per_token(int bytes_per_value, int stored_heads) const;
  int64_t parameter_count() const;
  std::string describe() const;  // one line: layers, widths, heads, vocabulary
};

// Bytes one position takes in a K/V cache: a key and a value vector of `heads_stored` heads of
// head_dim values in each of n_layers layers, 2 · layers · heads · head_dim · bytes_per_value.
inline std::size_t kv_bytes_per_token(int n_layers, int heads_stored, int head_dim, int bytes_per_value) {
  return std::size_t{2} * n_layers * heads_stored * head_dim * bytes_per_value;  // in size_t from the first factor on
}

inline std::size_t LlamaConfig::kv_bytes_per_token(int bytes_per_value, int stored_heads) const {
  return infer::kv_bytes_per_token(n_layers, stored_heads, head_dim, bytes_per_value);
}
inline std::size_t LlamaConfig::kv_bytes_per_token(int bytes_per_value) const {
  return kv_bytes_per_token(bytes_per_value, n_kv_heads);
}

}  // namespace infer
