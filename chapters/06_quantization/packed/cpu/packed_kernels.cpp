// The CPU kernels of packed_kernels.hpp: matrix products straight from the packed bytes.
//
// Decode (n = 1 token) streams every weight once, so its speed is bytes per second: the kernel
// reads each row's packed bytes, turns a chunk of 8 codes into 8 fp32 weights in one SIMD
// register, and multiplies them straight into the accumulators — the fp32 matrix never exists in memory.
// The weight in the register is exactly the scheme's own dequantize() value (same operations,
// same rounding), so the only difference from "dequantize, then multiply" is the order of the
// fp32 sums. How a chunk is decoded:
//
//   int8, q8_0    8 int8 codes → int32 → fp32, × the row's or block's fp16 scale
//   int4-g128     4 bytes broadcast to 8 lanes, lane j shifted right by 4j and masked: the 8
//                 nibbles in order; − 8, → fp32, × the group's scale (n = 1: see below)
//   nf4           the same nibbles, looked up in the 16 levels (two 8-lane permutes, blended on
//                 bit 3 of the code), × the block's absmax
//   q4_1          weight j and j + 16 share byte j: 8 bytes → 8 lanes, low or high nibble,
//                 then d·q + m in one fused multiply-add
//
// One token (n = 1, the decode step) takes a faster path for the 4-bit formats (see "decode
// (n = 1)" below): 8 bytes are zero-extended to 8 lanes and give 16 weights at once, the low
// nibbles (even columns) by `& 15` and the high ones (odd columns) by `>> 4`, multiplied with x
// reordered once per call into the same even/odd order; q4_1's layout already pairs that way.
// nf4 looks its levels up 32 codes at a time with byte shuffles instead (dot_nf4_row; on
// 128-bit targets dot_nf4_row_4). On AVX-512 all three 4-bit formats look their weights up in a
// 16-entry register instead (dot_nibble_row_16, dot_q4_1_row_16).
//
// The threads split the output rows (lib's thread pool, as lib's small-n kernel does). A small batch (n < 32: a few
// decoding sequences) decodes each chunk once for up to 4 rows of x, so the weight read and
// its decoding are shared. A large batch (prefill) is arithmetic-bound instead: each thread
// decodes a panel of rows (about 192 KiB of fp32, in its own cache) once and multiplies it with
// all n rows of x through OpenBLAS's sgemm, so every weight is decoded once per call.
//
// SIMD: Highway, compiled once per target by foreach_target.h (SSE4, AVX2, AVX-512 and AVX-512
// with VNNI on x86-64, NEON on arm64) and chosen at run time (lib's tensor/simd_target.hpp). The
// vectors are 8 fp32 lanes where the target has them (256 bits, also on AVX-512), else 4.
#ifndef CH06_PACKED_KERNELS_SHARED_  // the part compiled once, not per target
#define CH06_PACKED_KERNELS_SHARED_
#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>
#include <hwy/cache_control.h>

#include "gguf/ggml_types.hpp"
#include "int8_activations.hpp"
#include "nf4.hpp"
#include "packed_kernels.hpp"
#include "tensor/ops.hpp"  // num_threads
#include "tensor/simd_target.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

constexpr int64_t kGgmlBlock = 32;
// From this many rows of x on, a call decodes panels and multiplies them with sgemm.
constexpr int64_t kPanelMinRows = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


// Where the parts of a packed matrix are (the layouts of packed_kernels.hpp).
struct View {
  PackedFormat format;
  const uint8_t* w;
  int64_t rows, cols;
  const uint8_t* scales = nullptr;  // int8 / int4-g128 / nf4: the fp16 scales
  const uint8_t* codes = nullptr;   // … then the codes
  int64_t group = 0;                // int4-g128: 128, nf4: 64 consecutive weights per scale
  int64_t row_bytes = 0;            // q8_0 / q4_1: bytes of one row of blocks
};

View make_view(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const char* what) {
  if (w == nullptr) throw std::invalid_argument(fmt::format("{}: null weight pointer", what));
  if (rows <= 0 || cols <= 0) throw std::invalid_argument(fmt::format("{}: shape [{}, {}]", what, rows, cols));
  View v{format, w, rows, cols};
  const int64_t n = rows * cols;
  switch (format) {
    case PackedFormat::int8_per_row:
      v.scales = w;
      v.codes = w + 2 * rows;
      break;
    case PackedFormat::int4_g128:
    case PackedFormat::nf4:
      v.group = format == PackedFormat::nf4 ? 64 : 128;
      v.scales = w;
      v.codes = w + 2 * ceil_div(n, v.group);
      break;
    case PackedFormat::q8_0:
    case PackedFormat::q4_1:
      if (cols % kGgmlBlock != 0)
        throw std::invalid_argument(fmt::format("{}: {} rows of {} weights, not a multiple of the block of 32", what,
                                                format_flag(format), cols));
      v.row_bytes = cols / kGgmlBlock * (format == PackedFormat::q8_0 ? 34 : 20);
      break;
    default:
      throw std::invalid_argument(fmt::format("{}: unknown packed format", what));
  }
  return v;
}

// The bytes of row r's codes (or blocks): [begin, end).
std::pair<const uint8_t*, const uint8_t*> row_bytes(const View& v, int64_t r) {
  switch (v.format) {
    case PackedFormat::int8_per_row: return {v.codes + r * v.cols, v.codes + (r + 1) * v.cols};
    case PackedFormat::int4_g128:
    case PackedFormat::nf4: return {v.codes + r * v.cols / 2, v.codes + ((r + 1) * v.cols + 1) / 2};
    default: return {v.w + r * v.row_bytes, v.w + (r + 1) * v.row_bytes};
  }
}

}  // namespace
}  // namespace infer::quant
#endif  // CH06_PACKED_KERNELS_SHARED_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "06_quantization/packed/cpu/packed_kernels.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>

#include "cpu/fp16_scale-inl.h"

