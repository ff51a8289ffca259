#include "tensor/memory.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/ops.hpp"  // cpu_backend

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

// Host memory, 64-byte aligned so that every row of a tensor is friendly to SIMD loads.
//
// A buffer of 2 MiB or more (a weight matrix or a layer's matrices, a KV cache, a long
// prefill's activations) starts on a 2 MiB boundary instead, and the whole 2 MiB pages inside it
// are offered to Linux as transparent huge pages. A decode step streams every weight once: the
// default model's 538 MB of fp32 are ~130 000 pages of 4 KiB, each an address translation the
// CPU must look up (a TLB miss) as the stream crosses it, against ~270 pages of 2 MiB.
// tests/bench/bench_pages times a decode step's products on the same weights on 2 MiB and on
// 4 KiB pages, in turn in one process (its figures: docs/performance.md). Only
// pages wholly inside the buffer are asked for, so nothing is added to its size; the kernel
// grants them if it can (/sys/kernel/mm/transparent_hugepage/enabled: "madvise" or "always").
// Huge pages are part of the fast CPU backend: with the reference backend every buffer is plainly
// 64-byte aligned.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void* host_alloc(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) return nullptr;
  const bool huge = rounded >= kHugePage && cpu_backend() == CpuBackend::fast;
  const std::size_t alignment = huge ? kHugePage : 64;
  void* ptr = nullptr;
  if (posix_memalign(&ptr, alignment, rounded) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (alignment == kHugePage) madvise(ptr, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: ignore failure
#endif
  return ptr;
}

}  // namespace

void* device_alloc(const Device& device, std::size_t bytes) {
  void* ptr = nullptr;
  if (device.is_cpu()) {
    ptr = host_alloc(bytes);
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
