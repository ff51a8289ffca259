// The device layer, on any machine: device names, and CUDA refused in one clear line wherever it
// cannot be used (no GPU, or a build without the CUDA backend) — never a silent CPU fallback.
// With a GPU the same refusals do not apply; tests/cuda (label "cuda") covers that side.
#include "catch_compat.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/device.hpp"
#include "tensor/memory.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"

using namespace infer;

namespace {

// The message of the std::runtime_error that f throws ("" if it throws nothing or another type).
std::string runtime_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (...) {
    return "(another exception type)";
  }
  return "";
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

}  // namespace

TEST_CASE("Device::parse accepts cpu, cuda and cuda:N", "[device]") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:0") == Device::cuda(0));
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
  CHECK(Device::parse("cuda:12").index == 12);
  CHECK(Device::parse("cuda:1").is_cuda());
  CHECK(Device::parse("cpu").is_cpu());
  CHECK(Device::cpu().name() == "cpu");
  CHECK(Device::cuda(1).name() == "cuda:1");
  CHECK_FALSE(Device::cuda(0) == Device::cuda(1));
}

TEST_CASE("Device::parse rejects anything else, naming it", "[device]") {
  for (const std::string junk : {"", "gpu", "CUDA", "Cpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1a",
                                 "cuda 0", " cpu", "cpu:0", "cuda0"}) {
    INFO("'" << junk << "'");
    CHECK_THROWS_AS(Device::parse(junk), std::invalid_argument);
    CHECK_THROWS_WITH(Device::parse(junk), Catch::Contains("unknown device '" + junk + "'") &&
                                               Catch::Contains("expected cpu, cuda or cuda:N"));
  }
}

TEST_CASE("the CPU is always usable", "[device]") {
  CHECK_NOTHROW(require_device(Device::cpu()));
  const Tensor t = Tensor::zeros({4});
  CHECK(t.device() == Device::cpu());
  CHECK(t.to(Device::cpu()).to_vector() == std::vector<float>(4, 0.0f));
}

// The reason is one line, except when a GPU is there but unusable: then the runtime's own text
// follows on a second line.
static bool well_formed_reason(const std::string& s) {
  return one_line(s) || (s.starts_with("a CUDA device is present but cannot be used:\n") &&
                         one_line(s.substr(s.find('\n') + 1)));
}

TEST_CASE("cuda_available and its reason agree", "[device]") {
  const std::string reason = cuda_unavailable_reason();
  CHECK(cuda_available() == reason.empty());
  if (!reason.empty()) {
    INFO(reason);
    CHECK(well_formed_reason(reason));
    // "no CUDA device found" (CUDA build, no GPU) or "this build has no CUDA backend ..."
    CHECK_THAT(reason, Catch::Contains("CUDA"));
  }
}

TEST_CASE("without a GPU the reason is \"no CUDA device found\", not the driver's complaint", "[device]") {
  // What the CUDA runtime says on a machine with no NVIDIA driver at all.
  const std::string driver = "CUDA driver version is insufficient for CUDA runtime version";
  CHECK(cuda_failure_reason(false, driver) == "no CUDA device found");
  CHECK(cuda_failure_reason(false, "") == "no CUDA device found");
  // A GPU that is there but cannot be used: the driver's words are the useful part.
  const std::string present = cuda_failure_reason(true, driver);
  CHECK(present == "a CUDA device is present but cannot be used:\n" + driver);
  CHECK(well_formed_reason(present));
  // And on this machine, whatever it has:
  const std::string here = cuda_unavailable_reason();
  if (!cuda_available() && !nvidia_gpu_present()) CHECK_THAT(here, !Catch::Contains("insufficient"));
}

TEST_CASE("without a GPU every build says \"no CUDA device found\" first, with or without CUDA", "[device]") {
  if (nvidia_gpu_present()) return;  // the other reasons are tested above
  CHECK_THAT(cuda_unavailable_reason(), Catch::StartsWith("no CUDA device found"));
  CHECK_THROWS_WITH(require_device(Device::cuda(0)),
                    Catch::StartsWith("--device cuda:0 requested but no CUDA device found"));
}

TEST_CASE("without a usable GPU, CUDA tensors are refused in one line", "[device]") {
  if (cuda_available()) {
    SUCCEED("a GPU is usable here: the cuda_parity test covers this side");
    return;
  }
  const std::string reason = cuda_unavailable_reason();
  INFO("reason: " << reason);
  const int64_t allocated_before = memory_stats(Device::cuda()).allocations;

  // Allocation is where a CUDA tensor first touches the device: it fails there, with the reason.
  const std::string msg = runtime_error_of([] { Tensor t({4}, DType::f32, Device::cuda()); });
  CHECK(msg == reason);
  CHECK_THAT(msg, Catch::Contains("no CUDA device found") || Catch::Contains("no CUDA backend") ||
                      Catch::Contains("cannot be used"));
  CHECK(well_formed_reason(msg));

  CHECK(runtime_error_of([] { Tensor::zeros({2, 3}, DType::f32, Device::cuda()); }) == reason);
  const std::vector<float> values{1, 2, 3};
  CHECK(runtime_error_of([&] { Tensor::from_vector(values, {3}, Device::cuda()); }) == reason);
  const Tensor host = Tensor::zeros({3});
  CHECK(runtime_error_of([&] { host.to(Device::cuda()); }) == reason);
  CHECK(runtime_error_of([] { Tensor t({0}, DType::f32, Device::cuda(1)); }) == reason);

  // Nothing was counted as allocated.
  CHECK(memory_stats(Device::cuda()).allocations == allocated_before);
  CHECK(memory_stats(Device::cuda()).current_bytes == 0);
}

