// Chapter 06's memory budget in the course's own setting (memory_budget.hpp): the grouped-query
// 7B shape beside Llama-2-7B, the course's quoted token counts, and the reserve they imply —
// against values worked out by hand here.
#include "catch_compat.hpp"

#include <algorithm>
#include <string>

#include "memory_budget.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

constexpr double kOneGiB = 1073741824.0;  // 2^30, written out here

const NamedConfig& course(const std::string& name) {
  static const std::vector<NamedConfig> models = course_models();
  const auto it = std::find_if(models.begin(), models.end(), [&](const NamedConfig& m) { return m.name == name; });
  REQUIRE(it != models.end());
  return *it;
}

const WeightFormat kInt8{"int8", 8.0}, kInt4{"int4", 4.125};

}  // namespace

TEST_CASE("memory budget: Mistral-7B, Llama-2-7B's size with a quarter of its cache", "[quant][memory]") {
  const NamedConfig m = mistral_7b();
  // embeddings 2·32000·4096 + 32 layers · (2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096) + 4096
  CHECK(m.config.parameter_count() == 7241732096);
  CHECK(m.parameters() == 7241732096);
  // 2 (K, V) · 32 layers · 8 heads · 128 · 2 bytes = 131 072 = 128 KiB, against Llama-2-7B's 512 KiB
  CHECK(memory_budget(m, kInt8, 16 * kOneGiB, 1.5 * kOneGiB, 2, 4096).kv_bytes_per_token == 131072);
}

TEST_CASE("memory budget: the course's setting gives the course's figures", "[quant][memory]") {
  // 7B at int8 on 16 GiB: 17 179 869 184 − 1 610 612 736 − 7·10^9 = 8 569 256 448 bytes left,
  // / 131 072 = 65 378.7 → 65 378 tokens.
  const Budget b7 = memory_budget(course("7B (8 KV heads)"), kInt8, 16 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK(b7.weight_bytes == 7000000000);
  CHECK(b7.left_bytes == 8569256448.0);
  CHECK(b7.context_tokens == 65378);
  // 13B at int8: 2 569 256 448 left / 819 200 = 3 136.3 → 3 136.
  const Budget b13 = memory_budget(course("13B (40 KV heads)"), kInt8, 16 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK(b13.context_tokens == 3136);
  // 13B at int4 on 8 GiB: weights 13·10^9 · 33/64 = 6 703 125 000; left 276 196 856 / 819 200 → 337.
  const Budget b13_4 = memory_budget(course("13B (40 KV heads)"), kInt4, 8 * kOneGiB, 1.5 * kOneGiB, 2, 4096);
  CHECK(b13_4.weight_bytes == 6703125000);
  CHECK(b13_4.context_tokens == 337);
}

TEST_CASE("memory budget: the reserve a quoted token count pins down", "[quant][memory]") {
  // 7B int8 on 16 GiB, 65 378 tokens: room = 16 GiB − 7·10^9 = 10 179 869 184;
  // reserve in (room − 65 379·131 072, room − 65 378·131 072] = (1 610 512 896, 1 610 643 968].
  const ReserveRange r = reserve_for_tokens(course("7B (8 KV heads)"), kInt8, 16 * kOneGiB, 2, 65378);
  CHECK(r.lo == 1610512896.0);
  CHECK(r.hi == 1610643968.0);
  CHECK(r.contains(1.5 * kOneGiB));          // 1 610 612 736
  CHECK_FALSE(r.contains(1.4 * kOneGiB));
  CHECK_FALSE(r.contains(r.lo));             // the lower end gives one token more
  const Budget at_hi = memory_budget(course("7B (8 KV heads)"), kInt8, 16 * kOneGiB, r.hi, 2, 4096);
  CHECK(at_hi.context_tokens == 65378);
  const Budget at_lo = memory_budget(course("7B (8 KV heads)"), kInt8, 16 * kOneGiB, r.lo, 2, 4096);
  CHECK(at_lo.context_tokens == 65379);
}
