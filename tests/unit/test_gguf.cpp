// Tests of lib/gguf: the dequantizers against the gguf Python package's (golden fixtures made by
// tests/fixtures/make_dequant_fixtures.py), the fp16/bf16 conversions, reading GGUF v2 and v3
// files written here by a small writer, one crafted file per kind of malformation, and the facts
// of the course's model file when it is present.
#include "catch_compat.hpp"

#include <stdlib.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/gguf_file.hpp"

namespace fs = std::filesystem;
using namespace infer::gguf;
using Catch::Contains;

namespace {

// ---- Helpers -----------------------------------------------------------------------------------

std::vector<uint8_t> from_hex(const std::string& hex) {
  REQUIRE(hex.size() % 2 == 0);
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// A temporary directory, removed with everything in it when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "infer_test_gguf_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

std::string write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
  return path.string();
}

// Little-endian byte sink with the GGUF encodings of scalars, strings and array headers.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& type(ValueType t) { return put(static_cast<uint32_t>(t)); }
  Bytes& array_header(ValueType elem, uint64_t count) {
    type(elem);
    return put<uint64_t>(count);
  }
};

// Writes GGUF files: valid ones by default, and every field can be bent to make a malformed one.
struct GgufWriter {
  std::string magic = "GGUF";
  uint32_t version = 3;
  uint64_t alignment = 32;  // used for the layout; add a general.alignment key to declare another
  std::optional<uint64_t> kv_count_override, tensor_count_override;
  std::optional<size_t> truncate_to;

  Bytes kvs;
  uint64_t n_kv = 0;

  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type = 0;
    std::vector<uint8_t> data;
    std::optional<uint32_t> n_dims_override;
    std::optional<uint64_t> offset_override;
  };
  std::vector<Tensor> tensors;

  // One key of a scalar type: the value is written as T.
  template <typename T>
  void kv(const std::string& key, ValueType t, T v) {
    kvs.str(key).type(t).put(v);
    ++n_kv;
  }
  void kv_string(const std::string& key, const std::string& v) {
    kvs.str(key).type(ValueType::string).str(v);
    ++n_kv;
  }
  // A key whose value (type and payload) is written by `value`.
  void kv_raw(const std::string& key, const std::function<void(Bytes&)>& value) {
    kvs.str(key);
    value(kvs);
    ++n_kv;
  }

  void tensor(const std::string& name, std::vector<uint64_t> dims, GgmlType type,
              std::vector<uint8_t> data) {
    tensors.push_back({name, std::move(dims), static_cast<uint32_t>(type), std::move(data), {}, {}});
  }

  std::vector<uint8_t> build() const {
    Bytes out;
    out.b.insert(out.b.end(), magic.begin(), magic.end());
    out.put(version);
    out.put<uint64_t>(tensor_count_override.value_or(tensors.size()));
    out.put<uint64_t>(kv_count_override.value_or(n_kv));
    out.b.insert(out.b.end(), kvs.b.begin(), kvs.b.end());
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const auto& t : tensors) {
      offsets.push_back(next);
      next += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      out.str(t.name);
      out.put<uint32_t>(t.n_dims_override.value_or(static_cast<uint32_t>(t.dims.size())));
      for (auto d : t.dims) out.put<uint64_t>(d);
      out.put<uint32_t>(t.type);
      out.put<uint64_t>(t.offset_override.value_or(offsets[i]));
    }
    while (out.b.size() % alignment != 0) out.b.push_back(0);
    for (size_t i = 0; i < tensors.size(); ++i) {
      out.b.insert(out.b.end(), tensors[i].data.begin(), tensors[i].data.end());
      if (i + 1 < tensors.size()) {
        while (out.b.size() % alignment != 0) out.b.push_back(0);
      }
    }
    if (truncate_to && *truncate_to < out.b.size()) out.b.resize(*truncate_to);
    return out.b;
  }

  std::string write(const TempDir& dir, const std::string& name = "test.gguf") const {
    return write_file(dir.path / name, build());
  }
};

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A Q8_0 block with d = 0.5 and codes −16..15: weights −8, −7.5, …, 7.5.
std::vector<uint8_t> q8_0_block() {
  Bytes b;
  b.put<uint16_t>(0x3800);  // 0.5
  for (int j = 0; j < 32; ++j) b.put<int8_t>(static_cast<int8_t>(j - 16));
  return b.b;
}

// A Q4_1 block with d = 1, m = −8; byte j has low nibble j and high nibble 15 − j, so weight j is
// j − 8 and weight j + 16 is 7 − j.
std::vector<uint8_t> q4_1_block() {
  Bytes b;
  b.put<uint16_t>(0x3C00);  // d = 1
  b.put<uint16_t>(0xC800);  // m = -8
  for (int j = 0; j < 16; ++j) b.put<uint8_t>(static_cast<uint8_t>(j | ((15 - j) << 4)));
  return b.b;
}

// A small valid file: a few keys and one tensor, used as the base of the malformed-file cases.
GgufWriter minimal_writer() {
  GgufWriter w;
  w.kv_string("general.architecture", "llama");
  w.kv("llama.block_count", ValueType::u32, uint32_t{2});
  w.tensor("blk.0.attn_q.weight", {32, 2}, GgmlType::Q4_1, [] {
    auto b = q4_1_block();
    auto b2 = q4_1_block();
    b.insert(b.end(), b2.begin(), b2.end());
    return b;
  }());
  return w;
}

}  // namespace

