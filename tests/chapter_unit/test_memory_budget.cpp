// Chapter 06's memory budget (chapters/06_quantization/tables/memory_budget.hpp): the arithmetic of the
// "what fits" tables against values worked out by hand here, from the released shapes.
#include "catch_compat.hpp"

#include <cstdint>
#include <string>

#include "memory_budget.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

const NamedConfig& model(const std::string& name) {
  static const std::vector<NamedConfig> models = llama2_models();
  for (const NamedConfig& m : models)
    if (m.name == name) return m;
  FAIL("no model " << name);
  return models.front();
}

constexpr double kOneGiB = 1073741824.0;  // 2^30, written out here

}  // namespace

TEST_CASE("memory budget: KV bytes per token from layers, KV heads and head_dim", "[quant][memory]") {
  // 2 (K and V) × layers × KV heads × head_dim × 2 bytes (fp16)
  auto per_token = [](const NamedConfig& m, int bytes) { return memory_budget(m, {"fp16", 16}, 0, 0, bytes, 4096).kv_bytes_per_token; };
  CHECK(per_token(model("Llama-2-7B"), 2) == 2 * 32 * 32 * 128 * 2);  // 524 288 = 512 KiB
  CHECK(per_token(model("Llama-2-7B"), 2) == 524288);
  CHECK(per_token(model("Llama-2-13B"), 2) == 819200);  // 2·40·40·128·2 = 800 KiB
  CHECK(per_token(model("Llama-2-70B"), 2) == 327680);  // 2·80·8·128·2 = 320 KiB (GQA)
  // SmolLM2-135M in chapter 02's fp32 cache: 2·30·3·64·4
  LlamaConfig smol;
  smol.n_layers = 30;
  smol.n_kv_heads = 3;
  smol.head_dim = 64;
  CHECK(per_token({"SmolLM2-135M", smol}, 4) == 46080);
}

TEST_CASE("memory budget: parameter counts of the Llama-2 shapes", "[quant][memory]") {
  // 7B: embeddings + output 2·32000·4096 = 262 144 000; per layer q,k,v,o 4·4096² = 67 108 864,
  // MLP 3·4096·11008 = 135 266 304, two norms 8 192 → 202 383 360 × 32 = 6 476 267 520; final
  // norm 4 096. Total 6 738 415 616.
  CHECK(model("Llama-2-7B").config.parameter_count() == 6738415616);
  // 13B: 2·32000·5120 = 327 680 000; per layer 4·5120² + 3·5120·13824 + 2·5120 = 317 204 480,
  // × 40 = 12 688 179 200; + 5 120. Total 13 015 864 320.
  CHECK(model("Llama-2-13B").config.parameter_count() == 13015864320);
  // 70B: 2·32000·8192 = 524 288 000; per layer q,o 2·8192² = 134 217 728, k,v 2·8192·1024 =
  // 16 777 216, MLP 3·8192·28672 = 704 643 072, norms 16 384 → 855 654 400 × 80 =
  // 68 452 352 000; + 8 192. Total 68 976 648 192.
  CHECK(model("Llama-2-70B").config.parameter_count() == 68976648192);
}

TEST_CASE("memory budget: weights, what is left, tokens and users", "[quant][memory]") {
  const WeightFormat fp16{"fp16", 16}, int8{"int8", 8}, int4{"int4", 4.125};
  CHECK(weight_bytes(6738415616, 16) == 13476831232);
  CHECK(weight_bytes(13015864320, 4.125) == 6711305040);  // 13 015 864 320 · 33 / 64
  CHECK(weight_bytes(3, 4.125) == 2);                       // 1.55 bytes: a whole byte more

  // 7B int8 on a 16 GiB card with 1.5 GiB reserved: 17 179 869 184 − 1 610 612 736 − 6 738 415 616
  // = 8 830 840 832 bytes left; / 524 288 = 16 843.49 → 16 843 tokens; / 4096 → 4 users.
  const Budget b = memory_budget(model("Llama-2-7B"), int8, 16 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK(b.weight_bytes == 6738415616);
  CHECK(b.left_bytes == 8830840832.0);
  CHECK(b.fits());
  CHECK(b.context_tokens == 16843);
  CHECK(b.users == 4);

  // 13B int4 on 8 GiB: 8 589 934 592 − 1 610 612 736 − 6 711 305 040 = 268 016 816 left;
  // / 819 200 = 327.2 → 327 tokens: the weights fit, a conversation does not (0 users).
  const Budget small = memory_budget(model("Llama-2-13B"), int4, 8 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK(small.left_bytes == 268016816.0);
  CHECK(small.context_tokens == 327);
  CHECK(small.users == 0);

  // 70B fp16 on 24 GiB: 137 953 296 384 bytes of weights alone, far more than the card.
  const Budget big = memory_budget(model("Llama-2-70B"), fp16, 24 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK_FALSE(big.fits());
  CHECK(big.left_bytes == 24 * kOneGiB - 1.5 * kOneGiB - 137953296384.0);
  CHECK(big.context_tokens == 0);
  CHECK(big.users == 0);
}

TEST_CASE("memory budget: /proc/meminfo is read in KiB", "[quant][memory]") {
  const auto m = parse_meminfo("MemTotal:       24683656 kB\nMemFree:        22042112 kB\nMemAvailable:   24224004 kB\n");
  REQUIRE(m.has_value());
  CHECK(m->total_bytes == int64_t{24683656} * 1024);
  CHECK(m->available_bytes == int64_t{24224004} * 1024);
  CHECK_FALSE(parse_meminfo("MemTotal: 1 kB\n").has_value());  // no MemAvailable (kernels before 3.14)
}