HWY_BEFORE_NAMESPACE();
namespace infer::quant::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// 8 fp32 lanes (AVX2, and AVX-512 at half width); 4 on a 128-bit target (SSE4, NEON), where the
// same code runs unchanged.
using DF = hn::CappedTag<float, 8>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF{}));
static_assert(kLanes == 4 || kLanes == 8, "the nibble decoder expects 4 or 8 fp32 lanes");

// ---- decoding one chunk of kLanes codes into fp32 lanes ----

// kLanes nibbles from kLanes/2 bytes, not masked: lane j holds nibble j in its low 4 bits and
// the nibbles after it above them.
HWY_INLINE VU load_nibbles_unmasked(const uint8_t* p) {
  const DU du;
  uint32_t word = 0;
  std::memcpy(&word, p, kLanes / 2);
  return hn::Shr(hn::Set(du, word), hn::ShiftLeft<2>(hn::Iota(du, 0)));  // shifted by 0, 4, 8, …
}

// kLanes nibbles from kLanes/2 bytes, low nibble first: lane j = nibble j.
HWY_INLINE VU load_nibbles(const uint8_t* p) {
  return hn::And(load_nibbles_unmasked(p), hn::Set(DU(), 0xF));
}

// kLanes int8 codes as fp32.
HWY_INLINE VF load_int8(const int8_t* p) {
  const DF df;
  const hn::Rebind<int8_t, DF> d8;
  return hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(d8, p)));
}

// A 16-entry table of fp32 values (the NF4 levels × a block's absmax), looked up per lane.
struct Table16 {
  VF lo, hi;          // entries 0 … 7 and 8 … 15 (kLanes == 8)
  float all[16] = {};  // every entry (other lane counts)

  Table16(const float* values, float scale) {
    const DF df;
    if constexpr (kLanes == 8) {
      lo = hn::Mul(hn::LoadU(df, values), hn::Set(df, scale));
      hi = hn::Mul(hn::LoadU(df, values + 8), hn::Set(df, scale));
    } else {
      for (int i = 0; i < 16; ++i) all[i] = values[i] * scale;
    }
  }
  // lane j = entry (nibble j), from load_nibbles_unmasked.
  HWY_INLINE VF lookup(VU nibbles) const {
    const DF df;
    if constexpr (kLanes == 8) {
      // vpermps reads only the low 3 bits of an index; Highway's debug builds check the range.
      const VU low3 = HWY_IS_DEBUG_BUILD ? hn::And(nibbles, hn::Set(DU(), 7)) : nibbles;
      const auto idx = hn::IndicesFromVec(df, hn::BitCast(DI(), low3));
      // Bit 3 of the nibble, moved to the sign bit, picks the upper half.
      const VF upper = hn::BitCast(df, hn::ShiftLeft<28>(nibbles));
      return hn::IfNegativeThenElse(upper, hn::TableLookupLanes(hi, idx), hn::TableLookupLanes(lo, idx));
    } else {
      alignas(16) uint32_t c[kLanes];
      alignas(16) float l[kLanes];
      hn::Store(nibbles, DU(), c);
      for (int64_t j = 0; j < kLanes; ++j) l[j] = all[c[j] & 15];
      return hn::Load(df, l);
    }
  }
};

// ---- walking one row of the packed matrix ----
//
// visit_row(v, r, sink) hands the weights of row r to the sink in column order, as
//   sink.run(c0, len, decode)   len (a multiple of kLanes) weights from column c0; decode(k)
//                               returns the kLanes weights from column c0 + k as a vector
//   sink.one(c, w)              one weight (odd starts and tails)
// with every weight equal to what the scheme's dequantize() writes.

// int4-g128 and nf4: groups of kGroup consecutive weights of the row-major matrix, codes two
// per byte. (kGroup is a constant so that finding a weight's group is a shift, not a division.)
template <bool kNf4, class Sink>
HWY_INLINE void visit_nibble_row(const View& v, int64_t r, Sink& sink) {
  constexpr int64_t kGroup = kNf4 ? 64 : 128;
  const DF df;
  const int64_t i0 = r * v.cols;  // flat index of the row's first weight
  auto code_at = [&](int64_t i) { return (i & 1) ? v.codes[i / 2] >> 4 : v.codes[i / 2] & 0x0F; };
  int64_t c = 0;
  while (c < v.cols) {
    const int64_t g = (i0 + c) / kGroup;
    const int64_t end = std::min(v.cols, (g + 1) * kGroup - i0);  // the group may go on in the next row
    const float s = load_scale(v.scales + 2 * g);
    auto value = [&](int q) { return kNf4 ? s * kNf4Levels[q] : static_cast<float>(q - 8) * s; };
    if ((i0 + c) & 1) {  // a row (or group) that starts in the high nibble of a byte
      sink.one(c, value(code_at(i0 + c)));
      ++c;
    }
    const int64_t len = (end - c) / kLanes * kLanes;
    const uint8_t* p = v.codes + (i0 + c) / 2;
    if constexpr (kNf4) {
      // The block's 16 weights, fl(absmax · level), are dequantize()'s values: look them up.
      const Table16 table(kNf4Levels.data(), s);
      sink.run(c, len, [&](int64_t k) { return table.lookup(load_nibbles_unmasked(p + k / 2)); });
    } else {
      const VF scale = hn::Set(df, s);
      const auto eight = hn::Set(DI(), 8);
      sink.run(c, len, [&](int64_t k) {
        const auto q = hn::Sub(hn::BitCast(DI(), load_nibbles(p + k / 2)), eight);
        return hn::Mul(hn::ConvertTo(df, q), scale);
      });
    }
    for (c += len; c < end; ++c) sink.one(c, value(code_at(i0 + c)));
  }
}

