#include "train_attention.hpp"
#include "train_kernels.hpp"  // kParallelMin

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/thread_pool.hpp"

namespace infer::train {

template <class T>
void attention_forward(const T* q, const T* k, const T* v, const AttentionShape& a, T* probs, T* out) {
  const int64_t q_stride = a.q_stride(), kv_stride = a.kv_stride();
  const T scale = T(1) / std::sqrt(static_cast<T>(a.D));
  // One item per (sequence, head) pair.
  const int64_t pairs = a.B * a.H;
  parallel_for(pairs, a.work() >= kParallelMin ? 1 : pairs, [&](int64_t first, int64_t last) {
    for (int64_t pair = first; pair < last; ++pair) {
      const int64_t b = pair / a.H, h = pair % a.H;  // int64_t: both enter offset products
      const int64_t row0 = b * a.S;                  // first row of sequence b
      const int64_t kv_off = h / a.group() * a.D;
      for (int t = 0; t < a.S; ++t) {
        const T* qt = q + (row0 + t) * q_stride + h * a.D;
        T* p = probs + ((b * a.H + h) * a.S + t) * a.S;
        // scores, then a softmax stabilised by the largest score
        T max_score = -std::numeric_limits<T>::infinity();
        for (int j = 0; j <= t; ++j) {
          const T* kj = k + (row0 + j) * kv_stride + kv_off;
          T dot = 0;
          for (int i = 0; i < a.D; ++i) dot += qt[i] * kj[i];
          p[j] = dot * scale;
          max_score = std::max(max_score, p[j]);
        }
        double sum = 0.0;
        for (int j = 0; j <= t; ++j) {
          p[j] = std::exp(p[j] - max_score);
          sum += p[j];
        }
        const T inv_sum = static_cast<T>(1.0 / sum);
        for (int j = 0; j <= t; ++j) p[j] *= inv_sum;
        std::fill(p + t + 1, p + a.S, T(0));  // the future is masked
        // out = Σ_j p_j v_j
        T* ot = out + (row0 + t) * q_stride + h * a.D;
        std::fill(ot, ot + a.D, T(0));
        for (int j = 0; j <= t; ++j) {
          const T* vj = v + (row0 + j) * kv_stride + kv_off;
          for (int i = 0; i < a.D; ++i) ot[i] += p[j] * vj[i];
        }
      }
    }
  });
}

template <class T>
void attention_backward(const T* d_out, const T* q, const T* k, const T* v, const T* probs,
                        const AttentionShape& a, T* dq, T* dk, T* dv) {
  const int64_t q_stride = a.q_stride(), kv_stride = a.kv_stride();
  const int group = a.group();
  const T scale = T(1) / std::sqrt(static_cast<T>(a.D));
  // One task per (sequence, key/value head): the query heads of a group all write the same
  // dk and dv rows, so they run in one task, and no two tasks write the same element.
  const int64_t pairs = a.B * a.H_kv;
  parallel_for(pairs, a.work() >= kParallelMin ? 1 : pairs, [&](int64_t first, int64_t last) {
    for (int64_t pair = first; pair < last; ++pair) {
      const int64_t b = pair / a.H_kv, hk = pair % a.H_kv;
      const int64_t row0 = b * a.S;
      const int64_t kv_off = hk * a.D;
      std::vector<T> dp(a.S);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int t = 0; t < a.S; ++t) {
          const int64_t q_off = (row0 + t) * q_stride + h * a.D;
          const T* p = probs + ((b * a.H + h) * a.S + t) * a.S;
          const T* dot = d_out + q_off;
          // dp_j = d_out·v_j and dv_j += p_j d_out; then Σ_i p_i dp_i
          double p_dot_dp = 0.0;
          for (int j = 0; j <= t; ++j) {
            const T* vj = v + (row0 + j) * kv_stride + kv_off;
            T* dvj = dv + (row0 + j) * kv_stride + kv_off;
            T s = 0;
            for (int i = 0; i < a.D; ++i) {
              s += dot[i] * vj[i];
              dvj[i] += p[j] * dot[i];
            }
            dp[j] = s;
            p_dot_dp += static_cast<double>(p[j]) * s;
          }
          // ds_j = p_j (dp_j − Σ p dp); dq += scale ds_j k_j; dk_j += scale ds_j q
          const T* qt = q + q_off;
          T* dqt = dq + q_off;
          for (int j = 0; j <= t; ++j) {
            const T ds = p[j] * (dp[j] - static_cast<T>(p_dot_dp)) * scale;
            const T* kj = k + (row0 + j) * kv_stride + kv_off;
            T* dkj = dk + (row0 + j) * kv_stride + kv_off;
            for (int i = 0; i < a.D; ++i) {
              dqt[i] += ds * kj[i];
              dkj[i] += ds * qt[i];
            }
          }
        }
      }
    }
  });
}

template void attention_forward<float>(const float*, const float*, const float*, const AttentionShape&, float*, float*);
template void attention_forward<double>(const double*, const double*, const double*, const AttentionShape&, double*, double*);
template void attention_backward<float>(const float*, const float*, const float*, const float*, const float*,
                                        const AttentionShape&, float*, float*, float*);
template void attention_backward<double>(const double*, const double*, const double*, const double*, const double*,
                                         const AttentionShape&, double*, double*, double*);

}  // namespace infer::train