// ---- (a) Dequantizers against the gguf package ---------------------------------------------------

TEST_CASE("dequantize_row matches the gguf package's dequantizers bit for bit", "[gguf][dequant]") {
  // Bit-for-bit equality of every float (NaN payloads included): all block products are exact in
  // fp32, so there is no rounding freedom left for the two implementations to differ in.
  const std::vector<std::string> types = {"F32",  "F16",  "BF16", "Q4_0", "Q4_1",
                                          "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                          "Q4_K", "Q5_K", "Q6_K"};
  for (const auto& name : types) {
    DYNAMIC_SECTION(name) {
      const fs::path path = fs::path(INFER_FIXTURES_DIR) / "dequant" / (name + ".json");
      std::ifstream in(path);
      REQUIRE(in.good());
      const auto j = nlohmann::json::parse(in);
      const auto type_id = j.at("type_id").get<uint32_t>();
      const auto tr = type_traits(type_id);
      REQUIRE(tr.has_value());
      CHECK(tr->name == name);
      REQUIRE(tr->can_dequantize);
      const auto n = j.at("n").get<int64_t>();
      const auto raw = from_hex(j.at("raw_hex").get<std::string>());
      const auto expected_bytes = from_hex(j.at("expected_f32_hex").get<std::string>());
      REQUIRE(raw.size() == static_cast<size_t>(n / tr->block_size * tr->block_bytes));
      REQUIRE(expected_bytes.size() == static_cast<size_t>(n) * 4);

      std::vector<float> got(static_cast<size_t>(n));
      dequantize_row(static_cast<GgmlType>(type_id), raw.data(), got.data(), n);
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) {
        uint32_t want = 0;
        std::memcpy(&want, expected_bytes.data() + 4 * i, 4);
        if (bits(got[i]) != want) {
          if (mismatches++ < 5) {
            FAIL_CHECK(name << " weight " << i << ": got " << got[i] << " (0x"
                            << std::hex << bits(got[i]) << "), expected "
                            << std::bit_cast<float>(want) << " (0x" << want << ")" << std::dec);
          }
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("Q8_1 and Q8_K dequantize as d times the int8 codes", "[gguf][dequant]") {
  // The gguf package has no dequantizer for these two, so the expectation is written out by hand.
  Bytes q81;
  q81.put<uint16_t>(0x3400).put<uint16_t>(0x7BFF);  // d = 0.25, s = anything (ignored)
  for (int j = 0; j < 32; ++j) q81.put<int8_t>(static_cast<int8_t>(j * 8 - 128));
  std::vector<float> out(32);
  dequantize_row(GgmlType::Q8_1, q81.b.data(), out.data(), 32);
  for (int j = 0; j < 32; ++j) CHECK(out[j] == 0.25f * static_cast<float>(j * 8 - 128));

  Bytes q8k;
  q8k.put<float>(-1.5f);
  for (int k = 0; k < 256; ++k) q8k.put<int8_t>(static_cast<int8_t>(k - 128));
  for (int s = 0; s < 16; ++s) q8k.put<int16_t>(12345);  // block sums: ignored
  REQUIRE(q8k.b.size() == 292);
  std::vector<float> out_k(256);
  dequantize_row(GgmlType::Q8_K, q8k.b.data(), out_k.data(), 256);
  for (int k = 0; k < 256; ++k) CHECK(out_k[k] == -1.5f * static_cast<float>(k - 128));
}

TEST_CASE("dequantize_row rejects a bad count and a type without a dequantizer", "[gguf][dequant]") {
  std::vector<uint8_t> src(64, 0);
  std::vector<float> dst(64);
  CHECK_THROWS_AS(dequantize_row(GgmlType::Q4_1, src.data(), dst.data(), 31), std::invalid_argument);
  CHECK_THROWS_AS(dequantize_row(GgmlType::Q4_1, src.data(), dst.data(), -32), std::invalid_argument);
  CHECK_THROWS_AS(dequantize_row(static_cast<GgmlType>(16), src.data(), dst.data(), 256),
                  std::invalid_argument);  // IQ2_XXS: known, not dequantizable
  CHECK_THROWS_AS(dequantize_row(static_cast<GgmlType>(200), src.data(), dst.data(), 1),
                  std::invalid_argument);
}

TEST_CASE("type traits agree with ggml's block structs", "[gguf][types]") {
  struct Row { GgmlType t; const char* name; uint32_t bs, bb; };
  const Row rows[] = {
      {GgmlType::F32, "F32", 1, 4},       {GgmlType::F16, "F16", 1, 2},
      {GgmlType::Q4_0, "Q4_0", 32, 18},   {GgmlType::Q4_1, "Q4_1", 32, 20},
      {GgmlType::Q5_0, "Q5_0", 32, 22},   {GgmlType::Q5_1, "Q5_1", 32, 24},
      {GgmlType::Q8_0, "Q8_0", 32, 34},   {GgmlType::Q8_1, "Q8_1", 32, 36},
      {GgmlType::Q2_K, "Q2_K", 256, 84},  {GgmlType::Q3_K, "Q3_K", 256, 110},
      {GgmlType::Q4_K, "Q4_K", 256, 144}, {GgmlType::Q5_K, "Q5_K", 256, 176},
      {GgmlType::Q6_K, "Q6_K", 256, 210}, {GgmlType::Q8_K, "Q8_K", 256, 292},
      {GgmlType::BF16, "BF16", 1, 2},
  };
  for (const auto& r : rows) {
    const auto& t = traits(r.t);
    CHECK(t.name == r.name);
    CHECK(t.block_size == r.bs);
    CHECK(t.block_bytes == r.bb);
    CHECK(t.can_dequantize);
  }
  CHECK_FALSE(type_traits(4).has_value());    // Q4_2, removed from ggml
  CHECK_FALSE(type_traits(1000).has_value());
}

// ---- (b) fp16 / bf16 ---------------------------------------------------------------------------------

TEST_CASE("fp16_to_fp32 handles zeros, subnormals, normals, infinities and NaNs", "[gguf][fp16]") {
  CHECK(bits(fp16_to_fp32(0x0000)) == 0x00000000u);
  CHECK(bits(fp16_to_fp32(0x8000)) == 0x80000000u);                   // -0
  CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));               // smallest subnormal
  CHECK(fp16_to_fp32(0x8001) == -std::ldexp(1.0f, -24));
  CHECK(fp16_to_fp32(0x0200) == std::ldexp(1.0f, -15));
  CHECK(fp16_to_fp32(0x03FF) == std::ldexp(1023.0f, -24));            // largest subnormal
  CHECK(fp16_to_fp32(0x0400) == std::ldexp(1.0f, -14));               // smallest normal
  CHECK(fp16_to_fp32(0x3C00) == 1.0f);
  CHECK(fp16_to_fp32(0x3C01) == 1.0f + std::ldexp(1.0f, -10));
  CHECK(fp16_to_fp32(0xC000) == -2.0f);
  CHECK(fp16_to_fp32(0x3555) == 0.333251953125f);
  CHECK(fp16_to_fp32(0x7BFF) == 65504.0f);                            // largest finite
  CHECK(fp16_to_fp32(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(fp16_to_fp32(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(fp16_to_fp32(0x7E00)));
  CHECK(bits(fp16_to_fp32(0x7C01)) == 0x7F802000u);  // a signalling NaN keeps its payload
  CHECK(bits(fp16_to_fp32(0xFE00)) == 0xFFC00000u);
}

TEST_CASE("fp32_to_fp16 rounds to nearest even and handles the edges", "[gguf][fp16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(fp32_to_fp16(0.0f) == 0x0000);
  CHECK(fp32_to_fp16(-0.0f) == 0x8000);
  CHECK(fp32_to_fp16(1.0f) == 0x3C00);
  CHECK(fp32_to_fp16(-2.0f) == 0xC000);
  CHECK(fp32_to_fp16(65504.0f) == 0x7BFF);
  CHECK(fp32_to_fp16(65519.0f) == 0x7BFF);              // below the halfway point to 65536
  CHECK(fp32_to_fp16(65520.0f) == 0x7C00);              // the tie rounds to even: infinity
  CHECK(fp32_to_fp16(1e6f) == 0x7C00);
  CHECK(fp32_to_fp16(-inf) == 0xFC00);
  CHECK(fp32_to_fp16(inf) == 0x7C00);
  const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7C00) == 0x7C00);
  CHECK((nan & 0x03FF) != 0);
  // A NaN whose payload lives only in the low bits must not turn into infinity.
  CHECK((fp32_to_fp16(std::bit_cast<float>(0x7F800001u)) & 0x03FF) != 0);
  CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);      // tie, to even (down)
  CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie, to even (up)
  CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3C01);
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);             // tie, to even: zero
  CHECK(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(fp32_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);             // 1.5 units: tie, to even
  CHECK(fp32_to_fp16(std::ldexp(5.0f, -25)) == 0x0002);             // 2.5 units: tie, to even
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(fp32_to_fp16(-std::ldexp(1.0f, -30)) == 0x8000);
  CHECK(fp32_to_fp16(std::ldexp(1023.75f, -24)) == 0x0400);         // rounds up into the normals
  CHECK(fp32_to_fp16(std::bit_cast<float>(0x00000001u)) == 0x0000);  // fp32 subnormal
}

TEST_CASE("fp16_to_fp32_branchless gives fp16_to_fp32's bits for every fp16 value", "[gguf][fp16]") {
  int failures = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint32_t want = bits(fp16_to_fp32(static_cast<uint16_t>(h)));
    const uint32_t got = bits(fp16_to_fp32_branchless(static_cast<uint16_t>(h)));
    if (got != want && failures++ < 5)
      FAIL_CHECK("fp16 0x" << std::hex << h << ": 0x" << got << ", not 0x" << want);
  }
  CHECK(failures == 0);
}

TEST_CASE("every fp16 value survives fp16 -> fp32 -> fp16", "[gguf][fp16]") {
  int failures = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    const uint16_t back = fp32_to_fp16(f);
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    const bool ok = is_nan ? (std::isnan(f) && (back & 0x7C00) == 0x7C00 && (back & 0x03FF) != 0)
                           : back == h;
    if (!ok && failures++ < 5) FAIL_CHECK("fp16 0x" << std::hex << h << " came back as 0x" << back);
  }
  CHECK(failures == 0);
}