template <class Sink>
HWY_INLINE void visit_row(const View& v, int64_t r, Sink& sink) {
  const DF df;
  switch (v.format) {
    case PackedFormat::int8_per_row: {
      const float s = load_scale(v.scales + 2 * r);
      const VF scale = hn::Set(df, s);
      const auto* q = reinterpret_cast<const int8_t*>(v.codes + r * v.cols);
      const int64_t len = v.cols / kLanes * kLanes;
      sink.run(0, len, [&](int64_t k) { return hn::Mul(load_int8(q + k), scale); });
      for (int64_t c = len; c < v.cols; ++c) sink.one(c, static_cast<float>(q[c]) * s);
      break;
    }
    case PackedFormat::int4_g128: visit_nibble_row<false>(v, r, sink); break;
    case PackedFormat::nf4: visit_nibble_row<true>(v, r, sink); break;
    case PackedFormat::q8_0: {
      const uint8_t* row = v.w + r * v.row_bytes;
      for (int64_t b = 0; b < v.cols / kGgmlBlock; ++b) {
        const uint8_t* blk = row + 34 * b;
        const VF d = hn::Set(df, load_scale(blk));
        const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
        sink.run(b * kGgmlBlock, kGgmlBlock, [&](int64_t k) { return hn::Mul(load_int8(q + k), d); });
      }
      break;
    }
    case PackedFormat::q4_1: {
      const uint8_t* row = v.w + r * v.row_bytes;
      const hn::Rebind<uint8_t, DF> d8;
      for (int64_t b = 0; b < v.cols / kGgmlBlock; ++b) {
        const uint8_t* blk = row + 20 * b;
        const VF d = hn::Set(df, load_scale(blk)), m = hn::Set(df, load_scale(blk + 2));
        const uint8_t* qs = blk + 4;  // weight j in the low nibble of byte j, weight j + 16 in its high nibble
        sink.run(b * kGgmlBlock, kGgmlBlock, [&](int64_t k) {
          const VU bytes = hn::PromoteTo(DU(), hn::LoadU(d8, qs + (k & 15)));
          const VU q = k < 16 ? hn::And(bytes, hn::Set(DU(), 0x0F)) : hn::ShiftRight<4>(bytes);
          return hn::MulAdd(hn::ConvertTo(df, hn::BitCast(DI(), q)), d, m);  // d·q + m, as dequantize()
        });
      }
      break;
    }
  }
}

// ---- sinks ----

// Dot products of one weight row with NX rows of x. Independent accumulators (U chunks × NX
// rows, 4 in all) keep the fused multiply-adds from waiting on each other.
template <int NX>
struct DotSink {
  static constexpr int U = NX >= 4 ? 1 : 4 / NX;
  const float* x[NX];
  VF acc[U][NX];
  float tail[NX] = {};

  explicit DotSink(const float* const* rows) {
    for (int i = 0; i < NX; ++i) {
      x[i] = rows[i];
      for (int u = 0; u < U; ++u) acc[u][i] = hn::Zero(DF());
    }
  }

  template <class Decode>
  HWY_INLINE void run(int64_t c0, int64_t len, const Decode& decode) {
    const DF df;
    int64_t k = 0;
    for (; k + U * kLanes <= len; k += U * kLanes) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const VF w = decode(k + u * kLanes);
#pragma GCC unroll 4
        for (int i = 0; i < NX; ++i) acc[u][i] = hn::MulAdd(w, hn::LoadU(df, x[i] + c0 + k + u * kLanes), acc[u][i]);
      }
    }
    for (; k < len; k += kLanes) {
      const VF w = decode(k);
#pragma GCC unroll 4
      for (int i = 0; i < NX; ++i) acc[0][i] = hn::MulAdd(w, hn::LoadU(df, x[i] + c0 + k), acc[0][i]);
    }
  }
  void one(int64_t c, float w) {
    for (int i = 0; i < NX; ++i) tail[i] += x[i][c] * w;
  }
  float result(int i) const {
    VF sum = acc[0][i];
    for (int u = 1; u < U; ++u) sum = hn::Add(sum, acc[u][i]);
    return hn::GetLane(hn::SumOfLanes(DF(), sum)) + tail[i];
  }
};

// Writes the dequantized row to out[0 … cols).
struct StoreSink {
  float* out;
  template <class Decode>
  HWY_INLINE void run(int64_t c0, int64_t len, const Decode& decode) {
    for (int64_t k = 0; k < len; k += kLanes) hn::StoreU(decode(k), DF(), out + c0 + k);
  }
  void one(int64_t c, float w) { out[c] = w; }
};

// y[i, r] for rows i … i + NX of x.
template <int NX>
void dot_rows(const View& v, int64_t r, const float* x, int64_t i, float* y) {
  const float* rows[NX];
  for (int j = 0; j < NX; ++j) rows[j] = x + (i + j) * v.cols;
  DotSink<NX> sink(rows);
  visit_row(v, r, sink);
  for (int j = 0; j < NX; ++j) y[(i + j) * v.rows + r] = sink.result(j);
}

// Asks for the cache lines of row r a few rows ahead of their use: the hardware prefetcher
// alone leaves a decode step waiting on memory at these short rows (measured: int4 decode
// of a matrix larger than the caches ran at half the speed of one that fits).
//
// HWY_INLINE (always inline) is not about speed: it keeps the prefetches at all. To GCC a
// prefetch reads and writes no memory, so a separate function that only prefetches has no
// effect it must keep, and GCC 12 deleted every call to it: until 2026-12-07 this file held no
// prefetch instruction, and a Q4_1 decode step with fp32 activations streamed 18% of the read
// bandwidth instead of 37% (docs/performance.md). `objdump -d` of the object shows them.
constexpr int64_t kPrefetchBytes = 4096;  // how far ahead
HWY_INLINE void prefetch_row(const View& v, int64_t r) {
  if (r >= v.rows) return;
  const auto [begin, end] = row_bytes(v, r);
  for (const uint8_t* p = begin; p < end; p += 64) hwy::Prefetch(p);
  if (v.group > 0) hwy::Prefetch(v.scales + 2 * ((r * v.cols) >> (v.group == 64 ? 6 : 7)));
}

