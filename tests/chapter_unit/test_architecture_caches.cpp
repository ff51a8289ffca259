// Chapter 03's table 8 (chapters/03_gqa/tables/architecture_caches.hpp): the caches of latent,
// state-space and hybrid architectures, against bytes worked out by hand from the published sizes
// and from this model's shape (SmolLM2-135M: 30 layers, d = 576, 9 query heads, 3 kv heads of 64).
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "architecture_caches.hpp"

using namespace infer;
using namespace infer::gqa;

namespace {

const LlamaConfig& smol() {
  static const LlamaConfig c = LlamaConfig::from_shape(30, 576, 9, 3, 1536, 49152, 8192);
  return c;
}

const ArchitecturePair& pair(const std::string& model) {
  static const std::vector<ArchitecturePair> pairs = architecture_pairs(smol());
  for (const ArchitecturePair& p : pairs)
    if (p.published.model == model) return p;
  FAIL("no architecture " << model);
  return pairs.front();
}

}  // namespace

TEST_CASE("architecture caches: MLA's latent per token, DeepSeek-V3 and this model's shape", "[gqa][architectures]") {
  // DeepSeek-V3: 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B; one vector, no factor 2.
  const CacheShape& v3 = pair("DeepSeek-V3").published;
  CHECK(v3.bytes_per_token() == 61 * (512 + 64) * 2);
  CHECK(v3.bytes_per_token() == 70272);  // 68.6 KiB
  CHECK(v3.state_bytes() == 0);
  CHECK(v3.bytes_at(131072) == 70272LL * 131072);
  // On this model's shape, DeepSeek-V2's rule: d_c = 4·64 = 256, d_R = 64/2 = 32: 30 × 288 × 2 B,
  // three quarters of its GQA cache (2 · 30 · 3 · 64 · 2 = 23 040 B).
  CHECK(pair("DeepSeek-V3").own.bytes_per_token() == 17280);
  CHECK(own_shape(smol(), "x").bytes_per_token() == 23040);
}

TEST_CASE("architecture caches: a recurrent state is the same at every length", "[gqa][architectures]") {
  // Mamba-2-2.7B: d_inner = 2·2560 = 5120, d_state 128, d_conv 4, 1 group:
  // 5120·128 + 3·(5120 + 2·128) = 655 360 + 16 128 = 671 488 elements per layer, 64 layers, 2 B.
  const ArchitecturePair& mamba2 = pair("Mamba-2-2.7B");
  CHECK(mamba2.published.bytes_per_token() == 0);
  // This model's shape: 1152·128 + 3·(1152 + 256) = 151 680 elements × 30 layers × 2 B.
  CHECK(mamba2.own.bytes_per_token() == 0);
  for (int64_t n : {0, 1, 4096, 131072, 1 << 20}) {
    CHECK(mamba2.published.bytes_at(n) == 85950464);  // 64 · 671 488 · 2
    CHECK(mamba2.own.bytes_at(n) == 9100800);         // 30 · 151 680 · 2
  }

  // Jamba-v0.1: attention at layers 4, 12, 20, 28 with 8 kv heads of 128: 4 · 2·8·128 · 2 = 16 384 B per
  // token (the paper's 4 GB of cache at 256k tokens); 28 Mamba layers of 8192·16 + 3·8192 = 155 648.
  const CacheShape& jamba = pair("Jamba-v0.1").published;
  CHECK(jamba.bytes_per_token() == 16384);
  CHECK(jamba.state_bytes() == 28 * 155648 * 2);  // 8 716 288
  CHECK(jamba.bytes_at(262144) == (int64_t{4} << 30) + 8716288);
  // This model's shape: layers 4, 12, 20, 28 of 30 attend (4 · 2·3·64 · 2 = 3 072 B per token); 26
  // Mamba layers of 1152·16 + 3·1152 = 21 888 elements.
  CHECK(pair("Jamba-v0.1").own.bytes_per_token() == 3072);
  CHECK(pair("Jamba-v0.1").own.state_bytes() == 26 * 21888 * 2);

  // Qwen3-Next-80B-A3B: 12 of 48 layers full with 2 kv heads of 256 (12 · 2·2·256 · 2 = 24 576 B per
  // token); 36 Gated DeltaNet layers of 32·128·128 + 3·(2·16·128 + 32·128) = 524 288 + 24 576.
  const CacheShape& qwen = pair("Qwen3-Next-80B-A3B").published;
  CHECK(qwen.bytes_per_token() == 24576);
  CHECK(qwen.state_bytes() == 36 * 548864 * 2);  // 39 518 208
  CHECK(qwen.bytes_at(4096) - qwen.bytes_at(1024) == 3072 * 24576);  // only the attention layers grow
  // This model's shape: 7 full layers (4th, 8th, … 28th), 23 DeltaNet layers on its 9 heads of 64:
  // 9·64·64 + 3·(2·9·64 + 9·64) = 36 864 + 5 184 = 42 048 elements.
  CHECK(pair("Qwen3-Next-80B-A3B").own.bytes_per_token() == 7 * 768);
  CHECK(pair("Qwen3-Next-80B-A3B").own.state_bytes() == 23 * 42048 * 2);
}

TEST_CASE("architecture caches: the state formulas and the layer patterns", "[gqa][architectures]") {
  const LayerState m = mamba_state(1152, 128, 4, 1);
  CHECK(m.elements == 151680);
  CHECK(m.formula == "1152·128 + 3·(1152 + 2·128)");
  CHECK(mamba_state(8192, 16, 4, 0).elements == 155648);  // Mamba-1: the convolution sees x only
  CHECK(mamba_state(8192, 16, 4, 0).formula == "8192·16 + 3·8192");
  CHECK(mamba_state(100, 10, 1, 2).elements == 1000);  // a convolution of width 1 keeps no inputs
  CHECK(delta_net_state(16, 32, 128, 128, 4).elements == 548864);
  CHECK(delta_net_state(16, 32, 128, 128, 4).formula == "32·128·128 + 3·(2·16·128 + 32·128)");
  CHECK_THROWS_AS(mamba_state(0, 16, 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(delta_net_state(16, 32, 128, 128, 0), std::invalid_argument);

  CHECK(periodic_layers(32, 8, 4) == 4);  // 4, 12, 20, 28
  CHECK(periodic_layers(30, 8, 4) == 4);
  CHECK(periodic_layers(28, 8, 4) == 3);  // 4, 12, 20
  CHECK(periodic_layers(4, 8, 4) == 0);
  CHECK(periodic_layers(5, 8, 4) == 1);
  CHECK(periodic_layers(48, 4, 3) == global_layers(48, 4));  // every 4th counted from 1
  CHECK_THROWS_AS(periodic_layers(30, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(periodic_layers(30, 8, 8), std::invalid_argument);

  // Layers without a window or a state are chapter 03's per-token formula, and a state adds to it.
  CacheShape s{"", "", "", "", 2, {kv_layers(2, 3, 4), state_layers(3, LayerState{"", 100})}};
  CHECK(s.bytes_per_token() == 2 * 24 * 2);
  CHECK(s.bytes_at(10) == 10 * 2 * 24 * 2 + 3 * 100 * 2);
}
