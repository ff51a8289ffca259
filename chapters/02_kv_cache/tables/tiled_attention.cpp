#include "tiled_attention.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/progress.hpp"
#include "measure/timing.hpp"
#include "memory_tables.hpp"
#include "study_caches.hpp"
#include "tensor/cpu_attention.hpp"  // kAttentionKeyChunk
#include "tensor/ops.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::kv {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// a·b over n floats, in eight interleaved partial sums: one running sum is a chain of n
// dependent additions, eight independent ones fill a vector register (the compiler vectorises
// the inner loop).
float dot(const float* a, const float* b, int64_t n) {
  float lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += a[i + l] * b[i + l];
  float sum = 0.0f;
  for (float s : lane) sum += s;
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Checks q[T, H·D], k and v [S, H_kv·D] with at least `keys_needed` rows, H a multiple of H_kv,
// out like q; returns D.
int64_t check_shapes(const char* who, const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
                     int64_t keys_needed, const Tensor& out) {
  const auto fail = [&](const std::string& why) { return std::invalid_argument(fmt::format("{}: {}", who, why)); };
  if (!q.device().is_cpu() || !k.device().is_cpu() || !v.device().is_cpu() || !out.device().is_cpu())
    throw fail("CPU tensors only");
  if (n_heads < 1 || n_kv_heads < 1 || n_heads % n_kv_heads != 0)
    throw fail(fmt::format("{} query heads cannot share {} key/value heads", n_heads, n_kv_heads));
  if (q.rank() != 2 || q.dim(1) % n_heads != 0) throw fail("q must be [T, H·D]");
  const int64_t D = q.dim(1) / n_heads;
  if (k.rank() != 2 || k.dim(1) != n_kv_heads * D || v.rank() != 2 || v.dim(1) != k.dim(1) || v.dim(0) != k.dim(0))
    throw fail(fmt::format("k and v must both be [S, {}·{}]", n_kv_heads, D));
  if (k.dim(0) < keys_needed) throw fail(fmt::format("{} key rows, {} needed", k.dim(0), keys_needed));
  if (out.rank() != 2 || out.dim(0) != q.dim(0) || out.dim(1) != q.dim(1)) throw fail("out must have q's shape");
  return D;
}

PartialSoftmax empty_state(int64_t n_heads, int64_t D) {
  return {std::vector<float>(n_heads, kMinusInf), std::vector<float>(n_heads, 0.0f), std::vector<float>(n_heads * D, 0.0f)};
}

// One work item of the split decode: the G = `group` query heads of key/value head g over keys
// [begin, end), written into their slots of `state` (other items write other slots). Inside a
// chunk this is the plain softmax, stopped before the division: the chunk's scores fit in a
// buffer, and what is left is the chunk's (m, ℓ, o) per head.
void attend_chunk(const float* q, const Tensor& k, const Tensor& v, int64_t D, int64_t group, int64_t g,
                  int64_t begin, int64_t end, PartialSoftmax& state) {
  const int64_t stride = k.dim(1), n = end - begin;
  const float* K = k.host<float>() + (begin * stride + g * D);  // key/value head g of key begin + j: K + j·stride
  const float* V = v.host<float>() + (begin * stride + g * D);
  const float* Qg = q + g * group * D;  // the group's query heads side by side: head g·G + i at Qg + i·D
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> p(static_cast<std::size_t>(group * n));  // p[i·n + j]: head i's score for key j, then exp(s − m)
  // Scores: each key row is read once for the G heads that share it.
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < group; ++i) p[i * n + j] = dot(Qg + i * D, K + j * stride, D) * scale;
  // Per head: the chunk's maximum m, then exp(s − m) and their sum ℓ (m = −∞, ℓ = 0 for no keys).
  for (int64_t i = 0; i < group; ++i) {
    float* pi = p.data() + i * n;
    const float m = n > 0 ? *std::max_element(pi, pi + n) : kMinusInf;
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      pi[j] = std::exp(pi[j] - m);
      sum += pi[j];
    }
    state.max[g * group + i] = m;
    state.sum[g * group + i] = sum;
  }
  // o = Σ_j exp(s_j − m) · v_j, not divided by ℓ: each value row is read once for the G heads.
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < group; ++i) {
      float* o = &state.weighted[(g * group + i) * D];
      const float e = p[i * n + j];
      for (int64_t d = 0; d < D; ++d) o[d] += e * V[j * stride + d];
    }
}

}  // namespace