// ---- decode (n = 1): nibbles unpacked in pairs ----
//
// The generic walk above spends most of a 4-bit decode step unpacking: 4 bytes broadcast to 8
// lanes and shifted by a different amount in each lane, for every 8 weights. One token's
// product can instead take the packed bytes as they come:
//
//   8 bytes → 8 int32 lanes (one zero-extending load); lane j holds byte j =
//   (weight 2j + 1) << 4 | (weight 2j). `& 15` gives the 8 even columns, `>> 4` the 8 odd ones.
//
// so 16 weights cost one load and two cheap bit operations, if x is in the same order. x is
// reordered once per call (cols floats, a few KiB): in every chunk of 16 columns the 8 even
// columns come first, then the 8 odd ones. The row's sum has the same products, in another order.
//
// q4_1 needs no reordering: byte j of a block holds weights j and j + 16, so the low nibbles of
// bytes 0–7 are weights 0–7, of bytes 8–15 weights 8–15, the high nibbles weights 16–31.
//
// Each row keeps 4 accumulators so that 4 fused multiply-adds are in flight. (Two to four rows
// sharing each load of x were measured too: no faster, the loads of x are not what limits.)
//
// These one-token kernels use the whole register where the target has it: 16 lanes on AVX-512
// (DW below), 8 on AVX2, 4 on SSE4 and NEON. A decode step on 2 cores runs out of instructions
// before it runs out of memory bandwidth — at 8 lanes, an AVX-512 Xeon's int8 and 4-bit decode
// streamed 13–27% of its read bandwidth (bench_quant -t 2, 2026-12-05), barely faster than fp32 — so 16 weights per
// instruction instead of 8 matter wherever the core has 512-bit units. (The generic walk and
// nf4's byte shuffles below stay at DF's 8 lanes; on AVX-512 nf4 takes dot_nibble_row_16.)
//
// int4-g128 and nf4 need columns a multiple of 64, so that each row starts on a byte and every
// run of 64 columns has one scale (int4-g128's groups of 128 then start at column 0 or 64 of a
// run, nf4's blocks of 64 at 0); nf4 needs 8 lanes. Other shapes take the generic walk.
constexpr int64_t kFastRun = 64;
using DW = hn::CappedTag<float, 16>;  // the whole register, up to 16 lanes
using DWI = hn::RebindToSigned<DW>;
using DWU = hn::RebindToUnsigned<DW>;
using VW = hn::Vec<DW>;
constexpr int64_t kWide = static_cast<int64_t>(hn::MaxLanes(DW{}));
static_assert(kFastRun % (2 * kWide) == 0 && kGgmlBlock % kWide == 0, "a run holds whole steps");

bool fast_decode_applies(const View& v, int64_t n) {
  if (n != 1) return false;
  switch (v.format) {
    case PackedFormat::int4_g128: return v.cols % kFastRun == 0;
    case PackedFormat::nf4: return v.cols % kFastRun == 0;
    default: return true;  // int8 takes any width; q8_0, q4_1: cols % 32 == 0 already
  }
}

// x[0 … cols) in the order the nibble decoders produce: per 2·half columns, the half even
// columns, then the half odd ones (half: kWide for int4 and the 16-lane lookups, 16 for nf4 on
// 128-bit targets).
void reorder_even_odd(const float* x, int64_t cols, int64_t half, float* out) {
  for (int64_t c = 0; c < cols; c += 2 * half)
    for (int64_t j = 0; j < half; ++j) {
      out[c + j] = x[c + 2 * j];
      out[c + half + j] = x[c + 2 * j + 1];
    }
}

HWY_INLINE float sum_of(VW a, VW b, VW c, VW d) {
  return hn::GetLane(hn::SumOfLanes(DW(), hn::Add(hn::Add(a, b), hn::Add(c, d))));
}

// block(i, second) for i = 0 … n − 1, two at a time: second is 0 or 1 and a constant in each
// call once inlined, so a kernel can name its accumulators by it. (Chosen by i at run time,
// GCC kept them on the stack, and every multiply-add waited for a store and a load.)
template <class Block>
HWY_INLINE void in_pairs(int64_t n, const Block& block) {
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    block(i, 0);
    block(i + 1, 1);
  }
  if (i < n) block(i, 0);
}

// 16 weights from a 16-entry table, one per code (16 lanes: AVX-512). vpermps reads only the
// low 4 bits of a lane, so codes with more bits above (a whole byte) need no mask; Highway's
// debug builds check the range, so they get one.
HWY_INLINE VW lookup16(VW table, hn::Vec<DWU> codes) {
  const auto low4 = HWY_IS_DEBUG_BUILD ? hn::And(codes, hn::Set(DWU(), 15)) : codes;
  return hn::TableLookupLanes(table, hn::IndicesFromVec(DW(), hn::BitCast(DWI(), low4)));
}

// the-change: begin dot_int4_row
// y[r] for a row of int4-g128; xr from reorder_even_odd.
HWY_INLINE float dot_int4_row(const View& v, int64_t r, const float* xr) {
  const DW dw;
  const DWU du;
  const hn::Rebind<uint8_t, DW> d8;
  VW even[2] = {hn::Zero(dw), hn::Zero(dw)}, odd[2] = {hn::Zero(dw), hn::Zero(dw)};
  for (int64_t c0 = 0; c0 < v.cols; c0 += kFastRun) {
    const int64_t i0 = r * v.cols + c0;  // flat index of the run's first weight (even)
    const float s = load_scale(v.scales + 2 * (i0 >> 7));
    const uint8_t* p = v.codes + i0 / 2;  // 32 bytes: the run's 64 codes
    // (q − 8) · s as one fused multiply-add q · s + (−8 s): −8 s is exact and the FMA rounds
    // the exact (q − 8) · s once, so the weight is dequantize()'s (a zero may come out +0).
    const VW scale = hn::Set(dw, s), bias = hn::Set(dw, -8.0f * s);
#pragma GCC unroll 8
    for (int64_t k = 0; k < kFastRun; k += 2 * kWide) {
      const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, p + k / 2));  // kWide bytes: 2·kWide codes
      const VW q_even = hn::ConvertTo(dw, hn::BitCast(DWI(), hn::And(bytes, hn::Set(du, 15))));
      const VW q_odd = hn::ConvertTo(dw, hn::BitCast(DWI(), hn::ShiftRight<4>(bytes)));
      const int64_t a = k / (2 * kWide) % 2;
      even[a] = hn::MulAdd(hn::MulAdd(q_even, scale, bias), hn::LoadU(dw, xr + c0 + k), even[a]);
      odd[a] = hn::MulAdd(hn::MulAdd(q_odd, scale, bias), hn::LoadU(dw, xr + c0 + k + kWide), odd[a]);
    }
  }
  return sum_of(even[0], odd[0], even[1], odd[1]);
}
// the-change: end dot_int4_row

