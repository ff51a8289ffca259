// ggml tensor types: their traits and their dequantization to fp32.
//
// Every block format below is read byte by byte from an unaligned, untrusted buffer (a tensor's
// bytes inside a memory-mapped file), so multi-byte fields are loaded with memcpy, never through
// a cast pointer. The files are little-endian, and so must the machine be.
//
// A note on exactness: in every format the products (fp16 scale × small integer scale × small
// integer code) need at most 23 significant bits, so they are exact in fp32; the only rounding is
// the final addition of the minimum. The result is therefore the same whether or not the compiler
// fuses a multiply and an add, and it equals the reference dequantizers bit for bit.
#include "gguf/ggml_types.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace infer::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF files are little-endian; this reader assumes a little-endian machine");

namespace {

// QK_K: the number of weights in one super-block of the "K" formats.
constexpr int64_t kSuperBlock = 256;

struct TableEntry {
  uint32_t id;
  TypeTraits traits;
};

// Every ggml type id a GGUF file may use. Those without a dequantizer here are still known so
// that a file holding them can be opened (and its other tensors read); their sizes come from
// ggml's block structs.
constexpr std::array kTypes{
    TableEntry{0, {"F32", 1, 4, true}},
    TableEntry{1, {"F16", 1, 2, true}},
    TableEntry{2, {"Q4_0", 32, 18, true}},
    TableEntry{3, {"Q4_1", 32, 20, true}},
    TableEntry{6, {"Q5_0", 32, 22, true}},
    TableEntry{7, {"Q5_1", 32, 24, true}},
    TableEntry{8, {"Q8_0", 32, 34, true}},
    // block_q8_1 is fp16 d, fp16 s (= d·Σq), 32 int8: 36 bytes in today's ggml (older ggml used
    // two floats, 40 bytes, and gguf-py's size table still says 40).
    TableEntry{9, {"Q8_1", 32, 36, true}},
    TableEntry{10, {"Q2_K", 256, 84, true}},
    TableEntry{11, {"Q3_K", 256, 110, true}},
    TableEntry{12, {"Q4_K", 256, 144, true}},
    TableEntry{13, {"Q5_K", 256, 176, true}},
    TableEntry{14, {"Q6_K", 256, 210, true}},
    TableEntry{15, {"Q8_K", 256, 292, true}},
    TableEntry{16, {"IQ2_XXS", 256, 66, false}},
    TableEntry{17, {"IQ2_XS", 256, 74, false}},
    TableEntry{18, {"IQ3_XXS", 256, 98, false}},
    TableEntry{19, {"IQ1_S", 256, 50, false}},
    TableEntry{20, {"IQ4_NL", 32, 18, false}},
    TableEntry{21, {"IQ3_S", 256, 110, false}},
    TableEntry{22, {"IQ2_S", 256, 82, false}},
    TableEntry{23, {"IQ4_XS", 256, 136, false}},
    TableEntry{24, {"I8", 1, 1, false}},
    TableEntry{25, {"I16", 1, 2, false}},
    TableEntry{26, {"I32", 1, 4, false}},
    TableEntry{27, {"I64", 1, 8, false}},
    TableEntry{28, {"F64", 1, 8, false}},
    TableEntry{29, {"IQ1_M", 256, 56, false}},
    TableEntry{30, {"BF16", 1, 2, true}},
    TableEntry{34, {"TQ1_0", 256, 54, false}},
    TableEntry{35, {"TQ2_0", 256, 66, false}},
    TableEntry{39, {"MXFP4", 32, 17, false}},
};

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }

// ---- Plain floating-point types --------------------------------------------------------------

void dequant_f32(const uint8_t* src, float* dst, int64_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void dequant_f16(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}

void dequant_bf16(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(load_u16(src + 2 * i));
}

// ---- Blocks of 32 weights ---------------------------------------------------------------------
// In the 4- and 5-bit formats, byte j of the 16 nibble bytes holds weight j in its low nibble and
// weight j+16 in its high nibble.

// Q4_0 (18 bytes): fp16 d | 16 bytes of nibbles.   w = d·(q − 8), q in 0..15.
void dequant_q4_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 18, dst += 32) {
    const float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
      dst[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

// Q4_1 (20 bytes): fp16 d | fp16 m | 16 bytes of nibbles.   w = d·q + m, q in 0..15.
void dequant_q4_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 20, dst += 32) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint8_t* qs = src + 4;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
      dst[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
    }
  }
}

