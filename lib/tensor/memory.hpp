// Device memory: allocation, and the allocator's bookkeeping that the measurements print.
//
// Every byte a Tensor owns is allocated here, so `memory_stats` is the real answer to "how much
// memory did this run use", e.g. the peak of a loop that recomputes against one with a cache.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/device.hpp"

namespace infer {

struct MemoryStats {
  int64_t current_bytes = 0;  // bytes allocated right now
  int64_t peak_bytes = 0;     // high-water mark since the last reset_peak_memory
  int64_t allocations = 0;    // number of allocations since start
};

void* device_alloc(const Device& device, std::size_t bytes);  // CPU: 64-byte aligned, 2 MiB from 2 MiB on (fast backend; memory.cpp)
void device_free(const Device& device, void* ptr, std::size_t bytes);
// Copies bytes between any two devices (host<->device, device<->device, host<->host).
void device_copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
                 std::size_t bytes);
void device_memset_zero(const Device& device, void* ptr, std::size_t bytes);

MemoryStats memory_stats(const Device& device);
void reset_peak_memory(const Device& device);  // peak := current

}  // namespace infer
