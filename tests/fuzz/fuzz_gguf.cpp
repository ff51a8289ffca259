// Fuzz harness: the GGUF reader on arbitrary bytes.
//
// GgufFile::parse is what GgufFile::open runs on the mapped file, so this is the code that reads
// every model. A file it accepts is then used the way the library uses a model file: every
// metadata getter on every key, every tensor dequantized, the model's shape and its tokenizer
// read from the metadata. Any of them may refuse the file (an exception), none may crash, read
// outside the buffer, leak, or do undefined arithmetic.
//
// The seeds in corpus/gguf/ are small valid files (make_seeds.py) and truncations of them.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "model/config.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

using infer::gguf::GgufFile;

// Every typed getter on one key: each either returns or throws GgufError, whatever the type.
void read_key(const GgufFile& f, const std::string& key) {
  const auto attempt = [](auto&& get) {
    try {
      get();
    } catch (const infer::gguf::GgufError&) {
    }
  };
  attempt([&] { (void)f.get_uint(key); });
  attempt([&] { (void)f.get_int(key); });
  attempt([&] { (void)f.get_float(key); });
  attempt([&] { (void)f.get_bool(key); });
  attempt([&] { (void)f.get_string(key); });
  attempt([&] { (void)f.get_string_array(key); });
  attempt([&] { (void)f.get_int_array(key); });
  attempt([&] { (void)f.get_float_array(key); });
}

// Uses an accepted file as the library would. Refusals (GgufError, std::runtime_error) are fine;
// anything else escapes and is a finding: std::logic_error, std::out_of_range or std::bad_alloc
// would mean the reader let something through that the code after it cannot handle.
void exercise(const GgufFile& f) {
  for (const auto& [key, value] : f.metadata()) read_key(f, key);
  read_key(f, "no such key");
  for (const auto& tensor : f.tensors()) {
    (void)f.tensor(tensor.name);
    try {
      (void)infer::gguf::dequantize(tensor);
    } catch (const infer::gguf::GgufError&) {  // a type without a dequantizer
    }
  }
  try {
    (void)infer::LlamaConfig::from_gguf(f);
  } catch (const std::runtime_error&) {
  }
  try {
    const infer::Tokenizer tokenizer = infer::Tokenizer::from_gguf(f);
    const std::vector<int32_t> ids = tokenizer.encode("Hello, world! 123 <|im_start|>user\n");
    (void)tokenizer.decode(ids);
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const GgufFile file = GgufFile::parse({data, size}, "fuzz.gguf");
    exercise(file);
  } catch (const infer::gguf::GgufError&) {
    // A malformed file, refused with one line: what every malformed file should get.
  }
  return 0;
}
