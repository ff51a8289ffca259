// The GGUF reader: map the file (open), then walk its bytes with a bounds-checked cursor (parse).
// The layout is described in gguf_file.hpp. Nothing read from the file is trusted: a count is
// compared with the bytes left before anything is built from it, every length and offset is
// checked against the file's size, and every failure is one GgufError line "PATH: what is wrong".
// parse() is what tests/fuzz/fuzz_gguf.cpp feeds with arbitrary bytes.
#include "gguf/gguf_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

namespace infer::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF files are little-endian; this reader assumes a little-endian machine");

namespace {

constexpr uint64_t kMaxDims = 4;                     // GGML_MAX_DIMS
constexpr uint64_t kMaxElements = uint64_t{1} << 48;  // far beyond any real tensor
constexpr int kMaxArrayDepth = 8;                     // arrays of arrays of ...
constexpr uint64_t kDefaultAlignment = 32;
// Every metadata value (array elements included) becomes a Value of some 50 bytes, so a file of
// tiny array elements would take ~50 times its size in memory; cap the count far above any real
// model's (a 256k-token vocabulary with scores, types and merges is about 1.3 million values).
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 24;

// The smallest encoding of one metadata entry (key length 8 + type 4 + a 1-byte value) and of one
// tensor info (name length 8 + n_dims 4 + one dim 8 + type 4 + offset 8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "unknown";
}

bool is_known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::f64); }

// Bytes that one element of this type takes at least (used to bound array counts).
uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: return 8;     // the length
    case ValueType::array: return 4 + 8;  // element type and count
  }
  return 1;
}

std::string dims_to_string(const std::vector<uint64_t>& dims) {
  std::ostringstream s;
  s << '{';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << '}';
  return s.str();
}

// Reads the file front to back. Every read checks that the bytes exist first.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, uint64_t size)
      : path_(path), base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t values_read = 0;  // metadata values so far, array elements included
  uint64_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw GgufError(path_ + ": " + what); }

  void need(uint64_t n, const char* what) const {
    if (n > remaining()) {
      fail("truncated file: " + std::string(what) + " at offset " + std::to_string(pos_) +
           " needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
           " remain (file size " + std::to_string(size_) + ")");
    }
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    const uint64_t start = pos_;
    const auto len = read<uint64_t>(what);
    if (len > remaining()) {
      fail(std::string(what) + " at offset " + std::to_string(start) + " has length " +
           std::to_string(len) + ", past the end of the file (" + std::to_string(remaining()) +
           " bytes remain)");
    }
    std::string s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

Value read_value(Cursor& c, ValueType type, const std::string& key, int depth) {
  if (++c.values_read > kMaxMetadataValues) {
    c.fail("metadata key '" + key + "': the metadata holds more than " +
           std::to_string(kMaxMetadataValues) + " values");
  }
  Value v{type, uint64_t{0}};
  switch (type) {
    case ValueType::u8: v.data = uint64_t{c.read<uint8_t>("u8 value")}; break;
    case ValueType::u16: v.data = uint64_t{c.read<uint16_t>("u16 value")}; break;
    case ValueType::u32: v.data = uint64_t{c.read<uint32_t>("u32 value")}; break;
    case ValueType::u64: v.data = c.read<uint64_t>("u64 value"); break;
    case ValueType::i8: v.data = int64_t{c.read<int8_t>("i8 value")}; break;
    case ValueType::i16: v.data = int64_t{c.read<int16_t>("i16 value")}; break;
    case ValueType::i32: v.data = int64_t{c.read<int32_t>("i32 value")}; break;
    case ValueType::i64: v.data = c.read<int64_t>("i64 value"); break;
    case ValueType::f32: v.data = double{c.read<float>("f32 value")}; break;
    case ValueType::f64: v.data = c.read<double>("f64 value"); break;
    case ValueType::boolean: v.data = c.read<uint8_t>("bool value") != 0; break;
    case ValueType::string: v.data = c.read_string("string value"); break;
    case ValueType::array: {
      if (depth >= kMaxArrayDepth) {
        c.fail("metadata key '" + key + "': arrays nested more than " +
               std::to_string(kMaxArrayDepth) + " deep");
      }
      const auto elem = c.read<uint32_t>("array element type");
      if (!is_known_value_type(elem)) {
        c.fail("metadata key '" + key + "': array has unknown element type " +
               std::to_string(elem));
      }
      const auto elem_type = static_cast<ValueType>(elem);
      const auto count = c.read<uint64_t>("array length");
      if (count > c.remaining() / min_value_bytes(elem_type)) {
        c.fail("metadata key '" + key + "': array of " + std::to_string(count) + " " +
               value_type_name(elem_type) + " elements cannot fit in the " +
               std::to_string(c.remaining()) + " bytes left in the file");
      }
      Array a{elem_type, {}};
      // No reserve(): the count is only bounded, not trusted; the vector grows as items parse.
      for (uint64_t i = 0; i < count; ++i) a.items.push_back(read_value(c, elem_type, key, depth + 1));
      v.data = std::move(a);
      break;
    }
  }
  return v;
}

std::string describe(const Value& v) { return value_type_name(v.type); }

// The value of any integer (or any numeric) type, when it fits the requested C++ type.
bool as_uint(const Value& v, uint64_t& out) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    out = *u;
    return true;
  }
  if (const auto* i = std::get_if<int64_t>(&v.data); i && *i >= 0) {
    out = static_cast<uint64_t>(*i);
    return true;
  }
  return false;
}