TEST_CASE("fp32_to_fp16 picks the nearest fp16 value", "[gguf][fp16]") {
  // For many fp32 values in the fp16 range, no fp16 neighbour of the result is closer.
  uint32_t state = 12345;
  int failures = 0;
  for (int i = 0; i < 100000; ++i) {
    state = state * 1664525u + 1013904223u;
    // Exponents from 2^-26 to 2^16, random fraction and sign.
    const uint32_t exp = 101 + (state >> 8) % 42;
    const uint32_t x = (state & 0x80000000u) | (exp << 23) | ((state * 2654435761u) & 0x7FFFFFu);
    const float f = std::bit_cast<float>(x);
    const uint16_t h = fp32_to_fp16(f);
    const double err = std::fabs(static_cast<double>(fp16_to_fp32(h)) - f);
    for (int delta : {-1, 1}) {
      const auto nb = static_cast<uint16_t>((h & 0x7FFF) + delta);
      if ((h & 0x7FFF) == 0 && delta < 0) continue;
      if ((nb & 0x7C00) == 0x7C00 && (nb & 0x3FF) != 0) continue;  // not a number
      const uint16_t neighbour = static_cast<uint16_t>((h & 0x8000) | nb);
      const double err_nb = std::fabs(static_cast<double>(fp16_to_fp32(neighbour)) - f);
      if (err_nb < err && failures++ < 5) {
        FAIL_CHECK("fp32 0x" << std::hex << x << " -> 0x" << h << " but 0x" << neighbour
                             << " is closer");
      }
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("bf16_to_fp32 widens exactly", "[gguf][bf16]") {
  CHECK(bf16_to_fp32(0x3F80) == 1.0f);
  CHECK(bf16_to_fp32(0xC040) == -3.0f);
  CHECK(bits(bf16_to_fp32(0x8000)) == 0x80000000u);
  CHECK(bits(bf16_to_fp32(0x0001)) == 0x00010000u);  // an fp32 subnormal
  CHECK(bf16_to_fp32(0x7F7F) == std::bit_cast<float>(0x7F7F0000u));
  CHECK(bf16_to_fp32(0x7F80) == std::numeric_limits<float>::infinity());
  CHECK(bf16_to_fp32(0xFF80) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(bf16_to_fp32(0x7FC0)));
  CHECK(bits(bf16_to_fp32(0x7F81)) == 0x7F810000u);  // signalling NaN payload kept
}

// ---- (c) Reading files written here ---------------------------------------------------------------

namespace {

GgufWriter full_writer(uint32_t version, uint64_t alignment) {
  GgufWriter w;
  w.version = version;
  w.alignment = alignment;
  w.kv("general.alignment", ValueType::u32, static_cast<uint32_t>(alignment));
  w.kv("t.u8", ValueType::u8, uint8_t{200});
  w.kv("t.i8", ValueType::i8, int8_t{-100});
  w.kv("t.u16", ValueType::u16, uint16_t{60000});
  w.kv("t.i16", ValueType::i16, int16_t{-30000});
  w.kv("t.u32", ValueType::u32, uint32_t{4000000000u});
  w.kv("t.i32", ValueType::i32, int32_t{-2000000000});
  w.kv("t.f32", ValueType::f32, 0.1f);
  w.kv("t.bool", ValueType::boolean, uint8_t{1});
  w.kv("t.false", ValueType::boolean, uint8_t{0});
  w.kv_string("t.string", "héllo, GGUF");
  w.kv_string("t.empty_string", "");
  w.kv("t.u64", ValueType::u64, uint64_t{18000000000000000000ull});
  w.kv("t.i64", ValueType::i64, int64_t{-9000000000000000000ll});
  w.kv("t.f64", ValueType::f64, -2.5e300);
  w.kv_raw("t.strings", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::string, 3).str("a").str("").str("ccc");
  });
  w.kv_raw("t.i32s", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::i32, 3).put<int32_t>(-1).put<int32_t>(0).put<int32_t>(7);
  });
  w.kv_raw("t.u8s", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::u8, 2).put<uint8_t>(1).put<uint8_t>(255);
  });
  w.kv_raw("t.f32s", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::f32, 2).put<float>(0.5f).put<float>(-1.0f);
  });
  w.kv_raw("t.f64s", [](Bytes& b) { b.type(ValueType::array).array_header(ValueType::f64, 1).put<double>(1e-300); });
  w.kv_raw("t.bools", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::boolean, 2).put<uint8_t>(0).put<uint8_t>(1);
  });
  w.kv_raw("t.u64s", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::u64, 1).put<uint64_t>(~uint64_t{0});
  });
  w.kv_raw("t.empty", [](Bytes& b) { b.type(ValueType::array).array_header(ValueType::i64, 0); });
  // [[1, 2], [], [3]] of i16, and [["x"], ["y", "z"]]
  w.kv_raw("t.nested", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::array, 3);
    b.array_header(ValueType::i16, 2).put<int16_t>(1).put<int16_t>(2);
    b.array_header(ValueType::i16, 0);
    b.array_header(ValueType::i16, 1).put<int16_t>(3);
  });
  w.kv_raw("t.nested_strings", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::array, 2);
    b.array_header(ValueType::string, 1).str("x");
    b.array_header(ValueType::string, 2).str("y").str("z");
  });

  std::vector<float> f32(12);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i) * 0.25f - 1.0f;
  w.tensor("weights.f32", {4, 3}, GgmlType::F32, f32_bytes(f32));
  Bytes f16;
  for (uint16_t h : {0x3C00, 0xC000, 0x3800, 0x0001, 0x7BFF, 0x8000, 0x4200, 0x3555}) f16.put(h);
  w.tensor("weights.f16", {8}, GgmlType::F16, f16.b);
  auto q8 = q8_0_block();
  auto q8b = q8_0_block();
  q8.insert(q8.end(), q8b.begin(), q8b.end());
  w.tensor("weights.q8_0", {32, 1, 2}, GgmlType::Q8_0, q8);
  w.tensor("weights.q4_1", {32}, GgmlType::Q4_1, q4_1_block());
  return w;
}

