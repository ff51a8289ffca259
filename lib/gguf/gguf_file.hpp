// A memory-mapped reader for GGUF files (versions 2 and 3), the format llama.cpp uses to ship a
// model's metadata, tokenizer and tensors in one file.
//
// Layout of a GGUF file (all little-endian):
//   magic "GGUF" | version u32 | tensor_count u64 | kv_count u64
//   kv_count × (key: string, value_type: u32, value)          metadata
//   tensor_count × (name: string, n_dims: u32, dims: u64[n_dims], type: u32, offset: u64)
//   padding to `general.alignment` (default 32)
//   tensor data; each tensor starts at data_start + offset
// A string is a u64 length followed by that many bytes (no terminator).
//
// Nothing in the file is trusted: every count, length, dimension and offset is checked against
// the file's size before it is used, and a malformed file raises GgufError with one clear line.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gguf/ggml_types.hpp"

namespace infer::gguf {

struct GgufError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The metadata value types of the GGUF specification.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

// One metadata value. Arrays hold their element type and the elements (arrays of arrays allowed).
struct Value;
struct Array {
  ValueType element_type;
  std::vector<Value> items;
};
struct Value {
  ValueType type;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the fastest-varying (the row length)
  GgmlType type;
  uint64_t offset = 0;         // from the start of the data section
  uint64_t n_elements = 0;     // product of dims, checked for overflow
  uint64_t n_bytes = 0;        // storage size in the file, checked to lie inside the file
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives
};

class GgufFile {
 public:
  // Maps and parses the file. Throws GgufError naming the file and what is wrong.
  static GgufFile open(const std::string& path);

  // Parses a GGUF image that is already in memory; `name` stands for the file in messages. The
  // result points into `bytes` (tensor data, and nothing is copied), so they must outlive it.
  // open() is a thin wrapper: it maps the file and calls this, so every check is made here, and
  // a fuzzer that feeds parse() arbitrary bytes tests exactly the code that reads real files.
  static GgufFile parse(std::span<const uint8_t> bytes, const std::string& name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  uint64_t alignment() const { return alignment_; }

  // Metadata. The typed getters throw GgufError when the key is missing or of another type;
  // get_uint/get_int accept any integer type whose value fits, get_float any numeric type.
  const std::map<std::string, Value>& metadata() const { return metadata_; }
  bool has(const std::string& key) const;
  const Value& get(const std::string& key) const;
  uint64_t get_uint(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;

  // Tensors, in file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent
  const TensorInfo& tensor(std::string_view name) const;       // throws if absent

 private:
  GgufFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  bool owns_mapping_ = false;  // open(): base_ is our mmap, unmapped with us; parse(): borrowed
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, Value> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Dequantizes a whole tensor to fp32 (row-major, dims[0] fastest).
std::vector<float> dequantize(const TensorInfo& tensor);
// The same, straight into `out` (std::invalid_argument unless it holds n_elements values).
void dequantize_into(const TensorInfo& tensor, std::span<float> out);

}  // namespace infer::gguf