bool as_int(const Value& v, int64_t& out) {
  if (const auto* i = std::get_if<int64_t>(&v.data)) {
    out = *i;
    return true;
  }
  if (const auto* u = std::get_if<uint64_t>(&v.data);
      u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    out = static_cast<int64_t>(*u);
    return true;
  }
  return false;
}

bool as_float(const Value& v, double& out) {
  if (const auto* d = std::get_if<double>(&v.data)) {
    out = *d;
    return true;
  }
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    out = static_cast<double>(*u);
    return true;
  }
  if (const auto* i = std::get_if<int64_t>(&v.data)) {
    out = static_cast<double>(*i);
    return true;
  }
  return false;
}

// A mapping that unmaps itself unless released (so a parse error leaks nothing).
struct Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

}  // namespace

GgufFile GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw GgufError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(path + ": not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return parse({}, path);  // mmap cannot map nothing; parse() says what is wrong with it
  }
  Mapping map;
  map.size = static_cast<size_t>(st.st_size);
  map.addr = mmap(nullptr, map.size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map.addr == MAP_FAILED) throw GgufError(path + ": cannot mmap: " + std::strerror(map_err));

  GgufFile f = parse({static_cast<const uint8_t*>(map.addr), map.size}, path);
  f.owns_mapping_ = true;
  map.addr = MAP_FAILED;  // the GgufFile owns the mapping now
  return f;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() < 4) {
    throw GgufError(name + ": truncated header: the file is " + std::to_string(bytes.size()) +
                    " bytes, too short to be a GGUF file");
  }
  GgufFile f;
  f.path_ = name;
  f.size_ = bytes.size();
  const uint8_t* base = bytes.data();
  Cursor c(f.path_, base, f.size_);

  // Header.
  const auto magic = c.read<uint32_t>("header (magic)");
  if (std::memcmp(&magic, "GGUF", 4) != 0) {
    std::ostringstream s;
    s << "bad magic: not a GGUF file (the first 4 bytes are";
    for (int i = 0; i < 4; ++i) s << ' ' << std::hex << static_cast<int>(base[i]);
    s << ", expected 47 47 55 46 \"GGUF\")";
    c.fail(s.str());
  }
  f.version_ = c.read<uint32_t>("header (version)");
  if (f.version_ != 2 && f.version_ != 3) {
    std::string hint;
    if (f.version_ == 1) hint = " (version 1 is the old format with 32-bit counts; re-convert the model)";
    else if ((f.version_ & 0xFFFFu) == 0 && f.version_ != 0) hint = " (a big-endian GGUF file?)";
    c.fail("unsupported GGUF version " + std::to_string(f.version_) +
           ", only versions 2 and 3 are read" + hint);
  }
  const auto tensor_count = c.read<uint64_t>("header (tensor count)");
  const auto kv_count = c.read<uint64_t>("header (metadata count)");
  if (kv_count > c.remaining() / kMinKvBytes) {
    c.fail("metadata count " + std::to_string(kv_count) + " is too large for a file of " +
           std::to_string(f.size_) + " bytes");
  }
  if (tensor_count > c.remaining() / kMinTensorInfoBytes) {
    c.fail("tensor count " + std::to_string(tensor_count) + " is too large for a file of " +
           std::to_string(f.size_) + " bytes");
  }

  // Metadata.
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.read_string("metadata key");
    const uint64_t type_at = c.pos();
    const auto type = c.read<uint32_t>("metadata value type");
    if (!is_known_value_type(type)) {
      c.fail("metadata key '" + key + "' has unknown value type " + std::to_string(type) +
             " (at offset " + std::to_string(type_at) + ")");
    }
    Value v = read_value(c, static_cast<ValueType>(type), key, 0);
    if (!f.metadata_.emplace(key, std::move(v)).second) c.fail("duplicate metadata key '" + key + "'");
  }

  if (f.has("general.alignment")) {
    uint64_t a = 0;
    const Value& v = f.get("general.alignment");
    if (!as_uint(v, a)) {
      c.fail("general.alignment must be an unsigned integer, found " + describe(v));
    }
    if (a == 0 || !std::has_single_bit(a)) {
      c.fail("general.alignment must be a nonzero power of two, found " + std::to_string(a));
    }
    f.alignment_ = a;
  } else {
    f.alignment_ = kDefaultAlignment;
  }

  // Tensor infos.
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TensorInfo t;
    t.name = c.read_string("tensor name");
    const std::string who = "tensor '" + t.name + "'";
    const auto n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) {
      c.fail(who + " has " + std::to_string(n_dims) + " dimensions (must be 1 to " +
             std::to_string(kMaxDims) + ")");
    }
    uint64_t n = 1;
    bool too_many = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = c.read<uint64_t>("tensor dimension");
      t.dims.push_back(dim);
      if (dim == 0) c.fail(who + " has a zero dimension (dimension " + std::to_string(d) + ")");
      if (n > kMaxElements / dim) too_many = true;  // also guards the product against overflow
      else n *= dim;
    }
    if (too_many || n > kMaxElements) {
      c.fail(who + " with dims " + dims_to_string(t.dims) +
             " has too many elements (the limit is 2^48)");
    }
    t.n_elements = n;
    const auto type_id = c.read<uint32_t>("tensor type");
    const auto tr = type_traits(type_id);
    if (!tr) c.fail(who + " has unknown type id " + std::to_string(type_id));
    t.type = static_cast<GgmlType>(type_id);
    if (t.dims[0] % tr->block_size != 0) {
      c.fail(who + " has row length " + std::to_string(t.dims[0]) + ", not a multiple of the " +
             std::string(tr->name) + " block size " + std::to_string(tr->block_size));
    }
    t.n_bytes = n / tr->block_size * tr->block_bytes;  // ≤ 2^48 · 292: no overflow
    t.offset = c.read<uint64_t>("tensor data offset");
    if (t.offset % f.alignment_ != 0) {
      c.fail(who + " data offset " + std::to_string(t.offset) +
             " is not a multiple of the alignment " + std::to_string(f.alignment_));
    }
    if (!names.insert(t.name).second) c.fail("duplicate tensor name '" + t.name + "'");
    f.tensors_.push_back(std::move(t));
  }

  // Data section: starts at the next multiple of the alignment after the tensor infos.
  const uint64_t end_of_infos = c.pos();
  const uint64_t pad = (f.alignment_ - end_of_infos % f.alignment_) % f.alignment_;
  const uint64_t data_start = end_of_infos + pad;  // end_of_infos ≤ size, pad < 2^63: no overflow
  for (auto& t : f.tensors_) {
    const uint64_t avail = data_start <= f.size_ ? f.size_ - data_start : 0;
    if (data_start > f.size_ || t.offset > avail || t.n_bytes > avail - t.offset) {
      c.fail("tensor '" + t.name + "' data [offset " + std::to_string(t.offset) + ", " +
             std::to_string(t.n_bytes) + " bytes] lies outside the file (size " +
             std::to_string(f.size_) + ", data section starts at " + std::to_string(data_start) +
             ")");
    }
    t.data = base + data_start + t.offset;
  }

  f.base_ = base;
  return f;
}