TEST_CASE("require_device refuses CUDA in one line when it cannot be used", "[device]") {
  if (cuda_available()) {
    CHECK_NOTHROW(require_device(Device::cuda()));
    return;
  }
  for (const Device& device : {Device::cuda(0), Device::cuda(1)}) {
    const std::string msg = runtime_error_of([&] { require_device(device); });
    INFO(msg);
    CHECK(well_formed_reason(msg.substr(msg.find(" requested but ") + 15)));
    CHECK_THAT(msg, Catch::StartsWith("--device " + device.name() + " requested but "));
    CHECK_THAT(msg, Catch::EndsWith(cuda_unavailable_reason()));
  }
}

TEST_CASE("without a usable GPU, every CUDA backend entry refuses", "[device]") {
  if (cuda_available()) {
    SUCCEED("a GPU is usable here: the cuda_parity test covers the backend");
    return;
  }
  // Only CPU tensors can be made here; the backend must refuse before touching them.
  Tensor x = Tensor::zeros({2, 8}), w = Tensor::zeros({4, 8}), y = Tensor::zeros({2, 4});
  Tensor row = Tensor::zeros({1, 8}), norm_w = Tensor::zeros({8});
  const std::vector<int32_t> ids{0, 1};
  const Device gpu = Device::cuda();
  char host_bytes[16] = {};
  const std::vector<std::pair<const char*, std::function<void()>>> entries = {
      {"alloc", [&] { cuda::alloc(gpu, 64); }},
      {"copy to the device", [&] { cuda::copy(gpu, host_bytes, Device::cpu(), host_bytes, 16); }},
      {"copy from the device", [&] { cuda::copy(Device::cpu(), host_bytes, gpu, host_bytes, 16); }},
      {"memset_zero", [&] { cuda::memset_zero(gpu, host_bytes, 16); }},
      {"matmul_t", [&] { cuda::matmul_t(x, w, y); }},
      {"embedding", [&] { cuda::embedding(w, ids, x); }},
      {"rmsnorm", [&] { cuda::rmsnorm(row, norm_w, 1e-5f, row); }},
      {"rope", [&] { cuda::rope(x, 2, ids, 10000.0f); }},
      {"silu_mul", [&] { cuda::silu_mul(x, x, x); }},
      {"add_inplace", [&] { cuda::add_inplace(x, x); }},
      {"attention", [&] { cuda::attention(x, x, x, 2, 2, 0, x); }},
      {"argmax", [&] { cuda::argmax(row); }},
  };
  for (const auto& [name, call] : entries) {
    INFO("cuda::" << name);
    const std::string msg = runtime_error_of(call);
    CHECK(msg == cuda_unavailable_reason());
  }
  // Freeing nothing and waiting for nothing are harmless.
  CHECK_NOTHROW(cuda::free(gpu, nullptr));
  CHECK_NOTHROW(cuda::synchronize());
  // The CPU tensors were left alone.
  CHECK(x.to_vector() == std::vector<float>(16, 0.0f));
}

TEST_CASE("operations check their operands' devices and dtypes", "[device]") {
  // 16-bit weights are a CUDA feature: the CPU backend refuses them instead of misreading them.
  const Tensor x = Tensor::zeros({2, 8});
  const Tensor w16 = Tensor::zeros({4, 8}, DType::f16);
  Tensor y({2, 4});
  CHECK_THROWS_WITH(ops::matmul_t(x, w16, y), Catch::Contains("w (on the CPU) is f16, expected f32"));

  if (cuda_available()) {
    // Operands on two devices are refused, naming both (never copied behind the caller's back).
    const Tensor w = Tensor::zeros({4, 8}).to(Device::cuda());
    CHECK_THROWS_WITH(ops::matmul_t(x, w, y), Catch::Contains("operands on cpu and cuda:0"));
    Tensor a = Tensor::zeros({3});
    CHECK_THROWS_AS(ops::add_inplace(a, a.to(Device::cuda())), std::invalid_argument);
  } else {
    // No CUDA tensor can exist here, so no op can even receive one.
    CHECK_THROWS_AS(Tensor({2, 4}, DType::f32, Device::cuda()), std::runtime_error);
  }
}