void check_full_file(const GgufFile& f, uint32_t version, uint64_t alignment) {
  CHECK(f.version() == version);
  CHECK(f.alignment() == alignment);
  CHECK(f.metadata().size() == 25);

  CHECK(f.get_uint("t.u8") == 200);
  CHECK(f.get_int("t.i8") == -100);
  CHECK(f.get_uint("t.u16") == 60000);
  CHECK(f.get_int("t.i16") == -30000);
  CHECK(f.get_uint("t.u32") == 4000000000u);
  CHECK(f.get_int("t.u32") == 4000000000);  // any integer type that fits
  CHECK(f.get_int("t.i32") == -2000000000);
  CHECK(f.get_float("t.f32") == static_cast<double>(0.1f));
  CHECK(f.get_float("t.u8") == 200.0);      // any numeric type
  CHECK(f.get_bool("t.bool"));
  CHECK_FALSE(f.get_bool("t.false"));
  CHECK(f.get_string("t.string") == "héllo, GGUF");
  CHECK(f.get_string("t.empty_string").empty());
  CHECK(f.get_uint("t.u64") == 18000000000000000000ull);
  CHECK(f.get_int("t.i64") == -9000000000000000000ll);
  CHECK(f.get_float("t.f64") == -2.5e300);
  CHECK(f.get("t.u16").type == ValueType::u16);
  CHECK(f.get("t.f32").type == ValueType::f32);
  CHECK(f.get("t.bool").type == ValueType::boolean);

  CHECK(f.get_string_array("t.strings") == std::vector<std::string>{"a", "", "ccc"});
  CHECK(f.get_int_array("t.i32s") == std::vector<int64_t>{-1, 0, 7});
  CHECK(f.get_int_array("t.u8s") == std::vector<int64_t>{1, 255});
  CHECK(f.get_float_array("t.f32s") == std::vector<double>{0.5, -1.0});
  CHECK(f.get_float_array("t.i32s") == std::vector<double>{-1.0, 0.0, 7.0});
  CHECK(f.get_float_array("t.f64s") == std::vector<double>{1e-300});
  CHECK(f.get_int_array("t.empty").empty());
  const auto& bools = std::get<Array>(f.get("t.bools").data);
  REQUIRE(bools.items.size() == 2);
  CHECK(bools.element_type == ValueType::boolean);
  CHECK_FALSE(std::get<bool>(bools.items[0].data));
  CHECK(std::get<bool>(bools.items[1].data));
  CHECK(std::get<uint64_t>(std::get<Array>(f.get("t.u64s").data).items.at(0).data) == ~uint64_t{0});

  const auto& nested = std::get<Array>(f.get("t.nested").data);
  CHECK(nested.element_type == ValueType::array);
  REQUIRE(nested.items.size() == 3);
  const auto& n0 = std::get<Array>(nested.items[0].data);
  CHECK(n0.element_type == ValueType::i16);
  REQUIRE(n0.items.size() == 2);
  CHECK(std::get<int64_t>(n0.items[1].data) == 2);
  CHECK(std::get<Array>(nested.items[1].data).items.empty());
  CHECK(std::get<int64_t>(std::get<Array>(nested.items[2].data).items.at(0).data) == 3);
  const auto& ns = std::get<Array>(f.get("t.nested_strings").data);
  REQUIRE(ns.items.size() == 2);
  CHECK(std::get<std::string>(std::get<Array>(ns.items[1].data).items.at(1).data) == "z");

  REQUIRE(f.tensors().size() == 4);
  CHECK(f.tensors()[0].name == "weights.f32");  // file order
  CHECK(f.tensors()[3].name == "weights.q4_1");
  for (const auto& t : f.tensors()) {
    CHECK(t.offset % alignment == 0);
    CHECK(t.data != nullptr);
  }

  const auto& t32 = f.tensor("weights.f32");
  CHECK(t32.dims == std::vector<uint64_t>{4, 3});
  CHECK(t32.type == GgmlType::F32);
  CHECK(t32.n_elements == 12);
  CHECK(t32.n_bytes == 48);
  const auto v32 = dequantize(t32);
  REQUIRE(v32.size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK(v32[i] == static_cast<float>(i) * 0.25f - 1.0f);

  const auto v16 = dequantize(f.tensor("weights.f16"));
  const std::vector<float> want16 = {1.0f, -2.0f, 0.5f, std::ldexp(1.0f, -24), 65504.0f, -0.0f, 3.0f,
                                     0.333251953125f};
  CHECK(v16 == want16);

  const auto& tq8 = f.tensor("weights.q8_0");
  CHECK(tq8.dims == std::vector<uint64_t>{32, 1, 2});
  CHECK(tq8.n_elements == 64);
  CHECK(tq8.n_bytes == 68);
  const auto v8 = dequantize(tq8);
  REQUIRE(v8.size() == 64);
  for (size_t i = 0; i < 64; ++i) CHECK(v8[i] == 0.5f * static_cast<float>(static_cast<int>(i % 32) - 16));

  const auto v41 = dequantize(f.tensor("weights.q4_1"));
  REQUIRE(v41.size() == 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(v41[j] == static_cast<float>(j - 8));
    CHECK(v41[j + 16] == static_cast<float>(7 - j));
  }

  // dequantize_into (what the model loader uses) writes the same values where it is told, and
  // refuses a destination of another size.
  std::vector<float> into(64, -7.0f);
  dequantize_into(tq8, into);
  CHECK(into == v8);
  std::vector<float> short_by_one(63);
  CHECK_THROWS_AS(dequantize_into(tq8, short_by_one), std::invalid_argument);
}

}  // namespace