// Q5_0 (22 bytes): fp16 d | u32 qh (bit j = fifth bit of weight j) | 16 bytes of nibbles.
//   q = nibble | (bit << 4), in 0..31;   w = d·(q − 16).
void dequant_q5_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 22, dst += 32) {
    const float d = load_f16(src);
    const uint32_t qh = load_u32(src + 2);
    const uint8_t* qs = src + 6;
    for (int j = 0; j < 16; ++j) {
      const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = d * static_cast<float>(lo - 16);
      dst[j + 16] = d * static_cast<float>(hi - 16);
    }
  }
}

// Q5_1 (24 bytes): fp16 d | fp16 m | u32 qh | 16 bytes of nibbles.   w = d·q + m, q in 0..31.
void dequant_q5_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 24, dst += 32) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint32_t qh = load_u32(src + 4);
    const uint8_t* qs = src + 8;
    for (int j = 0; j < 16; ++j) {
      const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = d * static_cast<float>(lo) + m;
      dst[j + 16] = d * static_cast<float>(hi) + m;
    }
  }
}

// Q8_0 (34 bytes): fp16 d | 32 int8 q.   w = d·q.
void dequant_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 34, dst += 32) {
    const float d = load_f16(src);
    for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(static_cast<int8_t>(src[2 + j]));
  }
}

// Q8_1 (36 bytes): fp16 d | fp16 s (= d·Σq, unused here) | 32 int8 q.   w = d·q.
void dequant_q8_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 36, dst += 32) {
    const float d = load_f16(src);
    for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(static_cast<int8_t>(src[4 + j]));
  }
}

// ---- Super-blocks of 256 weights (the "K" formats) --------------------------------------------

// Q2_K (84 bytes): scales[16] | qs[64] | fp16 d | fp16 dmin.
//   Sixteen sub-blocks of 16 weights; scales[s] holds the sub-block's scale in its low nibble and
//   its minimum in its high nibble.  w = d·(scales[s] & 15)·q − dmin·(scales[s] >> 4), q in 0..3.
//   The 2-bit codes: weight k = 128·h + 32·j + l (h in 0..1, j in 0..3, l in 0..31) is bits 2j..2j+1
//   of qs[32·h + l]; its sub-block is s = k / 16.
void dequant_q2_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 84, dst += kSuperBlock) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    const float d = load_f16(src + 80);
    const float dmin = load_f16(src + 82);
    for (int k = 0; k < 256; ++k) {
      const int h = k / 128, j = (k % 128) / 32, l = k % 32;
      const int q = (qs[32 * h + l] >> (2 * j)) & 3;
      const uint8_t sc = scales[k / 16];
      const float dl = d * static_cast<float>(sc & 0x0F);
      const float ml = dmin * static_cast<float>(sc >> 4);
      dst[k] = dl * static_cast<float>(q) - ml;
    }
  }
}

// Q3_K (110 bytes): hmask[32] | qs[64] | scales[12] | fp16 d.
//   Sixteen sub-blocks of 16 weights with signed 6-bit scales (stored + 32): scale s has its low
//   4 bits in byte s (s < 8, low nibble) or byte s − 8 (s ≥ 8, high nibble), and its high 2 bits
//   in byte 8 + s % 4 at bit position 2·(s / 4).
//   Weight k = 128·h + 32·j + l: low 2 bits = bits 2j..2j+1 of qs[32·h + l]; the high bit is bit
//   k / 32 of hmask[l], and a *clear* bit subtracts 4:  q = low − (bit ? 0 : 4), in −4..3.
//   w = d·(scale − 32)·q.
void dequant_q3_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 110, dst += kSuperBlock) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* sc = src + 96;
    const float d = load_f16(src + 108);
    std::array<float, 16> dl{};
    for (int s = 0; s < 16; ++s) {
      const int low = s < 8 ? (sc[s] & 0x0F) : (sc[s - 8] >> 4);
      const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
      dl[s] = d * static_cast<float>((low | (high << 4)) - 32);
    }
    for (int k = 0; k < 256; ++k) {
      const int h = k / 128, j = (k % 128) / 32, l = k % 32;
      const int low = (qs[32 * h + l] >> (2 * j)) & 3;
      const int bit = (hmask[l] >> (k / 32)) & 1;
      const int q = low - (bit ? 0 : 4);
      dst[k] = dl[k / 16] * static_cast<float>(q);
    }
  }
}

