#include "tensor/simd_target.hpp"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/simd_target.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target, like every kernel file
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace infer::simd::HWY_NAMESPACE {
// Which target a dispatched call lands in: what the kernels run, not only what the CPU reports.
int64_t ThisTarget() { return HWY_TARGET; }
}  // namespace infer::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::simd {
namespace {

HWY_EXPORT(ThisTarget);

// Highway's target bits: a lower bit is a better target.
int64_t best_of(int64_t targets) { return targets & -targets; }

std::string names(int64_t targets) {
  std::string out;
  for (int64_t t = targets; t != 0; t &= t - 1) out += (out.empty() ? "" : " ") + std::string(hwy::TargetName(best_of(t)));
  return out;
}

// The compiled target called `name` (any case), or 0.
int64_t target_bit(const std::string& name) {
  for (int64_t t = HWY_TARGETS; t != 0; t &= t - 1) {
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper == hwy::TargetName(best_of(t))) return best_of(t);
  }
  return 0;
}

// What the CPU itself supports, read before any restriction (SupportedTargets() reports the
// restriction once one is set).
int64_t cpu_targets() {
  static const int64_t targets = hwy::SupportedTargets();
  return targets;
}

// Every later dispatch goes to `target` (0: back to the best the CPU has).
void restrict_to(int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

}  // namespace

void init() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    cpu_targets();
    const char* wanted = std::getenv("INFER_SIMD");
    if (wanted == nullptr || *wanted == '\0') return;
    try {
      use_target(wanted);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw std::runtime_error(error);
}

std::string target_name() {
  init();
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(ThisTarget)());
}

std::vector<CompiledTarget> compiled_targets() {
  std::vector<CompiledTarget> out;
  for (int64_t t = HWY_TARGETS; t != 0; t &= t - 1)
    out.push_back({hwy::TargetName(best_of(t)), (cpu_targets() & best_of(t)) != 0});
  return out;
}

std::string describe() { return fmt::format("{} (compiled: {})", target_name(), names(HWY_TARGETS)); }

void use_target(const std::string& name) {
  if (name.empty()) {
    cpu_targets();
    restrict_to(0);
    return;
  }
  const int64_t bit = target_bit(name);
  if (bit == 0)
    throw std::runtime_error(fmt::format("INFER_SIMD={}: not compiled into this build (compiled: {}; "
                                         "INFER_ARCH=portable compiles every target)", name, names(HWY_TARGETS)));
  if ((cpu_targets() & bit) == 0)
    throw std::runtime_error(fmt::format("INFER_SIMD={}: this CPU cannot run it (it can run: {})", name,
                                         names(cpu_targets() & HWY_TARGETS)));
  restrict_to(bit);
}

}  // namespace infer::simd
#endif  // HWY_ONCE