// The prefill kernel. Work items are (query head h, block of Bq queries). For one item, with
// Q_blk the block's queries of head h [rows, D] and K_j, V_j the j-th tile of Bk keys and values
// of key/value head g = h / G [Bk, D], per tile (FlashAttention's inner loop):
//
//   1. S = Q_blk · K_jᵀ / √D                       [rows, Bk]  causal: a row's keys past its position are left out
//   2. per row r: m_new = max(m_r, max_j S[r, j])               the running maximum
//                 α_r   = exp(m_r − m_new)                       ≤ 1: what earlier tiles summed, brought to m_new
//                 P[r, j] = exp(S[r, j] − m_new)                 in place of S
//                 ℓ_r   = α_r · ℓ_r + Σ_j P[r, j]                the running sum
//   3. O_blk = diag(α) · O_blk + P · V_j            [rows, D]   the running (unnormalised) output
//
// and after the last tile out_r = O_blk[r] / ℓ_r. Each tile of keys and values is read once for
// all the block's rows (that reuse is why blocks of queries, not single rows: on a GPU the tile
// sits in the fast on-chip memory for the whole block). Tiles wholly after the block's last
// query (above the causal diagonal) are never visited; on the diagonal each row stops at its
// own position.
void tiled_attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
                     Tiles tiles, Tensor& out) {
  if (tiles.queries < 1 || tiles.keys < 1)
    throw std::invalid_argument(fmt::format("tiled_attention: tiles of {} × {}", tiles.queries, tiles.keys));
  if (pos0 < 0) throw std::invalid_argument("tiled_attention: pos0 < 0");
  const int64_t T = q.dim(0);
  const int64_t D = check_shapes("tiled_attention", q, k, v, n_heads, n_kv_heads, pos0 + T, out);
  const int64_t group = n_heads / n_kv_heads;  // G: query heads per key/value head
  const int64_t Bq = tiles.queries, Bk = tiles.keys;
  const int64_t q_stride = q.dim(1), kv_stride = k.dim(1);  // H·D and H_kv·D floats per position
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float* Q = q.host<float>();
  const float* K = k.host<float>();
  const float* V = v.host<float>();
  float* Out = out.host<float>();
  const int64_t q_blocks = (T + Bq - 1) / Bq;

  // Items are handed to the threads one at a time (a chunk of one item each).
  parallel_for(n_heads * q_blocks, 1, [&](int64_t first, int64_t last) {
    // The item's whole working memory: nothing in it grows with T.
    Tensor scores({Bq, Bk});   // S, then P
    Tensor outputs({Bq, D});   // O_blk
    Tensor stats({2, Bq});     // row 0: the running maxima m, row 1: the running sums ℓ
    float* S = scores.host<float>();
    float* O = outputs.host<float>();
    float* m = stats.host<float>();
    float* l = m + Bq;
    for (int64_t item = first; item < last; ++item) {
      const int64_t b = q_blocks - 1 - item / n_heads;  // the last blocks see the most keys: handed out first
      const int64_t h = item % n_heads, g = h / group;
      const int64_t t0 = b * Bq, rows = std::min(Bq, T - t0);
      std::fill_n(m, rows, kMinusInf);
      std::fill_n(l, rows, 0.0f);
      std::fill_n(O, rows * D, 0.0f);
      // Row r is query t0 + r at position pos0 + t0 + r. The block's last query sees keys
      // 0 … pos0 + t0 + rows − 1: the tiles after that are skipped.
      const int64_t n_keys = pos0 + t0 + rows;
      for (int64_t j0 = 0; j0 < n_keys; j0 += Bk) {
        const int64_t j1 = std::min(n_keys, j0 + Bk);
        // Keys j0 … j0 + seen(r) − 1 of this tile are at or before row r's position (≤ 0: none).
        const auto seen = [&](int64_t r) { return std::min(j1, pos0 + t0 + r + 1) - j0; };
        // 1. S = Q_blk · K_jᵀ / √D.
        for (int64_t r = 0; r < rows; ++r) {
          const float* qr = Q + (t0 + r) * q_stride + h * D;
          for (int64_t j = 0; j < seen(r); ++j) S[r * Bk + j] = dot(qr, K + (j0 + j) * kv_stride + g * D, D) * scale;
        }
        // 2. The online softmax, row by row: a larger maximum rescales the row's ℓ and O first.
        for (int64_t r = 0; r < rows; ++r) {
          if (seen(r) <= 0) continue;  // the whole tile is in this row's future: masked
          float* s = S + r * Bk;
          const float m_new = std::max(m[r], *std::max_element(s, s + seen(r)));
          const float alpha = std::exp(m[r] - m_new);  // 1 if the maximum stayed; exp(−∞) = 0 on the first tile
          l[r] *= alpha;
          for (int64_t i = 0; i < D; ++i) O[r * D + i] *= alpha;
          for (int64_t j = 0; j < seen(r); ++j) {
            s[j] = std::exp(s[j] - m_new);
            l[r] += s[j];
          }
          m[r] = m_new;
        }
        // 3. O_blk += P · V_j: each value row of the tile is read once for every row that sees it.
        for (int64_t j = 0; j < j1 - j0; ++j) {
          const float* vj = V + (j0 + j) * kv_stride + g * D;
          for (int64_t r = std::max<int64_t>(0, j0 + j - pos0 - t0); r < rows; ++r) {  // the rows at or after key j
            const float p = S[r * Bk + j];
            for (int64_t i = 0; i < D; ++i) O[r * D + i] += p * vj[i];
          }
        }
      }
      // 4. Each query's output, once, after its last tile: O / ℓ.
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < D; ++i) Out[(t0 + r) * q_stride + h * D + i] = O[r * D + i] / l[r];
    }
  });
}

