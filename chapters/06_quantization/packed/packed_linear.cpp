#include "packed_linear.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/memory.hpp"

namespace infer::quant {
namespace {

void check_matrix(const char* op, const Tensor& t, const char* name, int64_t rows, int64_t cols, const Device& dev) {
  if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != cols || t.dtype() != DType::f32 || t.device() != dev)
    throw std::invalid_argument(fmt::format("{}: {} is {} {} on {}, expected f32 [{}, {}] on {}", op, name,
                                            dtype_name(t.dtype()), shape_string(t.shape()), t.device().name(), rows,
                                            cols, dev.name()));
}

}  // namespace

PackedMatrix pack_weight(const Tensor& weight, PackedFormat format) {
  if (weight.rank() != 2) throw std::invalid_argument(fmt::format("pack_weight: weight of shape {}", shape_string(weight.shape())));
  const int64_t rows = weight.dim(0), cols = weight.dim(1);
  const auto scheme = scheme_for(format);
  if (weight.device().is_cpu() && weight.dtype() == DType::f32)  // no copy
    return scheme->quantize({weight.host<float>(), static_cast<std::size_t>(rows * cols)}, rows, cols);
  const std::vector<float> values = weight.to_vector();
  return scheme->quantize(values, rows, cols);
}

PackedLinear::PackedLinear(const Tensor& weight, PackedFormat format, Device device, Activations activations)
    : PackedLinear(pack_weight(weight, format), format, device, activations) {}

PackedLinear::PackedLinear(const PackedMatrix& packed, PackedFormat format, Device device, Activations activations)
    : PackedLinear(packed, format, std::make_shared<Storage>(device, packed.bytes.size()), 0, activations) {}

PackedLinear::PackedLinear(const PackedMatrix& packed, PackedFormat format, std::shared_ptr<Storage> buffer,
                           std::size_t offset, Activations activations)
    : format_(format), activations_(activations), rows_(packed.rows), cols_(packed.cols),
      storage_(scheme_for(format)->name()), bytes_(std::move(buffer)), offset_(offset), size_(packed.bytes.size()) {
  if (!bytes_) throw std::invalid_argument("PackedLinear: no buffer");
  if (activations == Activations::int8 && !device().is_cpu())
    throw std::invalid_argument("PackedLinear: int8 activations have a CPU kernel only (drop --int8-activations or use --device cpu)");
  const std::size_t expected = scheme_for(format)->packed_bytes(rows_, cols_);
  if (rows_ <= 0 || cols_ <= 0 || size_ != expected)
    throw std::invalid_argument(fmt::format("PackedLinear: {} bytes for a [{}, {}] {} matrix, expected {}", size_, rows_,
                                            cols_, storage_, expected));
  if (offset_ > bytes_->bytes() || size_ > bytes_->bytes() - offset_)
    throw std::out_of_range(fmt::format("PackedLinear: {} bytes at offset {} of a buffer of {}", size_, offset_, bytes_->bytes()));
  device_copy(device(), static_cast<uint8_t*>(bytes_->data()) + offset_, Device::cpu(), packed.bytes.data(), size_);
}

// the-change: begin PackedLinear::forward
void PackedLinear::forward(const Tensor& x, Tensor& y) const {
  const int64_t n = x.rank() == 2 ? x.dim(0) : -1;
  check_matrix("PackedLinear::forward", x, "x", n, cols_, device());
  check_matrix("PackedLinear::forward", y, "y", n, rows_, device());
  const auto* xp = static_cast<const float*>(x.raw());
  auto* yp = static_cast<float*>(y.raw());
  if (device().is_cpu())
    packed_matmul_cpu(format_, data(), rows_, cols_, xp, n, yp, activations_);
  else
    packed_matmul_cuda(format_, data(), rows_, cols_, xp, n, yp);
}
// the-change: end PackedLinear::forward

void PackedEmbedding::lookup(std::span<const int32_t> ids, Tensor& x) const {
  const auto n = std::ssize(ids);
  const int64_t rows = vocab_size(), cols = width();
  const Device& dev = matrix_.device();
  check_matrix("PackedEmbedding::lookup", x, "x", n, cols, dev);
  for (int32_t id : ids)
    if (id < 0 || id >= rows)
      throw std::invalid_argument(fmt::format("PackedEmbedding::lookup: token id {} outside the vocabulary [0, {})", id, rows));
  auto* xp = static_cast<float*>(x.raw());
  if (dev.is_cpu()) {
    packed_gather_rows_cpu(matrix_.format(), matrix_.data(), rows, cols, ids.data(), n, xp);
  } else {  // the ids go to the device too
    Tensor host_ids({n}, DType::i32);
    std::copy(ids.begin(), ids.end(), host_ids.host<int32_t>());
    const Tensor dev_ids = host_ids.to(dev);
    packed_gather_rows_cuda(matrix_.format(), matrix_.data(), rows, cols, static_cast<const int32_t*>(dev_ids.raw()), n, xp);
  }
}

bool PackedEmbedding::shares_storage_with(const Linear& linear) const {
  const auto* packed = dynamic_cast<const PackedLinear*>(&linear);
  return packed != nullptr && packed->data() == matrix_.data();
}

}  // namespace infer::quant