// On 16-lane targets (AVX-512) a scale's 16 possible weights fill one register exactly, so
// the 4-bit formats look their weights up instead of converting codes: the table is built
// once per run of 64 columns with dequantize()'s own operations — int4: fl(q · s + (−8 s))
// for q = 0 … 15, nf4: fl(absmax · level q) — and a code becomes its weight by one
// permute (vpermps reads the low 4 bits of each lane). Per 16 weights that is a shift or
// nothing, one permute and one multiply-add, instead of a mask, a conversion and two
// multiply-adds. x is in reorder_even_odd's order for both.
template <bool kNf4>
HWY_INLINE float dot_nibble_row_16(const View& v, int64_t r, const float* xr) {
  const DW dw;
  const DWU du;
  const hn::Rebind<uint8_t, DW> d8;
  VW even[2] = {hn::Zero(dw), hn::Zero(dw)}, odd[2] = {hn::Zero(dw), hn::Zero(dw)};
  for (int64_t c0 = 0; c0 < v.cols; c0 += kFastRun) {
    const int64_t i0 = r * v.cols + c0;  // flat index of the run's first weight (even)
    const float s = load_scale(v.scales + 2 * (i0 >> (kNf4 ? 6 : 7)));
    const VW table = kNf4 ? hn::Mul(hn::LoadU(dw, kNf4Levels.data()), hn::Set(dw, s))
                          : hn::MulAdd(hn::Iota(dw, 0), hn::Set(dw, s), hn::Set(dw, -8.0f * s));
    const uint8_t* p = v.codes + i0 / 2;  // 32 bytes: the run's 64 codes
#pragma GCC unroll 2
    for (int64_t k = 0; k < kFastRun; k += 2 * kWide) {
      const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, p + k / 2));  // 16 bytes: 32 codes
      const int64_t a = k / (2 * kWide);
      even[a] = hn::MulAdd(lookup16(table, bytes), hn::LoadU(dw, xr + c0 + k), even[a]);
      odd[a] = hn::MulAdd(lookup16(table, hn::ShiftRight<4>(bytes)), hn::LoadU(dw, xr + c0 + k + kWide), odd[a]);
    }
  }
  return sum_of(even[0], odd[0], even[1], odd[1]);
}

// y[r] for a row of int8 codes with one fp16 scale: fl(s · q) per weight, as dequantize().
HWY_INLINE float dot_int8_row(const View& v, int64_t r, const float* x) {
  const DW dw;
  const hn::Rebind<int8_t, DW> d8;
  const float s = load_scale(v.scales + 2 * r);
  const VW scale = hn::Set(dw, s);
  const auto* q = reinterpret_cast<const int8_t*>(v.codes + r * v.cols);
  const auto weights = [&](int64_t c) { return hn::Mul(hn::ConvertTo(dw, hn::PromoteTo(DWI(), hn::LoadU(d8, q + c))), scale); };
  VW acc[4] = {hn::Zero(dw), hn::Zero(dw), hn::Zero(dw), hn::Zero(dw)};
  int64_t c = 0;
  for (; c + 4 * kWide <= v.cols; c += 4 * kWide)
    for (int u = 0; u < 4; ++u) acc[u] = hn::MulAdd(weights(c + u * kWide), hn::LoadU(dw, x + c + u * kWide), acc[u]);
  for (; c + kWide <= v.cols; c += kWide) acc[0] = hn::MulAdd(weights(c), hn::LoadU(dw, x + c), acc[0]);
  float tail = 0;
  for (; c < v.cols; ++c) tail += x[c] * (static_cast<float>(q[c]) * s);
  return sum_of(acc[0], acc[1], acc[2], acc[3]) + tail;
}

// y[r] for a row of q8_0 blocks (32 weights: fp16 d, 32 int8): fl(d · q) per weight. Blocks in
// pairs (in_pairs): on AVX-512 a block is 2 registers, the first of a pair feeds acc[0, 1], the
// second acc[2, 3].
HWY_INLINE float dot_q8_0_row(const View& v, int64_t r, const float* x) {
  const DW dw;
  const hn::Rebind<int8_t, DW> d8;
  constexpr int64_t kSteps = kGgmlBlock / kWide;  // registers per block: 2 (AVX-512), 4, 8
  VW acc[4] = {hn::Zero(dw), hn::Zero(dw), hn::Zero(dw), hn::Zero(dw)};
  const uint8_t* row = v.w + r * v.row_bytes;
  const auto block = [&](int64_t b, int64_t second) {  // second: 0 or 1, a constant once inlined
    const uint8_t* blk = row + 34 * b;
    const VW d = hn::Set(dw, load_scale(blk));
    const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
    const float* xb = x + b * kGgmlBlock;
#pragma GCC unroll 8
    for (int64_t k = 0; k < kSteps; ++k) {
      const VW w = hn::Mul(hn::ConvertTo(dw, hn::PromoteTo(DWI(), hn::LoadU(d8, q + k * kWide))), d);
      const int64_t a = (second * kSteps + k) % 4;
      acc[a] = hn::MulAdd(w, hn::LoadU(dw, xb + k * kWide), acc[a]);
    }
  };
  in_pairs(v.cols / kGgmlBlock, block);
  return sum_of(acc[0], acc[1], acc[2], acc[3]);
}

