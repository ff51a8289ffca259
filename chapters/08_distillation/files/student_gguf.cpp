#include "student_gguf.hpp"

#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace infer::train {
namespace {

using gguf::Value;
using gguf::ValueType;

Value u32(uint64_t v) { return Value{ValueType::u32, v}; }
Value f32(double v) { return Value{ValueType::f32, v}; }

// Appends little-endian bytes (the machine is little-endian: gguf_file.cpp asserts it).
class ByteWriter {
 public:
  std::vector<uint8_t> bytes;
  template <class V>
  void put(V v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(V));
  }
  void string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void value(const Value& v) {  // the payload only; the caller writes the type
    switch (v.type) {
      case ValueType::u8: put(static_cast<uint8_t>(std::get<uint64_t>(v.data))); break;
      case ValueType::u16: put(static_cast<uint16_t>(std::get<uint64_t>(v.data))); break;
      case ValueType::u32: put(static_cast<uint32_t>(std::get<uint64_t>(v.data))); break;
      case ValueType::u64: put(std::get<uint64_t>(v.data)); break;
      case ValueType::i8: put(static_cast<int8_t>(std::get<int64_t>(v.data))); break;
      case ValueType::i16: put(static_cast<int16_t>(std::get<int64_t>(v.data))); break;
      case ValueType::i32: put(static_cast<int32_t>(std::get<int64_t>(v.data))); break;
      case ValueType::i64: put(std::get<int64_t>(v.data)); break;
      case ValueType::f32: put(static_cast<float>(std::get<double>(v.data))); break;
      case ValueType::f64: put(std::get<double>(v.data)); break;
      case ValueType::boolean: put(static_cast<uint8_t>(std::get<bool>(v.data) ? 1 : 0)); break;
      case ValueType::string: string(std::get<std::string>(v.data)); break;
      case ValueType::array: {
        const gguf::Array& a = std::get<gguf::Array>(v.data);
        put(static_cast<uint32_t>(a.element_type));
        put<uint64_t>(a.items.size());
        for (const Value& item : a.items) value(item);
        break;
      }
    }
  }
  void pad_to(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
  }
};

struct OutTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order, fastest first
  const float* data;
  uint64_t count() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
  }
};

}  // namespace

void write_student_gguf(const std::string& path, const Student<float>& s,
                        const std::map<std::string, Value>& teacher_metadata) {
  const LlamaConfig& c = s.config();
  const uint64_t d = static_cast<uint64_t>(c.d_model), V = static_cast<uint64_t>(c.vocab_size),
                 qw = static_cast<uint64_t>(c.q_width()), kvw = static_cast<uint64_t>(c.kv_width()),
                 F = static_cast<uint64_t>(c.d_ff);

  std::map<std::string, Value> meta = teacher_metadata;
  meta["general.architecture"] = Value{ValueType::string, std::string("llama")};
  meta["general.file_type"] = u32(0);  // all F32
  meta["llama.block_count"] = u32(static_cast<uint64_t>(c.n_layers));
  meta["llama.embedding_length"] = u32(d);
  meta["llama.feed_forward_length"] = u32(F);
  meta["llama.attention.head_count"] = u32(static_cast<uint64_t>(c.n_heads));
  meta["llama.attention.head_count_kv"] = u32(static_cast<uint64_t>(c.n_kv_heads));
  meta["llama.context_length"] = u32(static_cast<uint64_t>(c.context_length));
  meta["llama.rope.dimension_count"] = u32(static_cast<uint64_t>(c.head_dim));
  meta["llama.attention.key_length"] = u32(static_cast<uint64_t>(c.head_dim));  // a width-pruned student's
  meta["llama.attention.value_length"] = u32(static_cast<uint64_t>(c.head_dim));  // heads are not d / H wide
  meta["llama.rope.freq_base"] = f32(c.rope_theta);
  meta["llama.attention.layer_norm_rms_epsilon"] = f32(c.norm_eps);
  uint64_t alignment = 32;
  if (auto it = meta.find("general.alignment"); it != meta.end()) alignment = std::get<uint64_t>(it->second.data);

  // the-change: begin student_tensors
  std::vector<OutTensor> tensors = {{"token_embd.weight", {d, V}, s.embedding().data()}};
  const float* P = s.params.data();
  tensors.push_back({"output_norm.weight", {d}, s.output_norm(P)});
  if (!c.tied_embeddings) tensors.push_back({"output.weight", {d, V}, s.output_matrix()});
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockTensors<const float> b = s.block(l, P);
    const std::string p = fmt::format("blk.{}.", l);
    tensors.push_back({p + "attn_norm.weight", {d}, b.attn_norm});
    tensors.push_back({p + "attn_q.weight", {d, qw}, b.wq});
    tensors.push_back({p + "attn_k.weight", {d, kvw}, b.wk});
    tensors.push_back({p + "attn_v.weight", {d, kvw}, b.wv});
    tensors.push_back({p + "attn_output.weight", {qw, d}, b.wo});
    tensors.push_back({p + "ffn_norm.weight", {d}, b.ffn_norm});
    tensors.push_back({p + "ffn_gate.weight", {d, F}, b.w_gate});
    tensors.push_back({p + "ffn_up.weight", {d, F}, b.w_up});
    tensors.push_back({p + "ffn_down.weight", {F, d}, b.w_down});
  }
  // the-change: end student_tensors

  // Header, metadata and tensor infos; then the data section, each tensor aligned.
  ByteWriter w;
  w.bytes.insert(w.bytes.end(), {'G', 'G', 'U', 'F'});
  w.put<uint32_t>(3);
  w.put<uint64_t>(tensors.size());
  w.put<uint64_t>(meta.size());
  for (const auto& [key, value] : meta) {
    w.string(key);
    w.put(static_cast<uint32_t>(value.type));
    w.value(value);
  }
  uint64_t offset = 0;
  for (const OutTensor& t : tensors) {
    w.string(t.name);
    w.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t dim : t.dims) w.put(dim);
    w.put<uint32_t>(0);  // GGML_TYPE_F32
    w.put(offset);
    offset += (t.count() * 4 + alignment - 1) / alignment * alignment;
  }
  w.pad_to(alignment);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(w.bytes.data()), static_cast<std::streamsize>(w.bytes.size()));
  const std::vector<char> zeros(alignment, 0);
  for (const OutTensor& t : tensors) {
    const uint64_t bytes = t.count() * 4;
    out.write(reinterpret_cast<const char*>(t.data), static_cast<std::streamsize>(bytes));
    out.write(zeros.data(), static_cast<std::streamsize>((alignment - bytes % alignment) % alignment));
  }
  if (!out) throw std::runtime_error(path + ": cannot write the student GGUF file");
}

}  // namespace infer::train