TEST_CASE("a GGUF v3 file with every value type and a few tensors reads back", "[gguf][file]") {
  TempDir dir;
  const auto path = full_writer(3, 32).write(dir, "v3.gguf");
  const auto f = GgufFile::open(path);
  CHECK(f.path() == path);
  CHECK(f.file_size() == fs::file_size(path));
  check_full_file(f, 3, 32);
}

TEST_CASE("a GGUF v2 file with alignment 64 reads back", "[gguf][file]") {
  TempDir dir;
  const auto path = full_writer(2, 64).write(dir, "v2.gguf");
  check_full_file(GgufFile::open(path), 2, 64);
}

TEST_CASE("a file without general.alignment uses 32; alignment 1 is allowed", "[gguf][file]") {
  TempDir dir;
  auto w = minimal_writer();
  CHECK(GgufFile::open(w.write(dir, "a.gguf")).alignment() == 32);
  GgufWriter w1 = minimal_writer();
  w1.alignment = 1;
  w1.kv("general.alignment", ValueType::u32, uint32_t{1});
  w1.tensor("odd.f16", {3}, GgmlType::F16, {0x00, 0x3C, 0x00, 0x40, 0x00, 0xC2});
  const auto f = GgufFile::open(w1.write(dir, "b.gguf"));
  CHECK(f.alignment() == 1);
  CHECK(dequantize(f.tensor("odd.f16")) == std::vector<float>{1.0f, 2.0f, -3.0f});
}