// The 12-byte scale packing shared by Q4_K and Q5_K: eight 6-bit scales and eight 6-bit minima.
//   i < 4:  scale = bytes[i] & 63,                          min = bytes[i + 4] & 63
//   i ≥ 4:  scale = (bytes[i + 4] & 15) | (bytes[i − 4] >> 6) << 4,
//           min   = (bytes[i + 4] >> 4) | (bytes[i] >> 6) << 4
void unpack_scale_min_k4(const uint8_t* bytes, int i, int& scale, int& min) {
  if (i < 4) {
    scale = bytes[i] & 63;
    min = bytes[i + 4] & 63;
  } else {
    scale = (bytes[i + 4] & 0x0F) | ((bytes[i - 4] >> 6) << 4);
    min = (bytes[i + 4] >> 4) | ((bytes[i] >> 6) << 4);
  }
}

// Q4_K (144 bytes): fp16 d | fp16 dmin | scales[12] | qs[128].
//   Eight sub-blocks of 32 weights; sub-block i has 6-bit scale sc_i and minimum m_i (packing
//   above). Each 32 bytes of qs serve 64 weights: the low nibbles weights 0..31 of the pair,
//   the high nibbles weights 32..63.   w = d·sc_i·q − dmin·m_i, q in 0..15.
void dequant_q4_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 144, dst += kSuperBlock) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qs = src + 16;
    for (int i = 0; i < 8; ++i) {
      int sc = 0, m = 0;
      unpack_scale_min_k4(scales, i, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = qs + 32 * (i / 2);
      const int shift = 4 * (i % 2);
      for (int l = 0; l < 32; ++l) {
        dst[32 * i + l] = dl * static_cast<float>((q[l] >> shift) & 0x0F) - ml;
      }
    }
  }
}

// Q5_K (176 bytes): fp16 d | fp16 dmin | scales[12] | qh[32] | qs[128].
//   As Q4_K, with a fifth bit per weight: weight 32·i + l takes bit i of qh[l].
//   w = d·sc_i·q − dmin·m_i, q in 0..31.
void dequant_q5_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 176, dst += kSuperBlock) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int i = 0; i < 8; ++i) {
      int sc = 0, m = 0;
      unpack_scale_min_k4(scales, i, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = qs + 32 * (i / 2);
      const int shift = 4 * (i % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0x0F) | (((qh[l] >> i) & 1) << 4);
        dst[32 * i + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

// Q6_K (210 bytes): ql[128] | qh[64] | int8 scales[16] | fp16 d.
//   Sixteen sub-blocks of 16 weights with signed 8-bit scales. Weight k = 128·h + r (h in 0..1,
//   r in 0..127): low 4 bits = nibble r / 64 (0 low, 1 high) of ql[64·h + r % 64]; high 2 bits =
//   bits 2·(r / 32)..+1 of qh[32·h + r % 32].   w = d·scales[k / 16]·(q − 32), q in 0..63.
void dequant_q6_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 210, dst += kSuperBlock) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const uint8_t* scales = src + 192;
    const float d = load_f16(src + 208);
    for (int k = 0; k < 256; ++k) {
      const int h = k / 128, r = k % 128;
      const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
      const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
      const float dl = d * static_cast<float>(static_cast<int8_t>(scales[k / 16]));
      dst[k] = dl * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

// Q8_K (292 bytes): f32 d | 256 int8 q | 16 int16 block sums (unused here).   w = d·q.
void dequant_q8_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, src += 292, dst += kSuperBlock) {
    const float d = load_f32(src);
    for (int k = 0; k < 256; ++k) dst[k] = d * static_cast<float>(static_cast<int8_t>(src[4 + k]));
  }
}

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const auto& e : kTypes) {
    if (e.id == type_id) return e.traits;
  }
  return std::nullopt;
}