// nf4 (n = 1): the 16 levels looked up 32 codes at a time by byte shuffles. A level's fp32 bits
// are 4 bytes; byte b of all 16 levels fits one 16-byte table, so 4 shuffles (vpshufb) give
// bytes 0–3 of the levels of 32 codes, and interleaving them (bytes into 16-bit halves, halves
// into 32-bit words) rebuilds 32 fp32 levels in 4 registers. Multiplied by the block's absmax,
// each is fl(absmax · level), dequantize()'s weight. Shuffles and interleaves work within each 128-bit
// half of a register, so the weights come out in this order, per run of 64 columns:
//
//   even columns (low nibbles), then odd ones; of each, register m (0 … 3) holds codes
//   4m … 4m + 3 in its lower half and 16 + 4m … 16 + 4m + 3 in its upper half
//
// and x is reordered once per call to match (reorder_for_nf4). Per 32 weights: 4 shuffles,
// 8 interleaves, 4 multiplies, instead of the generic walk's two 8-entry permutes and a blend
// per 8 weights (Table16); ch06 --speed times the result.
struct Nf4BytePlanes {
  alignas(32) uint8_t plane[4][32];  // plane[b][q] = plane[b][16 + q] = byte b of level q
  Nf4BytePlanes() {
    for (int q = 0; q < 16; ++q) {
      uint32_t bits;
      std::memcpy(&bits, &kNf4Levels[q], 4);
      for (int b = 0; b < 4; ++b) plane[b][q] = plane[b][16 + q] = static_cast<uint8_t>(bits >> (8 * b));
    }
  }
};
const Nf4BytePlanes kNf4Planes;

int64_t nf4_reordered_column(int64_t k) {  // column (within a run of 64) of slot k of the reordered x
  const int64_t part = k / 32, m = k % 32 / 8, lane = k % 8;
  return 2 * (16 * (lane / 4) + 4 * m + lane % 4) + part;
}

void reorder_for_nf4(const float* x, int64_t cols, float* out) {
  for (int64_t c = 0; c < cols; c += kFastRun)
    for (int64_t k = 0; k < kFastRun; ++k) out[c + k] = x[c + nf4_reordered_column(k)];
}

// The fp32 levels of the codes in `codes` (one per byte, 0 … 15), from their byte planes: 4
// shuffles give bytes 0–3 of each code's level; interleaving bytes into 16-bit halves and the
// halves into 32-bit words rebuilds them, 4 per register (within each 128-bit half of a
// register: codes 0–3 of the half in level[0], 4–7 in level[1], 8–11, 12–15).
using D8 = hn::Repartition<uint8_t, DF>;  // a register of floats as bytes
using V8 = hn::Vec<D8>;
HWY_INLINE void nf4_levels(const V8 (&planes)[4], V8 codes, VF (&level)[4]) {
  const DF df;
  const D8 d8;
  const hn::Repartition<uint16_t, DF> d16;  // … and as 16-bit halves
  V8 byte[4];
  for (int b = 0; b < 4; ++b) byte[b] = hn::TableLookupBytes(planes[b], codes);
  const auto low_a = hn::BitCast(d16, hn::InterleaveLower(d8, byte[0], byte[1]));   // codes 0–7: bits 0–15
  const auto low_b = hn::BitCast(d16, hn::InterleaveUpper(d8, byte[0], byte[1]));   // codes 8–15
  const auto high_a = hn::BitCast(d16, hn::InterleaveLower(d8, byte[2], byte[3]));  // codes 0–7: bits 16–31
  const auto high_b = hn::BitCast(d16, hn::InterleaveUpper(d8, byte[2], byte[3]));
  level[0] = hn::BitCast(df, hn::InterleaveLower(d16, low_a, high_a));  // codes 0–3
  level[1] = hn::BitCast(df, hn::InterleaveUpper(d16, low_a, high_a));  // 4–7
  level[2] = hn::BitCast(df, hn::InterleaveLower(d16, low_b, high_b));  // 8–11
  level[3] = hn::BitCast(df, hn::InterleaveUpper(d16, low_b, high_b));  // 12–15
}

HWY_INLINE float dot_nf4_row(const View& v, int64_t r, const float* xr) {
  const DF df;
  const D8 d8;  // the same 256 bits as 32 bytes
  V8 planes[4];
  for (int b = 0; b < 4; ++b) planes[b] = hn::Load(d8, kNf4Planes.plane[b]);
  VF acc[4] = {hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
  for (int64_t c0 = 0; c0 < v.cols; c0 += kFastRun) {
    const int64_t i0 = r * v.cols + c0;  // flat index of the run's first weight: one absmax per 64
    const VF scale = hn::Set(df, load_scale(v.scales + 2 * (i0 >> 6)));
    const V8 bytes = hn::LoadU(d8, v.codes + i0 / 2);  // 32 bytes: the run's 64 codes
    const V8 codes[2] = {hn::And(bytes, hn::Set(d8, 0x0F)), hn::ShiftRight<4>(bytes)};  // even, odd columns
#pragma GCC unroll 2
    for (int part = 0; part < 2; ++part) {
      VF level[4];
      nf4_levels(planes, codes[part], level);
      const float* x = xr + c0 + 32 * part;
      for (int m = 0; m < 4; ++m) acc[m] = hn::MulAdd(hn::Mul(level[m], scale), hn::LoadU(df, x + 8 * m), acc[m]);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3]))));
}

