// Grades exercise 03 (cache bytes) against hand-computed sizes of published models, and
// against chapter 03's GQA formula where the two must agree.
#include <iostream>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "cache_bytes.hpp"
#include "grouped_kv_cache.hpp"

namespace {

// SmolLM2-135M, the course's model: 30 layers, 9 query heads, 3 key/value heads of dimension 64.
infer::LlamaConfig smollm2() { return infer::LlamaConfig::from_shape(30, 576, 9, 3, 1536, 49152, 8192); }

}  // namespace

TEST_CASE("MLA: DeepSeek-V2 caches 512 + 64 elements per layer, once", "[exercise]") {
  // 60 layers × (512 + 64) × 2 bytes: no separate key and value.
  CHECK(exercise::mla_bytes_per_token(60, 512, 64, 2) == 69'120);
  CHECK(exercise::mla_bytes_per_token(1, 512, 0, 4) == 2'048);
}

TEST_CASE("cross-layer sharing by 1 is plain GQA", "[exercise]") {
  const auto c = smollm2();
  CHECK(exercise::cross_layer_bytes_per_token(c, 1, 2) == infer::kv_bytes_per_token(30, 3, 64, 2));  // 23 040
}

TEST_CASE("cross-layer sharing divides the caching layers", "[exercise]") {
  const auto c = smollm2();
  CHECK(exercise::cross_layer_bytes_per_token(c, 2, 2) == 15 * 2 * 3 * 64 * 2);
  CHECK(exercise::cross_layer_bytes_per_token(c, 3, 4) == 10 * 2 * 3 * 64 * 4);
}

TEST_CASE("a last, shorter group of layers still has a cache", "[exercise]") {
  const auto c = smollm2();
  CHECK(exercise::cross_layer_bytes_per_token(c, 4, 2) == 8 * 2 * 3 * 64 * 2);    // ⌈30 / 4⌉ = 8
  CHECK(exercise::cross_layer_bytes_per_token(c, 30, 2) == 1 * 2 * 3 * 64 * 2);
  CHECK(exercise::cross_layer_bytes_per_token(c, 64, 2) == 1 * 2 * 3 * 64 * 2);   // more than the layers
}

TEST_CASE("sharing by fewer than one layer is refused", "[exercise]") {
  CHECK_THROWS_AS(exercise::cross_layer_bytes_per_token(smollm2(), 0, 2), std::invalid_argument);
}

TEST_CASE("figure: fp16 cache bytes per token for real shapes", "[exercise][figure]") {
  struct Row {
    const char* name;
    infer::LlamaConfig c;
  };
  const Row rows[] = {{"SmolLM2-135M", smollm2()},
                      {"Llama-2-7B", infer::LlamaConfig::from_shape(32, 4096, 32, 32, 11008, 32000, 4096)},
                      {"Llama-3-8B", infer::LlamaConfig::from_shape(32, 4096, 32, 8, 14336, 128256, 8192)},
                      {"Llama-2-70B", infer::LlamaConfig::from_shape(80, 8192, 64, 8, 28672, 32000, 4096)}};
  std::cout << "fp16 K/V cache, KiB per token     MHA (H)   GQA (H_kv)   MQA (1)   GQA+CLA2   MLA 512+64\n";
  for (const Row& r : rows) {
    const auto kib = [](std::size_t b) { return static_cast<double>(b) / 1024.0; };
    const auto& c = r.c;
    std::cout << fmt::format("  {:<14} {:>2} layers       {:>8.1f}   {:>10.1f}   {:>7.1f}   {:>8.1f}   {:>10.1f}\n", r.name, c.n_layers,
                             kib(infer::kv_bytes_per_token(c.n_layers, c.n_heads, c.head_dim, 2)),
                             kib(infer::kv_bytes_per_token(c.n_layers, c.n_kv_heads, c.head_dim, 2)),
                             kib(infer::kv_bytes_per_token(c.n_layers, 1, c.head_dim, 2)),
                             kib(exercise::cross_layer_bytes_per_token(c, 2, 2)),
                             kib(exercise::mla_bytes_per_token(c.n_layers, 512, 64, 2)));
  }
  std::cout << fmt::format("  DeepSeek-V2 (60 layers, its own MLA): {:.1f} KiB per token\n",
                           static_cast<double>(exercise::mla_bytes_per_token(60, 512, 64, 2)) / 1024.0);
  CHECK(exercise::mla_bytes_per_token(60, 512, 64, 2) < infer::kv_bytes_per_token(60, 128, 128, 2));
}