TEST_CASE("a file with no metadata and no tensors is valid", "[gguf][file]") {
  TempDir dir;
  GgufWriter w;
  const auto f = GgufFile::open(w.write(dir));
  CHECK(f.metadata().empty());
  CHECK(f.tensors().empty());
}

TEST_CASE("the typed getters reject missing keys and wrong types", "[gguf][file]") {
  TempDir dir;
  const auto path = full_writer(3, 32).write(dir);
  const auto f = GgufFile::open(path);
  CHECK_FALSE(f.has("nope"));
  CHECK(f.has("t.u8"));
  CHECK_THROWS_WITH(f.get("nope"), Contains(path) && Contains("'nope'") && Contains("missing"));
  CHECK_THROWS_WITH(f.get_uint("t.string"), Contains("'t.string'") && Contains("string"));
  CHECK_THROWS_AS(f.get_uint("t.i8"), GgufError);    // negative
  CHECK_THROWS_AS(f.get_int("t.u64"), GgufError);    // > INT64_MAX
  CHECK_THROWS_AS(f.get_int("t.f32"), GgufError);
  CHECK_THROWS_AS(f.get_float("t.bool"), GgufError);
  CHECK_THROWS_AS(f.get_float("t.string"), GgufError);
  CHECK_THROWS_AS(f.get_bool("t.u8"), GgufError);
  CHECK_THROWS_AS(f.get_string("t.strings"), GgufError);
  CHECK_THROWS_AS(f.get_string_array("t.i32s"), GgufError);
  CHECK_THROWS_AS(f.get_string_array("t.string"), GgufError);
  CHECK_THROWS_AS(f.get_int_array("t.strings"), GgufError);
  CHECK_THROWS_AS(f.get_int_array("t.f32s"), GgufError);
  CHECK_THROWS_AS(f.get_int_array("t.u64s"), GgufError);  // 2^64 - 1 does not fit in i64
  CHECK_THROWS_AS(f.get_float_array("t.strings"), GgufError);
  CHECK_THROWS_AS(f.get_float_array("t.nested"), GgufError);
  CHECK(f.find_tensor("absent") == nullptr);
  CHECK(f.find_tensor("weights.f16") == &f.tensors()[1]);
  CHECK_THROWS_WITH(f.tensor("absent"), Contains("absent"));
}

TEST_CASE("a moved GgufFile keeps its tensors' data valid", "[gguf][file]") {
  TempDir dir;
  GgufFile a = GgufFile::open(full_writer(3, 32).write(dir, "a.gguf"));
  GgufFile b = std::move(a);
  check_full_file(b, 3, 32);
  GgufFile c = GgufFile::open(minimal_writer().write(dir, "c.gguf"));
  c = std::move(b);  // unmaps c's own file
  check_full_file(c, 3, 32);
}

TEST_CASE("dequantize(TensorInfo) refuses a type without a dequantizer", "[gguf][file]") {
  TempDir dir;
  GgufWriter w;
  w.tensor("iq", {256}, static_cast<GgmlType>(16), std::vector<uint8_t>(66, 0));  // IQ2_XXS
  const auto f = GgufFile::open(w.write(dir));
  CHECK(f.tensor("iq").n_bytes == 66);
  CHECK_THROWS_WITH(dequantize(f.tensor("iq")), Contains("'iq'") && Contains("IQ2_XXS"));
}

// ---- (d) Malformed files ----------------------------------------------------------------------------

namespace {
// Writes the builder's file and returns its path (the messages must name it).
std::string malformed(const TempDir& dir, const GgufWriter& w) { return w.write(dir, "bad.gguf"); }
}  // namespace

