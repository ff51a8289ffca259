// Exercise 02 (chunked prefill) — reference solution.
#include <algorithm>
#include <stdexcept>

#include "chunked_prefill.hpp"

namespace exercise {

infer::Tensor chunked_prefill(infer::Llama& model, std::span<const int32_t> prompt, infer::KvStore& cache, int chunk) {
  if (chunk < 1) throw std::invalid_argument("chunked_prefill: chunk must be at least 1 token");
  if (prompt.empty()) throw std::invalid_argument("chunked_prefill: empty prompt");
  const auto P = std::ssize(prompt);
  infer::Tensor logits;
  for (int64_t pos0 = 0; pos0 < P; pos0 += chunk) {
    // The last chunk may be shorter. pos0 places the chunk's tokens (RoPE) and its keys and
    // values (the cache slots); attention then covers every earlier chunk through the cache.
    const int64_t n = std::min<int64_t>(chunk, P - pos0);
    logits = model.forward(prompt.subspan(static_cast<std::size_t>(pos0), static_cast<std::size_t>(n)), pos0, cache);
  }
  return logits;  // only the last chunk's last token predicts what follows the prompt
}

}  // namespace exercise