PartialSoftmax partial_softmax(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
                               int64_t begin, int64_t end) {
  if (begin < 0 || end < begin) throw std::invalid_argument(fmt::format("partial_softmax: keys [{}, {})", begin, end));
  if (q.dim(0) != 1) throw std::invalid_argument("partial_softmax: one query");
  const int64_t D = check_shapes("partial_softmax", q, k, v, n_heads, n_kv_heads, end, q);
  PartialSoftmax state = empty_state(n_heads, D);
  for (int64_t g = 0; g < n_kv_heads; ++g) attend_chunk(q.host<float>(), k, v, D, n_heads / n_kv_heads, g, begin, end, state);
  return state;
}

// The merge — FlashDecoding's new step. Part s holds, per head, m_s, ℓ_s and o_s relative to its
// own maximum m_s. Relative to the overall maximum M = max_s m_s its sums are ℓ_s · exp(m_s − M)
// and o_s · exp(m_s − M), and sums over disjoint key sets add:
//
//   M = max_s m_s     ℓ = Σ_s exp(m_s − M) · ℓ_s     o = Σ_s exp(m_s − M) · o_s
//
// In logarithms: log ℓ + M, the log-sum-exp of all the scores, is the log-sum-exp of the parts'
// log ℓ_s + m_s. The tiled kernel's rescale by α is the same rule applied to two parts at a
// time (what came before, the new tile); here the parts are computed apart and merged at the end,
// so they can run at the same time.
PartialSoftmax merge_partials(std::span<const PartialSoftmax> parts) {
  if (parts.empty()) throw std::invalid_argument("merge_partials: no parts");
  const std::size_t H = parts[0].max.size();
  const std::size_t D = H == 0 ? 0 : parts[0].weighted.size() / H;
  PartialSoftmax total = empty_state(static_cast<int64_t>(H), static_cast<int64_t>(D));
  for (const PartialSoftmax& p : parts)
    if (p.max.size() != H || p.sum.size() != H || p.weighted.size() != H * D)
      throw std::invalid_argument("merge_partials: parts of different shapes");
  for (std::size_t h = 0; h < H; ++h) {
    for (const PartialSoftmax& p : parts) total.max[h] = std::max(total.max[h], p.max[h]);
    for (const PartialSoftmax& p : parts) {
      if (p.max[h] == kMinusInf) continue;  // an empty part: no keys, nothing to add
      const float w = std::exp(p.max[h] - total.max[h]);
      total.sum[h] += w * p.sum[h];
      for (std::size_t i = 0; i < D; ++i) total.weighted[h * D + i] += w * p.weighted[h * D + i];
    }
  }
  return total;
}