const TypeTraits& traits(GgmlType type) {
  for (const auto& e : kTypes) {
    if (e.id == static_cast<uint32_t>(type)) return e.traits;
  }
  throw std::invalid_argument("unknown ggml type id " +
                              std::to_string(static_cast<uint32_t>(type)));
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const TypeTraits& t = traits(type);
  if (n < 0 || n % t.block_size != 0) {
    throw std::invalid_argument("dequantize_row: " + std::to_string(n) +
                                " weights is not a multiple of the " + std::string(t.name) +
                                " block size " + std::to_string(t.block_size));
  }
  const auto* s = static_cast<const uint8_t*>(src);
  switch (type) {
    case GgmlType::F32: return dequant_f32(s, dst, n);
    case GgmlType::F16: return dequant_f16(s, dst, n);
    case GgmlType::BF16: return dequant_bf16(s, dst, n);
    case GgmlType::Q4_0: return dequant_q4_0(s, dst, n);
    case GgmlType::Q4_1: return dequant_q4_1(s, dst, n);
    case GgmlType::Q5_0: return dequant_q5_0(s, dst, n);
    case GgmlType::Q5_1: return dequant_q5_1(s, dst, n);
    case GgmlType::Q8_0: return dequant_q8_0(s, dst, n);
    case GgmlType::Q8_1: return dequant_q8_1(s, dst, n);
    case GgmlType::Q2_K: return dequant_q2_k(s, dst, n);
    case GgmlType::Q3_K: return dequant_q3_k(s, dst, n);
    case GgmlType::Q4_K: return dequant_q4_k(s, dst, n);
    case GgmlType::Q5_K: return dequant_q5_k(s, dst, n);
    case GgmlType::Q6_K: return dequant_q6_k(s, dst, n);
    case GgmlType::Q8_K: return dequant_q8_k(s, dst, n);
  }
  throw std::invalid_argument("dequantize_row: no dequantizer for type " + std::string(t.name));
}

// ---- IEEE binary16 and bfloat16 ---------------------------------------------------------------
// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Exponent 0 is zero or a
// subnormal (fraction · 2^−24), exponent 31 is infinity (fraction 0) or NaN.

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t frac = h & 0x3FFu;
  uint32_t bits = 0;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (frac << 13);  // infinity, or NaN keeping its payload
  } else if (exp != 0) {
    bits = sign | ((exp - 15 + 127) << 23) | (frac << 13);
  } else if (frac == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal: value = frac · 2^−24. Shift the fraction up until its leading 1 reaches the
    // implicit-bit position (bit 10); each shift lowers the exponent by one.
    int e = -14;
    while ((frac & 0x400u) == 0) {
      frac <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e + 127) << 23) | ((frac & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xFFu;
  const uint32_t frac = x & 0x7FFFFFu;
  if (exp == 0xFF) {
    if (frac == 0) return sign | 0x7C00u;  // infinity
    // NaN: keep the top payload bits and force the quiet bit, so it stays a NaN.
    return static_cast<uint16_t>(sign | 0x7C00u | 0x200u | (frac >> 13));
  }
  const int e = static_cast<int>(exp) - 127;  // unbiased exponent (exp 0 gives −127: tiny)
  if (e > 15) return sign | 0x7C00u;          // too large even before rounding: infinity
  if (e >= -14) {
    // Normal range: keep 10 fraction bits, round to nearest, ties to even. A carry out of the
    // fraction correctly bumps the exponent (and 65520 and above become infinity).
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (frac >> 13);
    const uint32_t rest = frac & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (e < -25) return sign;  // below half the smallest subnormal: ±0
  // Subnormal result: value = m · 2^−24 with m = significand (24 bits, implicit 1) shifted.
  const uint32_t sig = frac | 0x800000u;
  const int shift = -e - 1;  // 14..24: how far the 24-bit significand moves right
  uint32_t h = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // may round up to the smallest normal
  return static_cast<uint16_t>(sign | h);
}

// bfloat16 is the top half of an fp32: widening is exact for every value, NaN payloads included.
float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

}  // namespace infer::gguf