// q4_1 on 16-lane targets: each block's 16 possible weights d·q + m (q = 0 … 15) built in one
// register with one multiply-add, and looked up (as dot_nibble_row_16). The table needs d and m
// in every lane; converting them from fp16 and broadcasting them block by block cost as much
// as the block's own work, so the scales of 8 blocks are converted first into a small buffer,
// one conversion per block (4 halves: d, m and two code bytes; the next block's conversion
// overwrites the spare lanes), and each block's d and m are then broadcast by plain loads.
HWY_INLINE float dot_q4_1_row_16(const View& v, int64_t r, const float* x) {
  const DW dw;
  const DWU du;
  const hn::Rebind<uint8_t, DW> d8;
  const VW iota = hn::Iota(dw, 0);
  VW acc[4] = {hn::Zero(dw), hn::Zero(dw), hn::Zero(dw), hn::Zero(dw)};
  const uint8_t* row = v.w + r * v.row_bytes;
  const int64_t blocks = v.cols / kGgmlBlock;
  const hn::CappedTag<float, 4> d4;
  const hn::Rebind<hwy::float16_t, decltype(d4)> dh4;
  constexpr int64_t kGroup = 8;  // blocks whose scales are converted together
  float dm[2 * kGroup + 2];      // d, m of each block (+2: the last conversion's spare lanes)
  for (int64_t b0 = 0; b0 < blocks; b0 += kGroup) {
    const int64_t n = std::min(kGroup, blocks - b0);
    for (int64_t j = 0; j < n; ++j)
      hn::StoreU(hn::PromoteTo(d4, hn::LoadU(dh4, reinterpret_cast<const hwy::float16_t*>(row + 20 * (b0 + j)))), d4, dm + 2 * j);
    const auto block = [&](int64_t j, int64_t second) {
      const uint8_t* qs = row + 20 * (b0 + j) + 4;
      const float* xb = x + (b0 + j) * kGgmlBlock;
      const VW table = hn::MulAdd(iota, hn::Set(dw, dm[2 * j]), hn::Set(dw, dm[2 * j + 1]));  // fl(q·d + m)
      const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, qs));
      acc[2 * second] = hn::MulAdd(lookup16(table, bytes), hn::LoadU(dw, xb), acc[2 * second]);
      acc[2 * second + 1] = hn::MulAdd(lookup16(table, hn::ShiftRight<4>(bytes)), hn::LoadU(dw, xb + 16), acc[2 * second + 1]);
    };
    in_pairs(n, block);
  }
  return sum_of(acc[0], acc[1], acc[2], acc[3]);
}

// nf4 on 128-bit targets (SSE4, NEON): dot_nf4_row's byte-shuffle lookup with one 16-byte
// register, where no halves get in the way: 16 code bytes give 16 even and 16 odd codes, 4
// shuffles give bytes 0–3 of their levels, and interleaving rebuilds the levels in order, 4 per
// register (register m: codes 4m … 4m + 3). x from reorder_even_odd(…, 16, …): per 32 columns,
// the 16 even ones, then the 16 odd ones. (The generic walk looked each level up with a store
// and 4 scalar loads: NF4 decoded slower than fp32 streamed.)
HWY_INLINE float dot_nf4_row_4(const View& v, int64_t r, const float* xr) {
  const DF df;  // 4 lanes here
  const D8 d8;  // the same 128 bits as 16 bytes
  V8 planes[4];
  for (int b = 0; b < 4; ++b) planes[b] = hn::LoadU(d8, kNf4Planes.plane[b]);  // its first 16 bytes
  VF acc[4] = {hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
  for (int64_t c0 = 0; c0 < v.cols; c0 += kFastRun) {
    const int64_t i0 = r * v.cols + c0;  // flat index of the run's first weight: one absmax per 64
    const VF scale = hn::Set(df, load_scale(v.scales + 2 * (i0 >> 6)));
    for (int64_t half = 0; half < 2; ++half) {  // columns c0 + 32·half …: 16 bytes
      const V8 bytes = hn::LoadU(d8, v.codes + i0 / 2 + 16 * half);
      const V8 codes[2] = {hn::And(bytes, hn::Set(d8, 0x0F)), hn::ShiftRight<4>(bytes)};  // even, odd columns
      for (int part = 0; part < 2; ++part) {
        VF level[4];
        nf4_levels(planes, codes[part], level);
        const float* x = xr + c0 + 32 * half + 16 * part;
        for (int m = 0; m < 4; ++m) acc[m] = hn::MulAdd(hn::Mul(level[m], scale), hn::LoadU(df, x + 4 * m), acc[m]);
      }
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3]))));
}

// y[r] for a row of q4_1 blocks (32 weights: fp16 d, fp16 m, 16 bytes). Byte j holds weights j
// (low nibble) and j + 16 (high nibble), so kWide bytes give kWide consecutive weights twice.
// Blocks in pairs, as in dot_q8_0_row.
HWY_INLINE float dot_q4_1_row(const View& v, int64_t r, const float* x) {
  const DW dw;
  const DWU du;
  const hn::Rebind<uint8_t, DW> d8;
  constexpr int64_t kSteps = 16 / kWide;  // registers of bytes per block: 1 (AVX-512), 2, 4
  VW acc[4] = {hn::Zero(dw), hn::Zero(dw), hn::Zero(dw), hn::Zero(dw)};  // low / high nibbles, two each
  const uint8_t* row = v.w + r * v.row_bytes;
  const auto block = [&](int64_t b, int64_t second) {  // second: 0 or 1, a constant once inlined
    const float* xb = x + b * kGgmlBlock;
    const uint8_t* blk = row + 20 * b;
    const VW d = hn::Set(dw, load_scale(blk)), m = hn::Set(dw, load_scale(blk + 2));
#pragma GCC unroll 4
    for (int64_t h = 0; h < kSteps; ++h) {
      const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, blk + 4 + kWide * h));  // bytes kWide·h …
      const VW q_lo = hn::ConvertTo(dw, hn::BitCast(DWI(), hn::And(bytes, hn::Set(du, 15))));
      const VW q_hi = hn::ConvertTo(dw, hn::BitCast(DWI(), hn::ShiftRight<4>(bytes)));
      const int64_t a = 2 * ((second * kSteps + h) % 2);
      // d·q + m, as dequantize(): weights kWide·h … and 16 + kWide·h …
      acc[a] = hn::MulAdd(hn::MulAdd(q_lo, d, m), hn::LoadU(dw, xb + kWide * h), acc[a]);
      acc[a + 1] = hn::MulAdd(hn::MulAdd(q_hi, d, m), hn::LoadU(dw, xb + 16 + kWide * h), acc[a + 1]);
    }
  };
  in_pairs(v.cols / kGgmlBlock, block);
  return sum_of(acc[0], acc[1], acc[2], acc[3]);
}