void normalize(const PartialSoftmax& state, Tensor& out) {
  const auto H = static_cast<int64_t>(state.max.size());
  const int64_t D = H == 0 ? 0 : std::ssize(state.weighted) / H;
  if (out.rank() != 2 || out.dim(0) != 1 || out.dim(1) != H * D) throw std::invalid_argument("normalize: out must be [1, H·D]");
  float* o = out.host<float>();
  for (int64_t h = 0; h < H; ++h) {
    if (state.sum[h] <= 0.0f) throw std::invalid_argument(fmt::format("normalize: head {} saw no keys", h));
    for (int64_t i = 0; i < D; ++i) o[h * D + i] = state.weighted[h * D + i] / state.sum[h];
  }
}

void split_decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
                            std::span<const int64_t> bounds, Tensor& out) {
  if (bounds.size() < 2 || bounds.front() != 0 || !std::is_sorted(bounds.begin(), bounds.end()) || bounds.back() < 1)
    throw std::invalid_argument("split_decode_attention: bounds must rise from 0 to the number of keys (≥ 1)");
  if (q.dim(0) != 1) throw std::invalid_argument("split_decode_attention: one query");
  const int64_t D = check_shapes("split_decode_attention", q, k, v, n_heads, n_kv_heads, bounds.back(), out);
  const auto S = static_cast<int64_t>(bounds.size()) - 1;
  // Every (key/value head, chunk) is a work item of its own: nothing it computes depends on
  // another chunk, so the S chunks of a head run on different threads at the same time.
  std::vector<PartialSoftmax> parts(static_cast<std::size_t>(S), empty_state(n_heads, D));
  parallel_for(n_kv_heads * S, 1, [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      const int64_t s = item / n_kv_heads, g = item % n_kv_heads;
      attend_chunk(q.host<float>(), k, v, D, n_heads / n_kv_heads, g, bounds[s], bounds[s + 1], parts[s]);
    }
  });
  normalize(merge_partials(parts), out);
}

std::vector<int64_t> even_split(int64_t n, int64_t S) {
  if (n < 0 || S < 1) throw std::invalid_argument(fmt::format("even_split: {} keys into {} chunks", n, S));
  std::vector<int64_t> bounds{0};
  for (int64_t s = 0; s < S; ++s) bounds.push_back(bounds.back() + n / S + (s < n % S ? 1 : 0));
  return bounds;
}

// ---- The tables ----

namespace {

Tensor random_tensor(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& e : x) e = normal(rng);
  return Tensor::from_vector(x, {rows, cols});
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  float d = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(x[i] - y[i]));
  return d;
}

std::string diff_cell(float d) { return fmt::format("{:.1e}", d); }
std::string bytes_cell(int64_t b) { return format_bytes(static_cast<double>(b)); }

// One run of fn: its seconds and its allocator peak (memory_tables.hpp's peak_of).
struct Run {
  double seconds = 0;
  int64_t peak_bytes = 0;
};
Run run_once(const std::function<void()>& fn) {
  Run r;
  r.peak_bytes = peak_of(Device::cpu(), [&] {
    Stopwatch clock;
    fn();
    r.seconds = clock.seconds();
  });
  return r;
}

// A work item's buffers in bytes: Bq × Bk scores, Bq × D outputs, Bq maxima and Bq sums (fp32).
int64_t item_bytes(Tiles tiles, int64_t D) { return (tiles.queries * tiles.keys + tiles.queries * D + 2 * tiles.queries) * 4; }

