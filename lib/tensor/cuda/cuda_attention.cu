// Causal attention on the GPU: q[T, H·D], k/v [S, H_kv·D] or [H_kv, S, D] → out[T, H·D].
//
// The same computation as ops_cpu.cpp, one (query, head) pair at a time:
//   scores_j = q·k_j / sqrt(D)       for the keys j = 0 … pos0 + t the query may see
//   p_j      = exp(scores_j - max) / Σ exp(scores - max)
//   out      = Σ_j p_j · v_j
// Query head h reads key/value head h / (H / H_kv): grouped-query attention, no copies.
//
// Thread layout: one block of 128 threads per (head, query) pair; blockIdx.x is the head,
// blockIdx.y the query. A prefill of T tokens launches T·H blocks; a decode step (T = 1)
// launches H blocks, each reading that head's whole cache. (A faster decode would also split
// the keys among several blocks and merge their partial softmaxes — "flash decoding"; for the
// short contexts of this course the matrix products dominate, so we keep the simple layout.)
//
// Inside a block, three phases separated by block-wide reductions:
//   1. scores: each warp takes every 4th key; its 32 lanes split the D products of one dot
//      product and a warp shuffle adds them. The scores go to shared memory (or, for very long
//      contexts, to a scratch buffer in global memory).
//   2. softmax: each thread exponentiates a strided subset of the scores; the block adds them.
//   3. values: each thread owns one output dimension i (and, when D < 128, one of 128/D slices
//      of the keys); it accumulates p_j · v_j[i], and the slices are added at the end.
#include <cmath>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_common.cuh"

namespace infer::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
// Dynamic shared memory every GPU grants a block without asking (48 KiB). Scores beyond that
// go to global memory.
constexpr std::size_t kSharedLimit = 48 * 1024;
// Cap on the global scores buffer: long prefills are split into chunks of queries to fit it.
constexpr std::size_t kGlobalScoresLimit = std::size_t{256} << 20;

struct AttentionArgs {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  int head_dim;      // D
  int group;         // query heads per key/value head: H / H_kv
  int64_t q_stride;  // H·D: floats between consecutive queries (and outputs)
  int64_t row_stride;   // floats from key (and value) j to j + 1: H_kv·D position-major, D head-major
  int64_t head_stride;  // floats from key/value head g to g + 1: D position-major, S·D head-major
  int64_t pos0;      // position of query 0
  int64_t t0;        // first query of this launch (long prefills run in chunks)
  float scale;       // 1 / sqrt(D)
  float* scores_global;   // null: scores live in shared memory
  int64_t scores_stride;  // floats per block in scores_global
};

// Shared memory layout of a block (floats):
//   q_s[D] | reduce[32] | partial[max(D, kThreads)] | scores[n_keys] (unless scores_global)
__global__ void attention_kernel(AttentionArgs a) {
  extern __shared__ float shared[];
  const int h = blockIdx.x;
  const int64_t t = a.t0 + blockIdx.y;
  const int D = a.head_dim;
  const int64_t n_keys = a.pos0 + t + 1;  // causal: keys 0 … pos0 + t
  const int partial_size = D > kThreads ? D : kThreads;
  float* q_s = shared;
  float* reduce = q_s + D;
  float* partial = reduce + 32;
  float* scores = a.scores_global
                      ? a.scores_global + (static_cast<int64_t>(blockIdx.y) * gridDim.x + h) * a.scores_stride
                      : partial + partial_size;

  const int64_t kv_offset = static_cast<int64_t>(h / a.group) * a.head_stride;  // the shared key/value head
  const float* qh = a.q + t * a.q_stride + static_cast<int64_t>(h) * D;
  for (int i = threadIdx.x; i < D; i += kThreads) q_s[i] = qh[i];
  __syncthreads();

  // 1. scores: warp w computes keys w, w + 4, w + 8, ...
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float local_max = -INFINITY;
  for (int64_t j = warp; j < n_keys; j += kWarps) {
    const float* kj = a.k + j * a.row_stride + kv_offset;
    float dot = 0.0f;
    for (int i = lane; i < D; i += 32) dot += q_s[i] * kj[i];
    dot = detail::warp_sum(dot);  // every lane now holds the whole dot product
    const float s = dot * a.scale;
    if (lane == 0) scores[j] = s;
    local_max = fmaxf(local_max, s);
  }
  const float max_score = detail::block_max(local_max, reduce);  // also orders the score writes

  // 2. softmax numerators and their sum.
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n_keys; j += kThreads) {
    const float e = expf(scores[j] - max_score);
    scores[j] = e;
    local_sum += e;
  }
  const float inv_sum = 1.0f / detail::block_sum(local_sum, reduce);

  // 3. out[i] = Σ_j p_j · v_j[i]. With D ≤ 128 the block splits the keys into 128/D slices so
  // that every thread works; thread (slice, i) sums keys slice, slice + slices, ...
  const int slices = D < kThreads ? kThreads / D : 1;
  for (int item = threadIdx.x; item < slices * D; item += kThreads) {
    const int slice = item / D, i = item % D;
    float acc = 0.0f;
    for (int64_t j = slice; j < n_keys; j += slices)
      acc += (scores[j] * inv_sum) * a.v[j * a.row_stride + kv_offset + i];
    partial[item] = acc;
  }
  __syncthreads();
  float* oh = a.out + t * a.q_stride + static_cast<int64_t>(h) * D;
  for (int i = threadIdx.x; i < D; i += kThreads) {
    float acc = 0.0f;
    for (int slice = 0; slice < slices; ++slice) acc += partial[slice * D + i];
    oh[i] = acc;
  }
}

