// Operation dispatch: check the operands once here, then hand them to the device's backend
// (on the CPU, to the backend cpu_backend() names: the fast one or the reference loops).
#include "tensor/ops.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "tensor/cpu_attention.hpp"
#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/ops_cpu.hpp"
#include "tensor/ops_reference.hpp"

namespace infer {
namespace {

OpCounters g_counters;

// Whether the CPU operations run the reference loops (ops_reference.cpp).
bool plain() { return cpu_backend() == CpuBackend::reference; }

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(fmt::format("ops::{}: {}", op, what));
}

void expect_shape(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape)
    fail(op, fmt::format("{} has shape {}, expected {}", name, shape_string(t.shape()),
                         shape_string(shape)));
}

void expect_f32(const char* op, const char* name, const Tensor& t) {
  if (t.dtype() != DType::f32) fail(op, fmt::format("{} is {}, expected f32", name, dtype_name(t.dtype())));
}

void expect_rank(const char* op, const char* name, const Tensor& t, int rank) {
  if (t.rank() != rank)
    fail(op, fmt::format("{} has shape {}, expected rank {}", name, shape_string(t.shape()), rank));
}

// All operands on one device; returns it.
template <class... Ts>
const Device& same_device(const char* op, const Tensor& first, const Ts&... rest) {
  for (const Device* d : {&rest.device()...})
    if (!(*d == first.device()))
      fail(op, fmt::format("operands on {} and {}", first.device().name(), d->name()));
  return first.device();
}

}  // namespace

OpCounters op_counters() { return g_counters; }
void reset_op_counters() { g_counters = {}; }

namespace ops {

void matmul_t(const Tensor& x, const Tensor& w, Tensor& y) {
  expect_rank("matmul_t", "x", x, 2);
  expect_rank("matmul_t", "w", w, 2);
  const int64_t n = x.dim(0), k = x.dim(1), m = w.dim(0);
  if (w.dim(1) != k) fail("matmul_t", fmt::format("x {} · wᵀ {}: inner sizes differ",
                                                  shape_string(x.shape()), shape_string(w.shape())));
  expect_shape("matmul_t", "y", y, {n, m});
  expect_f32("matmul_t", "x", x);
  expect_f32("matmul_t", "y", y);
  const Device& dev = same_device("matmul_t", x, w, y);
  if (dev.is_cpu()) {
    expect_f32("matmul_t", "w (on the CPU)", w);
    plain() ? reference::matmul_t(x, w, y) : cpu::matmul_t(x, w, y);
  } else {
    cuda::matmul_t(x, w, y);
  }
  g_counters.matmul_macs += n * m * k;
}

void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  expect_rank("embedding", "table", table, 2);
  expect_shape("embedding", "out", out, {std::ssize(ids), table.dim(1)});
  expect_f32("embedding", "table", table);
  for (int32_t id : ids)
    if (id < 0 || id >= table.dim(0))
      fail("embedding", fmt::format("token id {} outside the vocabulary [0, {})", id, table.dim(0)));
  const Device& dev = same_device("embedding", table, out);
  if (!dev.is_cpu()) cuda::embedding(table, ids, out);
  else plain() ? reference::embedding(table, ids, out) : cpu::embedding(table, ids, out);
}

void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  expect_rank("rmsnorm", "x", x, 2);
  expect_shape("rmsnorm", "weight", weight, {x.dim(1)});
  expect_shape("rmsnorm", "y", y, x.shape());
  const Device& dev = same_device("rmsnorm", x, weight, y);
  if (!dev.is_cpu()) cuda::rmsnorm(x, weight, eps, y);
  else plain() ? reference::rmsnorm(x, weight, eps, y) : cpu::rmsnorm(x, weight, eps, y);
}

void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta) {
  expect_rank("rope", "x", x, 2);
  if (n_heads <= 0 || x.dim(1) % n_heads != 0 || (x.dim(1) / n_heads) % 2 != 0)
    fail("rope", fmt::format("width {} is not n_heads ({}) × an even head size", x.dim(1), n_heads));
  if (std::ssize(positions) != x.dim(0))
    fail("rope", fmt::format("{} positions for {} rows", positions.size(), x.dim(0)));
  for (const int32_t p : positions)
    if (p < 0) fail("rope", fmt::format("negative position {}", p));
  if (!x.device().is_cpu()) cuda::rope(x, n_heads, positions, theta);
  else plain() ? reference::rope(x, n_heads, positions, theta) : cpu::rope(x, n_heads, positions, theta);
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  expect_shape("silu_mul", "up", up, gate.shape());
  expect_shape("silu_mul", "out", out, gate.shape());
  const Device& dev = same_device("silu_mul", gate, up, out);
  if (!dev.is_cpu()) cuda::silu_mul(gate, up, out);
  else plain() ? reference::silu_mul(gate, up, out) : cpu::silu_mul(gate, up, out);
}

void add_inplace(Tensor& x, const Tensor& y) {
  expect_shape("add_inplace", "y", y, x.shape());
  const Device& dev = same_device("add_inplace", x, y);
  if (!dev.is_cpu()) cuda::add_inplace(x, y);
  else plain() ? reference::add_inplace(x, y) : cpu::add_inplace(x, y);
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
               int64_t pos0, Tensor& out) {
  expect_rank("attention", "q", q, 2);
  if (k.rank() != 2 && k.rank() != 3)
    fail("attention", fmt::format("k is {}: not [S, H_kv·D] or [H_kv, S, D]", shape_string(k.shape())));
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || q.dim(1) % n_heads != 0)
    fail("attention", fmt::format("{} query heads cannot share {} key/value heads", n_heads, n_kv_heads));
  const int64_t t = q.dim(0), head_dim = q.dim(1) / n_heads;
  const bool head_major = k.rank() == 3;
  if (head_major ? k.dim(0) != n_kv_heads || k.dim(2) != head_dim : k.dim(1) != n_kv_heads * head_dim)
    fail("attention", fmt::format("k {} is not {} heads × {}", shape_string(k.shape()), n_kv_heads, head_dim));
  expect_shape("attention", "v", v, k.shape());
  expect_shape("attention", "out", out, q.shape());
  const int64_t n_keys = head_major ? k.dim(1) : k.dim(0);
  if (pos0 < 0 || pos0 + t > n_keys)
    fail("attention", fmt::format("queries at positions {}…{} need {} keys, have {}", pos0,
                                  pos0 + t - 1, pos0 + t, n_keys));
  const Device& dev = same_device("attention", q, k, v, out);
  if (!dev.is_cpu()) cuda::attention(q, k, v, n_heads, n_kv_heads, pos0, out);
  else if (plain()) reference::attention(q, k, v, n_heads, n_kv_heads, pos0, out);
  else cpu::attention(q, k, v, n_heads, n_kv_heads, pos0, out);
  // Query t sees pos0 + t + 1 keys: one dot product (scores) and one weighted sum (values)
  // of length D per key and per head.
  const int64_t keys_seen = t * pos0 + t * (t + 1) / 2;
  g_counters.attention_macs += 2 * n_heads * head_dim * keys_seen;
}


int32_t argmax(const Tensor& row) {
  if (row.numel() == 0) fail("argmax", "empty tensor");
  if (!row.device().is_cpu()) return cuda::argmax(row);
  return plain() ? reference::argmax(row) : cpu::argmax(row);
}

}  // namespace ops
}  // namespace infer