// Seconds of each piece of work: the first runs' own times for one run, else medians of `runs`
// rounds taken in turn (a drifting machine moves all of a row alike).
std::vector<double> times_of(int runs, const std::vector<Run>& first, std::span<const std::function<void()>> work) {
  if (runs <= 1) {
    std::vector<double> s;
    for (const Run& r : first) s.push_back(r.seconds);
    return s;
  }
  return medians_in_turn(runs, work);
}

constexpr Tiles kTableTiles{64, 64};

void prefill_table(const Context& cx, int64_t max_tokens) {
  const LlamaConfig& c = cx.m.model.config();
  const int H = c.n_heads, H_kv = c.n_kv_heads;
  const int64_t D = c.head_dim;
  std::vector<int64_t> lengths;
  for (int64_t T : {256, 1024, 4096, 8192})
    if (T <= max_tokens) lengths.push_back(T);
  Table t(fmt::format("11. Prefill attention in tiles with an online softmax, one layer of the model's shape ({} query heads, {} key/value "
                      "heads of {}), tiles of {} × {} ({})", H, H_kv, D, kTableTiles.queries, kTableTiles.keys, cx.machine_line),
          {"T (tokens)", "runs", "plain: scores H×T×T (bytes)", "plain: allocator peak (bytes)", "tiled: allocator peak (bytes)",
           "plain ÷ tiled", "plain (ms)", "ops::attention (ms)", "tiled (ms)", "tiled vs ops::attention (max |diff|)",
           "plain vs ops::attention (max |diff|)"});
  std::mt19937 rng(48);
  ProgressBar bar("prefill attention: plain, lib's kernel, tiled", std::ssize(lengths));
  for (int64_t T : lengths) {
    const Tensor q = random_tensor(T, H * D, rng), k = random_tensor(T, H_kv * D, rng), v = random_tensor(T, H_kv * D, rng);
    Tensor plain_out({T, H * D}), lib_out({T, H * D}), tiled_out({T, H * D});
    EagerAttention plain(c);
    const std::vector<std::function<void()>> work{
        [&] { plain.attend(0, 0, q, k, v, plain_out); },
        [&] { ops::attention(q, k, v, H, H_kv, 0, lib_out); },
        [&] { tiled_attention(q, k, v, H, H_kv, 0, kTableTiles, tiled_out); }};
    // The first run of each measures its memory (and warms up).
    std::vector<Run> first;
    for (const auto& w : work) first.push_back(run_once(w));
    const int runs = T >= 4096 ? 1 : std::min(cx.repeats, 3);
    const std::vector<double> s = times_of(runs, first, work);
    const int64_t scores = plain.largest_scores_bytes();
    const float d_tiled = max_abs_diff(tiled_out, lib_out), d_plain = max_abs_diff(plain_out, lib_out);
    t.add_row({std::to_string(T), std::to_string(runs), bytes_cell(scores), bytes_cell(first[0].peak_bytes), bytes_cell(first[2].peak_bytes),
               cell::times(static_cast<double>(first[0].peak_bytes) / static_cast<double>(std::max<int64_t>(1, first[2].peak_bytes)), 0),
               cell::ms(s[0]), cell::ms(s[1]), cell::ms(s[2]), diff_cell(d_tiled), diff_cell(d_plain)});
    cx.figures["tiled_prefill"].push_back({{"T", T}, {"runs", runs}, {"plain_scores_bytes", scores}, {"plain_peak_bytes", first[0].peak_bytes},
                                          {"tiled_peak_bytes", first[2].peak_bytes}, {"lib_peak_bytes", first[1].peak_bytes},
                                          {"plain_s", s[0]}, {"lib_s", s[1]}, {"tiled_s", s[2]},
                                          {"tiled_max_abs_diff", d_tiled}, {"plain_max_abs_diff", d_plain}});
    bar.advance();
  }
  bar.done();
  const int64_t T_max = lengths.empty() ? 0 : lengths.back();
  t.add_note("plain: the course's `softmax(q @ k.T / √D + mask) @ v` (EagerAttention, table 8's naive loop): every head's T × T scores at once, plus");
  t.add_note("copies of its columns; tiled: tiled_attention, whose work item holds Bq × Bk scores, Bq × D outputs and Bq maxima and sums");
  t.add_note(fmt::format("({} per item, one item per thread at a time: the peak does not grow with T). Bytes: the allocator's high-water mark of one call,",
                         bytes_cell(item_bytes(kTableTiles, D))));
  t.add_note("above what was allocated before (q, k, v and the output are allocated outside it). Tiled runs on lib's threads, plain loops;");
  t.add_note("ops::attention is lib's SIMD kernel (table 2's). Outputs are about 0.1 in size: a max |diff| near 1e-7 is fp32 round-off.");
  t.add_note(fmt::format("lib's kernel never holds T × T either: its work item keeps 16 queries × {} heads of scores over the keys they see, per thread",
                         H / H_kv));
  t.add_note(fmt::format("(a std::vector the allocator does not see: {} × {} × 4 B = {} at T = {}), O(T · block) against the tiled kernel's O(Bq · Bk).",
                         16 * (H / H_kv), T_max, bytes_cell(16 * (H / H_kv) * T_max * 4), T_max));
  cx.emit(t);
}

