// The packed formats' names on the command line, and the QuantScheme that writes each.
#include <stdexcept>

#include "absmax.hpp"
#include "ggml_blocks.hpp"
#include "nf4.hpp"
#include "packed_kernels.hpp"

namespace infer::quant {

std::string format_flag(PackedFormat format) {
  switch (format) {
    case PackedFormat::int8_per_row: return "int8";
    case PackedFormat::int4_g128: return "int4-g128";
    case PackedFormat::nf4: return "nf4";
    case PackedFormat::q8_0: return "q8_0";
    case PackedFormat::q4_1: return "q4_1";
  }
  throw std::invalid_argument("format_flag: unknown packed format");
}

std::optional<PackedFormat> parse_format_flag(const std::string& flag) {
  for (PackedFormat f : kPackedFormats)
    if (format_flag(f) == flag) return f;
  return std::nullopt;
}

std::unique_ptr<QuantScheme> scheme_for(PackedFormat format) {
  switch (format) {
    case PackedFormat::int8_per_row: return std::make_unique<AbsmaxScheme>(8, Granularity::per_row);
    case PackedFormat::int4_g128: return std::make_unique<AbsmaxScheme>(4, Granularity::per_group, 128);
    case PackedFormat::nf4: return std::make_unique<Nf4Scheme>(64);
    case PackedFormat::q8_0: return std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q8_0);
    case PackedFormat::q4_1: return std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q4_1);
  }
  throw std::invalid_argument("scheme_for: unknown packed format");
}

}  // namespace infer::quant
