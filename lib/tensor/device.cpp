#include "tensor/device.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_backend.hpp"

namespace infer {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    const std::string index(text.substr(5));
    if (!index.empty() && index.size() <= 4 && index.find_first_not_of("0123456789") == std::string::npos)
      return cuda(std::stoi(index));
  }
  throw std::invalid_argument("unknown device '" + std::string(text) +
                              "' (expected cpu, cuda or cuda:N)");
}

std::string Device::name() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
}

bool cuda_available() { return cuda::unavailable_reason().empty(); }

std::string cuda_unavailable_reason() { return cuda::unavailable_reason(); }

bool nvidia_gpu_present() {
  namespace fs = std::filesystem;
  std::error_code ignored;
  if (fs::exists("/dev/nvidia0", ignored)) return true;
  const fs::path gpus = "/proc/driver/nvidia/gpus";
  return fs::is_directory(gpus, ignored) && !fs::is_empty(gpus, ignored);
}

std::string cuda_failure_reason(bool gpu_present, const std::string& runtime_text) {
  if (!gpu_present) return "no CUDA device found";
  return "a CUDA device is present but cannot be used:\n" + runtime_text;
}

void require_device(const Device& device) {
  if (device.is_cuda() && !cuda_available())
    throw std::runtime_error("--device " + device.name() + " requested but " +
                             cuda_unavailable_reason());
}

}  // namespace infer