TEST_CASE("malformed: a missing file", "[gguf][malformed]") {
  TempDir dir;
  const auto path = (dir.path / "absent.gguf").string();
  REQUIRE_THROWS_WITH(GgufFile::open(path), Contains(path) && Contains("cannot open"));
}

TEST_CASE("malformed: an empty file", "[gguf][malformed]") {
  TempDir dir;
  const auto path = write_file(dir.path / "empty.gguf", {});
  REQUIRE_THROWS_WITH(GgufFile::open(path), Contains(path) && Contains("truncated header"));
}

TEST_CASE("malformed: bad magic", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.magic = "GGML";
  const auto path = malformed(dir, w);
  REQUIRE_THROWS_WITH(GgufFile::open(path), Contains(path) && Contains("bad magic"));
}

TEST_CASE("malformed: truncated header", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.truncate_to = 14;  // magic, version and half the tensor count
  const auto path = malformed(dir, w);
  REQUIRE_THROWS_WITH(GgufFile::open(path),
                      Contains(path) && Contains("truncated") && Contains("tensor count"));
}

TEST_CASE("malformed: GGUF version 1", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.version = 1;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("version 1") && Contains("only versions 2 and 3"));
}

TEST_CASE("malformed: an unknown GGUF version", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.version = 4;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("unsupported GGUF version 4"));
  w.version = 0x03000000;  // version 3 written big-endian
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("big-endian"));
}

TEST_CASE("malformed: metadata count too large for the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_count_override = uint64_t{1} << 60;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("metadata count 1152921504606846976 is too large"));
}

TEST_CASE("malformed: tensor count too large for the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensor_count_override = 1000000;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("tensor count 1000000 is too large"));
}

TEST_CASE("malformed: a key's length runs past the end of the file", "[gguf][malformed]") {
  TempDir dir;
  GgufWriter w;
  w.kv_raw("ignored", [](Bytes&) {});  // counts one key; its bytes are written below
  w.kvs = Bytes{};
  w.kvs.put<uint64_t>(1000).put<uint32_t>(0).put<uint8_t>(0).put<uint32_t>(0);  // length 1000
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("metadata key") && Contains("length 1000") && Contains("past the end"));
}

TEST_CASE("malformed: a string value's length runs past the end of the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_raw("general.name", [](Bytes& b) { b.type(ValueType::string).put<uint64_t>(~uint64_t{0} - 3); });
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("string value") && Contains("past the end"));
}

TEST_CASE("malformed: a tensor name's length runs past the end of the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  const auto good = w.build();
  // The tensor info starts right after the metadata: overwrite its name length.
  const size_t at = 4 + 4 + 8 + 8 + w.kvs.b.size();
  auto bad = good;
  const uint64_t huge = 1ull << 40;
  std::memcpy(bad.data() + at, &huge, 8);
  const auto path = write_file(dir.path / "bad.gguf", bad);
  REQUIRE_THROWS_WITH(GgufFile::open(path), Contains("tensor name") && Contains("past the end"));
}

TEST_CASE("malformed: an array count too large for the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_raw("tokenizer.ggml.tokens", [](Bytes& b) {
    b.type(ValueType::array).array_header(ValueType::string, uint64_t{1} << 62);
  });
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("'tokenizer.ggml.tokens'") && Contains("cannot fit"));
}

TEST_CASE("malformed: an unknown metadata value type", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_raw("weird", [](Bytes& b) { b.put<uint32_t>(13).put<uint32_t>(0); });
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("'weird'") && Contains("unknown value type 13"));
}

TEST_CASE("malformed: an unknown array element type", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_raw("weird", [](Bytes& b) { b.type(ValueType::array).put<uint32_t>(99).put<uint64_t>(0); });
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("unknown element type 99"));
}

TEST_CASE("malformed: arrays nested too deep", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_raw("deep", [](Bytes& b) {
    b.type(ValueType::array);
    for (int i = 0; i < 100; ++i) b.array_header(ValueType::array, 1);
    b.array_header(ValueType::u8, 0);
  });
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("'deep'") && Contains("nested"));
}

TEST_CASE("malformed: a value cut off by the end of the file", "[gguf][malformed]") {
  TempDir dir;
  GgufWriter w;
  w.alignment = 1;  // no padding after the metadata
  w.kv("general.alignment", ValueType::u32, uint32_t{32});
  auto bytes = w.build();
  bytes.pop_back();  // drop half of the u32
  bytes.pop_back();
  const auto path = write_file(dir.path / "bad.gguf", bytes);
  REQUIRE_THROWS_WITH(GgufFile::open(path), Contains(path) && Contains("truncated") && Contains("u32 value"));
}

TEST_CASE("malformed: duplicate metadata key", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv("llama.block_count", ValueType::u32, uint32_t{3});
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("duplicate metadata key 'llama.block_count'"));
}

TEST_CASE("malformed: general.alignment zero", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv("general.alignment", ValueType::u32, uint32_t{0});
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("general.alignment must be a nonzero power of two, found 0"));
}

TEST_CASE("malformed: general.alignment not a power of two", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv("general.alignment", ValueType::u32, uint32_t{48});
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("general.alignment must be a nonzero power of two, found 48"));
}

TEST_CASE("malformed: general.alignment not an integer", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.kv_string("general.alignment", "32");
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("general.alignment must be an unsigned integer"));
}