GgufFile::GgufFile(GgufFile&& o) noexcept
    : path_(std::move(o.path_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      owns_mapping_(std::exchange(o.owns_mapping_, false)),
      version_(o.version_),
      alignment_(o.alignment_),
      metadata_(std::move(o.metadata_)),
      tensors_(std::move(o.tensors_)) {}

GgufFile& GgufFile::operator=(GgufFile&& o) noexcept {
  if (this != &o) {
    if (base_ && owns_mapping_) munmap(const_cast<uint8_t*>(base_), size_);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    owns_mapping_ = std::exchange(o.owns_mapping_, false);
    version_ = o.version_;
    alignment_ = o.alignment_;
    metadata_ = std::move(o.metadata_);
    tensors_ = std::move(o.tensors_);
  }
  return *this;
}

GgufFile::~GgufFile() {
  if (base_ && owns_mapping_) munmap(const_cast<uint8_t*>(base_), size_);
}

bool GgufFile::has(const std::string& key) const { return metadata_.count(key) != 0; }

const Value& GgufFile::get(const std::string& key) const {
  const auto it = metadata_.find(key);
  if (it == metadata_.end()) throw GgufError(path_ + ": metadata key '" + key + "' is missing");
  return it->second;
}

namespace {
[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const Value& v,
                             const char* expected) {
  throw GgufError(path + ": metadata key '" + key + "' is " + describe(v) + ", expected " +
                  expected);
}
}  // namespace

uint64_t GgufFile::get_uint(const std::string& key) const {
  const Value& v = get(key);
  uint64_t out = 0;
  if (!as_uint(v, out)) wrong_type(path_, key, v, "a non-negative integer");
  return out;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const Value& v = get(key);
  int64_t out = 0;
  if (!as_int(v, out)) wrong_type(path_, key, v, "an integer that fits in i64");
  return out;
}

double GgufFile::get_float(const std::string& key) const {
  const Value& v = get(key);
  double out = 0;
  if (!as_float(v, out)) wrong_type(path_, key, v, "a number");
  return out;
}

bool GgufFile::get_bool(const std::string& key) const {
  const Value& v = get(key);
  if (const auto* b = std::get_if<bool>(&v.data)) return *b;
  wrong_type(path_, key, v, "bool");
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const Value& v = get(key);
  if (const auto* s = std::get_if<std::string>(&v.data)) return *s;
  wrong_type(path_, key, v, "string");
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const Value& v = get(key);
  const auto* a = std::get_if<Array>(&v.data);
  if (!a || a->element_type != ValueType::string) wrong_type(path_, key, v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) out.push_back(std::get<std::string>(item.data));
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const Value& v = get(key);
  const auto* a = std::get_if<Array>(&v.data);
  if (!a) wrong_type(path_, key, v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) {
    int64_t x = 0;
    if (!as_int(item, x)) {
      throw GgufError(path_ + ": metadata key '" + key + "' is an array of " +
                      value_type_name(a->element_type) +
                      ", expected integers that fit in i64");
    }
    out.push_back(x);
  }
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const Value& v = get(key);
  const auto* a = std::get_if<Array>(&v.data);
  if (!a) wrong_type(path_, key, v, "an array of numbers");
  std::vector<double> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) {
    double x = 0;
    if (!as_float(item, x)) {
      throw GgufError(path_ + ": metadata key '" + key + "' is an array of " +
                      value_type_name(a->element_type) + ", expected numbers");
    }
    out.push_back(x);
  }
  return out;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw GgufError(path_ + ": no tensor named '" + std::string(name) + "'");
  return *t;
}

namespace {
// Throws unless this library can turn the tensor's bytes into floats.
void check_dequantizable(const TensorInfo& tensor) {
  const auto tr = type_traits(static_cast<uint32_t>(tensor.type));
  if (!tr || !tr->can_dequantize) {
    throw GgufError("tensor '" + tensor.name + "' has type " +
                    (tr ? std::string(tr->name) : std::to_string(static_cast<uint32_t>(tensor.type))) +
                    ", which this library cannot dequantize");
  }
  if (tensor.data == nullptr) throw GgufError("tensor '" + tensor.name + "' has no data");
}
}  // namespace

void dequantize_into(const TensorInfo& tensor, std::span<float> out) {
  check_dequantizable(tensor);
  if (out.size() != tensor.n_elements)
    throw std::invalid_argument("dequantize_into: " + std::to_string(out.size()) + " values for tensor '" + tensor.name +
                                "' of " + std::to_string(tensor.n_elements));
  dequantize_row(tensor.type, tensor.data, out.data(), static_cast<int64_t>(tensor.n_elements));
}

std::vector<float> dequantize(const TensorInfo& tensor) {
  check_dequantizable(tensor);  // before allocating
  std::vector<float> out(tensor.n_elements);
  dequantize_into(tensor, out);
  return out;
}

}  // namespace infer::gguf