void tile_size_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const int H = c.n_heads, H_kv = c.n_kv_heads;
  const int64_t D = c.head_dim, T = 1000;  // no tile size below divides it
  const std::vector<Tiles> sizes{{1, 1}, {1, 64}, {7, 3}, {16, 16}, {64, 64}, {128, 128}, {64, 256}};
  std::mt19937 rng(49);
  const Tensor q = random_tensor(T, H * D, rng), k = random_tensor(T, H_kv * D, rng), v = random_tensor(T, H_kv * D, rng);
  Tensor lib_out({T, H * D}), out({T, H * D});
  ops::attention(q, k, v, H, H_kv, 0, lib_out);
  const int runs = std::min(cx.repeats, 3);
  Table t(fmt::format("12. Tile sizes: tiled attention of {} tokens against ops::attention, the model's shape ({})", T, cx.machine_line),
          {"Bq × Bk", "runs", "work item (bytes)", "allocator peak (bytes)", "tiled (ms)", "max |diff| from ops::attention"});
  ProgressBar bar("tiled attention: tile sizes", std::ssize(sizes));
  for (const Tiles& tiles : sizes) {
    const auto fn = [&] { tiled_attention(q, k, v, H, H_kv, 0, tiles, out); };
    const Run first = run_once(fn);
    const double s = median_seconds(runs, fn);
    const float d = max_abs_diff(out, lib_out);
    const int64_t item = item_bytes(tiles, D);
    t.add_row({fmt::format("{} × {}", tiles.queries, tiles.keys), std::to_string(runs), bytes_cell(item), bytes_cell(first.peak_bytes),
               cell::ms(s), diff_cell(d)});
    cx.figures["tiled_tile_sizes"].push_back({{"T", T}, {"Bq", tiles.queries}, {"Bk", tiles.keys}, {"item_bytes", item},
                                              {"peak_bytes", first.peak_bytes}, {"seconds", s}, {"max_abs_diff", d}});
    bar.advance();
  }
  bar.done();
  t.add_note("1 × 64: one query row at a time, exercises/01_tiled_attention's form; 1 × 1: the online softmax one key at a time.");
  t.add_note("Every size computes the same function; what changes is the order of the additions (fp32 round-off) and how often a tile of");
  t.add_note("keys and values is read: once per block of Bq queries. Small tiles pay the rescale and the loop overhead per tile.");
  cx.emit(t);
}