TEST_CASE("malformed: a tensor with 0 dimensions", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims.clear();
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("tensor 'blk.0.attn_q.weight' has 0 dimensions"));
}

TEST_CASE("malformed: a tensor with 5 dimensions", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims = {32, 1, 1, 1, 2};
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("tensor 'blk.0.attn_q.weight' has 5 dimensions (must be 1 to 4)"));
}

TEST_CASE("malformed: a huge n_dims", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].n_dims_override = 0xFFFFFFFFu;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)), Contains("4294967295 dimensions"));
}

TEST_CASE("malformed: a zero dimension", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims = {32, 0};
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("'blk.0.attn_q.weight' has a zero dimension"));
}

TEST_CASE("malformed: dimensions whose product overflows 64 bits", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims = {uint64_t{1} << 32, uint64_t{1} << 32, 2};
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("'blk.0.attn_q.weight'") && Contains("too many elements"));
}

TEST_CASE("malformed: more than 2^48 elements", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims = {uint64_t{1} << 25, uint64_t{1} << 24};
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("{33554432, 16777216}") && Contains("too many elements"));
}

TEST_CASE("malformed: an unknown tensor type id", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].type = 99;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("'blk.0.attn_q.weight' has unknown type id 99"));
}

TEST_CASE("malformed: row length not a multiple of the block size", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].dims = {33, 2};
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("row length 33") && Contains("Q4_1 block size 32"));
}

TEST_CASE("malformed: tensor offset not aligned", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].offset_override = 8;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("offset 8 is not a multiple of the alignment 32"));
}

TEST_CASE("malformed: tensor data outside the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.truncate_to = w.build().size() - 1;  // the last byte of the tensor's data is missing
  const auto path = malformed(dir, w);
  REQUIRE_THROWS_WITH(GgufFile::open(path),
                      Contains(path + ": tensor 'blk.0.attn_q.weight' data [offset 0, 40 bytes] "
                                      "lies outside the file (size " +
                               std::to_string(fs::file_size(path)) + ","));
}

TEST_CASE("malformed: tensor offset far past the end", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].offset_override = uint64_t{1} << 40;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("[offset 1099511627776, 40 bytes] lies outside the file"));
}

TEST_CASE("malformed: tensor offset + size overflows 64 bits", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensors[0].offset_override = ~uint64_t{0} - 31;  // aligned, and offset + 40 wraps around
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("[offset 18446744073709551584, 40 bytes] lies outside the file"));
}

TEST_CASE("malformed: duplicate tensor names", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  w.tensor("blk.0.attn_q.weight", {32}, GgmlType::Q4_1, q4_1_block());
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("duplicate tensor name 'blk.0.attn_q.weight'"));
}

TEST_CASE("malformed: tensor infos cut off by the end of the file", "[gguf][malformed]") {
  TempDir dir;
  auto w = minimal_writer();
  // Keep the header, the metadata and 35 bytes of the tensor info: its name (8 + 19 bytes), its
  // n_dims (4) and half of its first dimension.
  w.truncate_to = 4 + 4 + 8 + 8 + w.kvs.b.size() + 35;
  REQUIRE_THROWS_WITH(GgufFile::open(malformed(dir, w)),
                      Contains("truncated") && Contains("tensor dimension"));
}

TEST_CASE("malformed: every truncation of a valid file is rejected cleanly", "[gguf][malformed]") {
  // Any prefix of a valid file either parses (never, here: the data ends the file) or throws
  // GgufError; never anything else (the sanitizer build checks that no read strays).
  TempDir dir;
  const auto full = full_writer(3, 32).build();
  for (size_t n = 0; n < full.size(); n += 7) {
    const auto path = write_file(dir.path / "cut.gguf", std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
    CHECK_THROWS_AS(GgufFile::open(path), GgufError);
  }
}

// ---- (e) The course's model file ------------------------------------------------------------------

TEST_CASE("the course model file has the expected facts", "[gguf][model]") {
  const std::string path = INFER_SOURCE_DIR "/data/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!fs::exists(path)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL("model missing: run data/fetch_model.sh");
    WARN("skipped: " << path << " is absent (run data/fetch_model.sh)");
    return;
  }
  const auto f = GgufFile::open(path);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.tensors().size() == 272);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_uint("llama.block_count") == 30);
  CHECK(f.get_uint("llama.embedding_length") == 576);
  CHECK(f.get_uint("llama.attention.head_count") == 9);
  CHECK(f.get_uint("llama.attention.head_count_kv") == 3);
  CHECK(f.get_float("llama.rope.freq_base") == 100000.0);
  CHECK(f.get_string_array("tokenizer.ggml.tokens").size() == 49152);
  CHECK(f.get_int_array("tokenizer.ggml.token_type").size() == 49152);

  const auto& emb = f.tensor("token_embd.weight");
  CHECK(emb.type == GgmlType::Q8_0);
  CHECK(emb.dims == std::vector<uint64_t>{576, 49152});
  CHECK(emb.n_bytes == uint64_t{576} * 49152 / 32 * 34);
  const auto& q = f.tensor("blk.0.attn_q.weight");
  CHECK(q.type == GgmlType::Q4_1);
  CHECK(q.dims == std::vector<uint64_t>{576, 576});

  const auto wq = dequantize(q);
  REQUIRE(wq.size() == 576u * 576u);
  size_t odd = 0;
  for (float x : wq) odd += !(std::isfinite(x) && std::fabs(x) < 100.0f);
  CHECK(odd == 0);
}
