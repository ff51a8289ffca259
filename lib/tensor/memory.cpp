#include "tensor/memory.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"

namespace infer {
namespace {

// Bookkeeping per device kind (one CUDA device is enough for this course).
struct Counters {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};
Counters& counters(const Device& device) {
  static Counters cpu, cuda;
  return device.is_cpu() ? cpu : cuda;
}

void record_alloc(const Device& device, std::size_t bytes) {
  Counters& c = counters(device);
  const int64_t now = c.current += static_cast<int64_t>(bytes);
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  ++c.allocations;
}

}  // namespace

void* device_alloc(const Device& device, std::size_t bytes) {
  void* ptr = nullptr;
  if (device.is_cpu()) {
    // 64-byte alignment keeps every row of a tensor friendly to SIMD loads.
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    ptr = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded);
    if (rounded != 0 && ptr == nullptr) throw std::bad_alloc();
  } else {
    ptr = cuda::alloc(device, bytes);
  }
  record_alloc(device, bytes);
  return ptr;
}

void device_free(const Device& device, void* ptr, std::size_t bytes) {
  if (device.is_cpu())
    std::free(ptr);
  else
    cuda::free(device, ptr);
  counters(device).current -= static_cast<int64_t>(bytes);
}

void device_copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
                 std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu())
    std::memcpy(dst, src, bytes);
  else
    cuda::copy(dst_device, dst, src_device, src, bytes);
}

void device_memset_zero(const Device& device, void* ptr, std::size_t bytes) {
  if (bytes == 0) return;
  if (device.is_cpu())
    std::memset(ptr, 0, bytes);
  else
    cuda::memset_zero(device, ptr, bytes);
}

MemoryStats memory_stats(const Device& device) {
  const Counters& c = counters(device);
  return {c.current.load(), c.peak.load(), c.allocations.load()};
}

void reset_peak_memory(const Device& device) {
  Counters& c = counters(device);
  c.peak = c.current.load();
}

}  // namespace infer