void split_decode_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const int H = c.n_heads, H_kv = c.n_kv_heads;
  const int64_t D = c.head_dim;
  std::vector<int64_t> caches;
  for (int64_t n : {1024, 2048, 4096, 8192})
    if (n <= c.context_length) caches.push_back(n);
  const std::vector<int64_t> splits{1, 2, 4, 8};
  const int runs = std::max(50, 20 * cx.repeats);  // a step takes a tenth of a millisecond to a millisecond
  Table t(fmt::format("13. FlashDecoding: one decode query over a cache of n positions, the keys split into S chunks merged by the "
                      "log-sum-exp rule, the model's shape ({})", cx.machine_line),
          {"n (cached)", "S (chunks)", "keys per chunk", "work items", "runs", "split (ms)", "S = 1 ÷ split", "ops::attention (ms)",
           "max |diff| from S = 1", "max |diff| from ops::attention"});
  std::mt19937 rng(50);
  ProgressBar bar("split decode attention", std::ssize(caches));
  for (int64_t n : caches) {
    const Tensor q = random_tensor(1, H * D, rng), k = random_tensor(n, H_kv * D, rng), v = random_tensor(n, H_kv * D, rng);
    Tensor lib_out({1, H * D});
    std::vector<Tensor> outs;
    std::vector<std::vector<int64_t>> bounds;
    std::vector<std::function<void()>> work;  // every split of this n, then lib's kernel, timed in turn
    for (std::size_t i = 0; i < splits.size(); ++i) {
      outs.emplace_back(Shape{1, H * D});
      bounds.push_back(even_split(n, splits[i]));
    }
    for (std::size_t i = 0; i < splits.size(); ++i)
      work.emplace_back([&, i] { split_decode_attention(q, k, v, H, H_kv, bounds[i], outs[i]); });
    work.emplace_back([&] { ops::attention(q, k, v, H, H_kv, n - 1, lib_out); });
    const std::vector<double> s = medians_in_turn(runs, work);
    for (std::size_t i = 0; i < splits.size(); ++i) {
      const int64_t S = splits[i];
      const float d_unsplit = max_abs_diff(outs[i], outs[0]), d_lib = max_abs_diff(outs[i], lib_out);
      t.add_row({std::to_string(n), std::to_string(S), std::to_string(n / S), fmt::format("{} × {} = {}", H_kv, S, H_kv * S),
                 std::to_string(runs), fmt::format("{:.3f}", s[i] * 1e3), cell::times(s[0] / s[i]), fmt::format("{:.3f}", s.back() * 1e3),
                 diff_cell(d_unsplit), diff_cell(d_lib)});
      cx.figures["split_decode"].push_back({{"n", n}, {"S", S}, {"runs", runs}, {"split_s", s[i]}, {"lib_s", s.back()},
                                            {"max_abs_diff_unsplit", d_unsplit}, {"max_abs_diff_lib", d_lib}});
    }
    bar.advance();
  }
  bar.done();
  const int threads = num_threads();
  const int64_t rounds = (H_kv + threads - 1) / threads;
  t.add_note(fmt::format("work items: (key/value head, chunk) pairs on lib's {} threads; each leaves its chunk's (m, ℓ, o) per query head, and the S",
                         threads));
  t.add_note("states of a head are merged: M = max m_s, ℓ = Σ exp(m_s − M) ℓ_s, o = Σ exp(m_s − M) o_s, out = o / ℓ. S = 1 is the unsplit");
  t.add_note(fmt::format("softmax. Unsplit, {} items for {} threads take {} rounds of a whole head each; split finely they can share the work evenly,",
                         H_kv, threads, rounds));
  t.add_note(fmt::format("so the most splitting can gain here is {} ÷ {} = {} (a GPU with a hundred multiprocessors and one query has far more to gain).",
                         rounds, fmt::format("{:.2f}", static_cast<double>(H_kv) / threads),
                         cell::times(static_cast<double>(rounds) * threads / H_kv)));
  t.add_note(fmt::format("ops::attention (lib's kernel) splits the same way, at fixed chunks of {} positions: {} × ⌈n / {}⌉ items. Times: medians",
                         cpu::kAttentionKeyChunk, H_kv, cpu::kAttentionKeyChunk));
  t.add_note("of rounds that run every column of an n in turn.");
  cx.emit(t);
}

}  // namespace

void tiled_attention_tables(const Context& cx, int64_t max_tokens) {
  prefill_table(cx, max_tokens);
  tile_size_table(cx);
  split_decode_table(cx);
}

}  // namespace infer::kv
