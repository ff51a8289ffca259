#include "model/weights.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/gguf_file.hpp"

namespace infer {
namespace {

// Converts fp32 values to the storage dtype on the host (f16/bf16 round to nearest).
Tensor host_tensor(const std::vector<float>& values, Shape shape, DType dtype) {
  Tensor t(std::move(shape), dtype);
  uint16_t* dst = t.host<uint16_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f16) {
      dst[i] = gguf::fp32_to_fp16(values[i]);
    } else {  // bf16: keep the top 16 bits, rounded to nearest even
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      bits += 0x7fff + ((bits >> 16) & 1);
      dst[i] = static_cast<uint16_t>(bits >> 16);
    }
  }
  return t;
}

// Tensor `name` of the file, after checking that its shape is `shape` (row-major).
const gguf::TensorInfo& checked_tensor(const gguf::GgufFile& file, const std::string& name, const Shape& shape) {
  const gguf::TensorInfo& info = file.tensor(name);
  // ggml lists dimensions fastest first; we list them slowest first.
  Shape file_shape(info.dims.rbegin(), info.dims.rend());
  if (file_shape != shape)
    throw std::runtime_error(fmt::format("{}: tensor '{}' has shape {}, expected {}", file.path(),
                                         name, shape_string(file_shape), shape_string(shape)));
  return info;
}

// Dequantizes a (checked) tensor to fp32 straight into `dst` (f32 on the host, of its shape):
// the file's bytes are decoded once, into the memory the model keeps.
void read_into(const gguf::TensorInfo& info, Tensor& dst) {
  gguf::dequantize_into(info, {dst.host<float>(), static_cast<std::size_t>(dst.numel())});
}

// Reads one tensor, dequantizes it to fp32 and places it on the device in `dtype`.
Tensor read_tensor(const gguf::GgufFile& file, const std::string& name, const Shape& shape,
                   Device device, DType dtype) {
  const gguf::TensorInfo& info = checked_tensor(file, name, shape);  // before anything is allocated
  Tensor host;
  if (dtype == DType::f32) {
    host = Tensor(shape);
    read_into(info, host);
  } else {
    host = host_tensor(gguf::dequantize(info), shape, dtype);
  }
  return device.is_cpu() ? host : host.to(device);
}

std::unique_ptr<Linear> read_linear(const gguf::GgufFile& file, const std::string& name,
                                    int64_t out, int64_t in, const WeightLoadOptions& opt) {
  return std::make_unique<DenseLinear>(read_tensor(file, name, {out, in}, opt.device, opt.dtype));
}

}  // namespace

LlamaWeights load_weights(const gguf::GgufFile& file, const LlamaConfig& c,
                          const WeightLoadOptions& opt) {
  const int64_t d = c.d_model, V = c.vocab_size, F = c.d_ff, qw = c.q_width(), kvw = c.kv_width();
  // Norms, embeddings and anything the CPU reads row by row stay f32.
  const Device dev = opt.device;
  LlamaWeights w;
  const Tensor embedding = read_tensor(file, "token_embd.weight", {V, d}, dev, DType::f32);
  w.token_embedding = std::make_shared<DenseEmbedding>(embedding);
  w.output_norm = read_tensor(file, "output_norm.weight", {d}, dev, DType::f32);
  if (c.tied_embeddings && opt.dtype == DType::f32)
    w.output = std::make_unique<DenseLinear>(embedding);  // same storage, no copy
  else
    w.output = read_linear(file, c.tied_embeddings ? "token_embd.weight" : "output.weight", V, d, opt);
  // On the CPU in fp32, a layer's seven matrices are views on one buffer (14 MB for the default
  // model) rather than seven buffers of 0.4–3.5 MB: tensor/memory.cpp puts the whole 2 MiB pages
  // inside a large buffer on huge pages, which then cover ~89% of a layer's weights instead of
  // ~40%. Nothing else changes: each matrix is still a [out, in] tensor of its own.
  const bool one_buffer_per_layer = dev.is_cpu() && opt.dtype == DType::f32;
  struct Matrix {
    const char* name;
    int64_t out, in;
    std::unique_ptr<Linear> LayerWeights::*slot;
  };
  const Matrix matrices[] = {{"attn_q.weight", qw, d, &LayerWeights::wq},     {"attn_k.weight", kvw, d, &LayerWeights::wk},
                             {"attn_v.weight", kvw, d, &LayerWeights::wv},    {"attn_output.weight", d, qw, &LayerWeights::wo},
                             {"ffn_gate.weight", F, d, &LayerWeights::w_gate}, {"ffn_up.weight", F, d, &LayerWeights::w_up},
                             {"ffn_down.weight", d, F, &LayerWeights::w_down}};
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LayerWeights L;
    L.attn_norm = read_tensor(file, p + "attn_norm.weight", {d}, dev, DType::f32);
    L.ffn_norm = read_tensor(file, p + "ffn_norm.weight", {d}, dev, DType::f32);
    if (!one_buffer_per_layer) {
      for (const Matrix& m : matrices) L.*m.slot = read_linear(file, p + m.name, m.out, m.in, opt);
    } else {
      std::vector<const gguf::TensorInfo*> infos;  // every shape checked before anything is allocated
      int64_t floats = 0;
      for (const Matrix& m : matrices) {
        infos.push_back(&checked_tensor(file, p + m.name, {m.out, m.in}));
        floats += m.out * m.in;
      }
      const Tensor buffer({floats});
      int64_t used = 0;  // floats of the buffer handed out so far
      for (std::size_t i = 0; i < infos.size(); ++i) {
        const Matrix& m = matrices[i];
        Tensor weight = buffer.rows(used, m.out * m.in).reshape({m.out, m.in});
        used += m.out * m.in;
        read_into(*infos[i], weight);
        L.*m.slot = std::make_unique<DenseLinear>(weight);
      }
    }
    w.layers.push_back(std::move(L));
  }
  return w;
}

std::size_t LlamaWeights::bytes_per_token() const {
  std::size_t bytes = output->weight_bytes() + output_norm.nbytes() + token_embedding->row_bytes();
  for (const LayerWeights& L : layers) {
    bytes += L.attn_norm.nbytes() + L.ffn_norm.nbytes();
    for (const Linear* w : L.linears()) bytes += w->weight_bytes();
  }
  return bytes;
}

std::size_t LlamaWeights::bytes_held() const {
  const bool tied = token_embedding->shares_storage_with(*output);
  return bytes_per_token() - token_embedding->row_bytes() + (tied ? 0 : token_embedding->bytes());
}

}  // namespace infer
