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
// Why cuda_available() is false: "no CUDA device found", "this build has no CUDA backend ...",
// or, when a GPU is there but the runtime refuses it, cuda_failure_reason's two lines.
std::string cuda_unavailable_reason();
// Throws std::runtime_error with that reason unless `device` can be used.
void require_device(const Device& device);

// Whether the kernel knows of an NVIDIA GPU (/dev/nvidia0 or /proc/driver/nvidia/gpus/*). On a
// machine without one the CUDA runtime's error ("CUDA driver version is insufficient ...") blames
// a driver that was never installed, so the reason should not repeat it.
bool nvidia_gpu_present();
// The reason for a failed device query: "no CUDA device found" without a GPU, else
// "a CUDA device is present but cannot be used:" and the runtime's text on a second line.
std::string cuda_failure_reason(bool gpu_present, const std::string& runtime_text);

}  // namespace infer
