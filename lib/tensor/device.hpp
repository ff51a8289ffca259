// Where a tensor's memory lives and where the operations on it run.
//
// Every Tensor carries a Device; every operation checks that its operands share one and then
// runs that device's implementation (ops_cpu.cpp, or cuda/cuda_*.cu when built with CUDA).
// Nothing moves between devices unless you call Tensor::to(): a CUDA run never silently falls
// back to the CPU.
#pragma once

#include <string>
#include <string_view>

namespace infer {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  // "cpu", "cuda" or "cuda:N". Throws std::invalid_argument for anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string name() const;
  bool operator==(const Device&) const = default;
};

// True when this build has the CUDA backend and a CUDA device can be used right now.
bool cuda_available();
// Why cuda_available() is false, in one line ("built without CUDA", "no CUDA device: ...").
std::string cuda_unavailable_reason();
// Throws std::runtime_error with that one line unless `device` can be used.
void require_device(const Device& device);

}  // namespace infer