// y[0, rows) = Ŵ · x for one row of x (fast_decode_applies).
void matvec_fast(const View& v, const float* x, float* y) {
  thread_local std::vector<float> reordered;  // x in even/odd order, reused from call to call
  const float* xr = x;
  if (v.format == PackedFormat::int4_g128 || v.format == PackedFormat::nf4) {
    reordered.resize(v.cols);
    if (v.format == PackedFormat::nf4 && kWide == 8) reorder_for_nf4(x, v.cols, reordered.data());
    else if (v.format == PackedFormat::nf4 && kWide == 4) reorder_even_odd(x, v.cols, 16, reordered.data());
    else reorder_even_odd(x, v.cols, kWide, reordered.data());
    xr = reordered.data();
  }
  const auto [first, last] = row_bytes(v, 0);
  const int64_t ahead = std::max<int64_t>(1, kPrefetchBytes / std::max<int64_t>(1, last - first));
  // Each thread streams its own share of the rows: see lib's small_matmul.cpp.
  parallel_for_shares(v.rows, 1, 16, [&](int64_t first_row, int64_t last_row) {
    for (int64_t r = first_row; r < last_row; ++r) {
      prefetch_row(v, r + ahead);
      switch (v.format) {
        case PackedFormat::int4_g128: y[r] = kWide == 16 ? dot_nibble_row_16<false>(v, r, xr) : dot_int4_row(v, r, xr); break;
        case PackedFormat::nf4:
          y[r] = kWide == 16 ? dot_nibble_row_16<true>(v, r, xr) : kWide == 8 ? dot_nf4_row(v, r, xr) : dot_nf4_row_4(v, r, xr);
          break;
        case PackedFormat::int8_per_row: y[r] = dot_int8_row(v, r, x); break;
        case PackedFormat::q8_0: y[r] = dot_q8_0_row(v, r, x); break;
        default: y[r] = kWide == 16 ? dot_q4_1_row_16(v, r, x) : dot_q4_1_row(v, r, x); break;
      }
    }
  });
}

// Small batches: rows of W split over the threads, x in tiles of 4, 2, 1 rows.
void matmul_rows(const View& v, const float* x, int64_t n, float* y) {
  const auto [first, last] = row_bytes(v, 0);
  const int64_t ahead = std::max<int64_t>(1, kPrefetchBytes / std::max<int64_t>(1, last - first));
  parallel_for_shares(v.rows, 1, 16, [&](int64_t first_row, int64_t last_row) {
    for (int64_t r = first_row; r < last_row; ++r) {
      prefetch_row(v, r + ahead);
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) dot_rows<4>(v, r, x, i, y);
      if (i + 2 <= n) {
        dot_rows<2>(v, r, x, i, y);
        i += 2;
      }
      if (i < n) dot_rows<1>(v, r, x, i, y);
    }
  });
}

// Large batches: each thread decodes a panel of rows into its own buffer (about 192 KiB, so it
// stays in cache) and multiplies it with every row of x. OpenBLAS runs on one thread inside
// each chunk of the thread pool.
void matmul_panels(const View& v, const float* x, int64_t n, float* y) {
  const int64_t panel = std::clamp<int64_t>((int64_t{48} << 10) / v.cols / 8 * 8, 8, 256);
  const int64_t panels = ceil_div(v.rows, panel);
  parallel_for(panels, 1, [&](int64_t first_panel, int64_t last_panel) {
    thread_local std::vector<float> buffer;
    buffer.resize(panel * v.cols);
    for (int64_t p = first_panel; p < last_panel; ++p) {
      const int64_t r0 = p * panel, count = std::min(panel, v.rows - r0);
      for (int64_t r = 0; r < count; ++r) {
        StoreSink sink{buffer.data() + r * v.cols};
        visit_row(v, r0 + r, sink);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(count),
                  static_cast<int>(v.cols), 1.0f, x, static_cast<int>(v.cols), buffer.data(), static_cast<int>(v.cols),
                  0.0f, y + r0, static_cast<int>(v.rows));
    }
  });
}

}  // namespace

// One target's product from the packed bytes with fp32 activations (packed_matmul_cpu below
// checks the arguments and picks the target).
void PackedMatmulF32(const View& v, const float* x, int64_t n, float* y) {
  if (fast_decode_applies(v, n)) matvec_fast(v, x, y);
  else if (n >= kPanelMinRows) matmul_panels(v, x, n, y);
  else matmul_rows(v, x, n, y);
}

// Rows ids[0 … n) of Ŵ, dequantized into out (n × cols).
void GatherRows(const View& v, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    StoreSink sink{out + i * v.cols};
    visit_row(v, ids[i], sink);
  }
}

}  // namespace infer::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::quant {

HWY_EXPORT(PackedMatmulF32);
HWY_EXPORT(GatherRows);

void packed_matmul_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const float* x, int64_t n,
                       float* y, Activations activations) {
  const View v = make_view(format, w, rows, cols, "packed_matmul_cpu");
  if (n < 0) throw std::invalid_argument(fmt::format("packed_matmul_cpu: {} rows of x", n));
  if (n == 0) return;
  if (x == nullptr || y == nullptr) throw std::invalid_argument("packed_matmul_cpu: null x or y");
  num_threads();  // the configured thread count for OpenMP and OpenBLAS
  simd::init();
  if (activations == Activations::int8 && n < kPanelMinRows && int8_activations_supported(format, cols))
    packed_matmul_int8_cpu(format, w, rows, cols, x, n, y);  // decode-sized: x to int8 too
  else
    HWY_DYNAMIC_DISPATCH(PackedMatmulF32)(v, x, n, y);
}

void packed_gather_rows_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const int32_t* ids,
                            int64_t n, float* out) {
  const View v = make_view(format, w, rows, cols, "packed_gather_rows_cpu");
  if (n < 0) throw std::invalid_argument(fmt::format("packed_gather_rows_cpu: {} ids", n));
  if (n > 0 && (ids == nullptr || out == nullptr)) throw std::invalid_argument("packed_gather_rows_cpu: null ids or out");
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      throw std::invalid_argument(fmt::format("packed_gather_rows_cpu: row {} outside [0, {})", ids[i], rows));
  simd::init();
  HWY_DYNAMIC_DISPATCH(GatherRows)(v, ids, n, out);
}

}  // namespace infer::quant
#endif  // HWY_ONCE