detail::DeviceBuffer g_scores;  // for contexts too long for shared memory

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
               int64_t pos0, Tensor& out) {
  detail::activate(out.device());
  const int64_t n_queries = q.dim(0);
  const int head_dim = detail::to_int(q.dim(1) / n_heads, "head size");
  if (n_queries == 0 || head_dim == 0) return;

  AttentionArgs a{};
  a.q = detail::f32_ptr(q, "attention", "q");
  a.k = detail::f32_ptr(k, "attention", "k");
  a.v = detail::f32_ptr(v, "attention", "v");
  a.out = detail::f32_ptr(out, "attention", "out");
  a.head_dim = head_dim;
  a.group = n_heads / n_kv_heads;
  a.q_stride = q.dim(1);
  const bool head_major = k.rank() == 3;  // [H_kv, S, D], else [S, H_kv·D]
  a.row_stride = head_major ? head_dim : k.dim(1);
  a.head_stride = head_major ? k.dim(1) * head_dim : head_dim;
  a.pos0 = pos0;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));

  const int64_t max_keys = pos0 + n_queries;  // the last query sees the most keys
  const std::size_t fixed_floats =
      static_cast<std::size_t>(head_dim) + 32 + static_cast<std::size_t>(head_dim > kThreads ? head_dim : kThreads);
  const std::size_t with_scores = (fixed_floats + static_cast<std::size_t>(max_keys)) * sizeof(float);
  if (fixed_floats * sizeof(float) > kSharedLimit)
    throw std::runtime_error("ops::attention on CUDA: head size " + std::to_string(head_dim) +
                             " is too large for this kernel");

  // Queries per launch: all of them, unless the scores must go to global memory and would
  // overflow its cap (or the grid's y limit).
  int64_t chunk = n_queries < 65535 ? n_queries : 65535;
  std::size_t shared_bytes = with_scores;
  if (with_scores > kSharedLimit) {
    shared_bytes = fixed_floats * sizeof(float);
    const std::size_t per_query = static_cast<std::size_t>(n_heads) * static_cast<std::size_t>(max_keys) * sizeof(float);
    const int64_t fit = static_cast<int64_t>(kGlobalScoresLimit / per_query);
    chunk = fit < 1 ? 1 : (fit < chunk ? fit : chunk);
    a.scores_stride = max_keys;
    a.scores_global = static_cast<float*>(
        g_scores.reserve(out.device(), static_cast<std::size_t>(chunk) * per_query));
  }

  for (int64_t t0 = 0; t0 < n_queries; t0 += chunk) {
    const int64_t count = n_queries - t0 < chunk ? n_queries - t0 : chunk;
    a.t0 = t0;
    const dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(count));
    attention_kernel<<<grid, kThreads, shared_bytes>>>(a);
    detail::check_launch("attention_kernel");
  }
}

}  // namespace infer::cuda
