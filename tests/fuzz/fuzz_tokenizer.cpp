// Fuzz harness: the tokenizer of the real model on arbitrary input.
//
// The vocabulary, merges and special tokens are read once from the default model
// (data/models/SmolLM2-135M-Instruct.Q4_1.gguf, or the file named by INFER_FUZZ_MODEL); without
// it the harness stops at once with a message, rather than fuzz nothing.
//
// The first byte of an input picks what to test, the rest is the test's data:
//   encode        bytes (any, not only UTF-8) -> ids, with and without special-token parsing
//   decode        ids (in and out of the vocabulary) -> text, at once and through StreamDecoder
//   chat          messages (role and content from the bytes) -> the chat template -> ids
// Besides not crashing, each checks a property the library promises:
//   decode(encode(text)) is text made valid UTF-8 the way llama.cpp reads it, less the bytes the
//   vocabulary has no token for (nothing else is lost or changed);
//   StreamDecoder's pieces, joined, are the whole decode with broken characters as U+FFFD;
//   token ids outside the vocabulary are refused with std::out_of_range, never read.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace {

using infer::Tokenizer;

// A failed property: say which, with the input's size, and abort so that libFuzzer saves the input.
#define FUZZ_CHECK(condition)                                                              \
  do {                                                                                     \
    if (!(condition)) {                                                                    \
      std::fprintf(stderr, "fuzz_tokenizer: property failed: %s (%s:%d)\n", #condition,    \
                   __FILE__, __LINE__);                                                    \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

const Tokenizer* g_tokenizer = nullptr;
std::array<bool, 256> g_byte_has_token{};  // a token stands for this byte alone

std::string without_tokenless_bytes(std::string text) {
  std::erase_if(text, [](char c) { return !g_byte_has_token[static_cast<unsigned char>(c)]; });
  return text;
}

void fuzz_encode(const Tokenizer& tok, const std::string& text, bool parse_special) {
  const std::vector<int32_t> ids = tok.encode(text, parse_special);
  for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
  // Special tokens decode to their own text, and everything else to its bytes, so the round trip
  // gives back the input as the encoder read it: broken UTF-8 replaced the llama.cpp way, and the
  // bytes without a token left out (as llama.cpp leaves them out).
  FUZZ_CHECK(tok.decode(ids) == without_tokenless_bytes(infer::utf8::make_valid_as_llama_cpp(text)));
}

void fuzz_decode(const Tokenizer& tok, FuzzedDataProvider& in) {
  const int32_t n = tok.vocab_size();
  std::vector<int32_t> ids;
  bool all_valid = true;
  while (in.remaining_bytes() > 0 && ids.size() < 512) {
    // Mostly ids in the vocabulary; now and then one just outside it, or far outside.
    const int32_t id = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, n - 1)
                                        : in.ConsumeIntegralInRange<int32_t>(-2, n + 1);
    all_valid = all_valid && id >= 0 && id < n;
    ids.push_back(id);
  }

  std::string whole;
  try {
    whole = tok.decode(ids);
    FUZZ_CHECK(all_valid);  // decode must refuse an id outside the vocabulary
  } catch (const std::out_of_range&) {
    FUZZ_CHECK(!all_valid);
    return;
  }

  // Streaming: the pieces are whole characters and add up to the whole text, with every broken
  // sequence replaced by U+FFFD just as replace_invalid() does at once.
  infer::StreamDecoder stream(tok);
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string piece = stream.push(id);
    FUZZ_CHECK(infer::utf8::replace_invalid(piece) == piece);  // valid UTF-8 on its own
    streamed += piece;
  }
  streamed += stream.flush();
  FUZZ_CHECK(streamed == infer::utf8::replace_invalid(whole));

  for (const int32_t id : ids) {
    FUZZ_CHECK(tok.token_bytes(id) == tok.decode({id}));
    (void)tok.token_text(id);
    (void)tok.is_special(id);
    (void)tok.ends_generation(id);
  }
}

void fuzz_chat(const Tokenizer& tok, FuzzedDataProvider& in) {
  static const char* const kRoles[] = {"system", "user", "assistant"};
  std::vector<infer::ChatMessage> messages;
  while (in.remaining_bytes() > 0 && messages.size() < 8) {
    std::string role = in.ConsumeBool() ? in.ConsumeRandomLengthString(16)
                                        : kRoles[in.ConsumeIntegralInRange<int>(0, 2)];
    messages.push_back({std::move(role), in.ConsumeRandomLengthString(256)});
  }
  const bool add_generation_prompt = in.ConsumeBool();
  const std::string prompt = tok.apply_chat_template(messages, add_generation_prompt);
  fuzz_encode(tok, prompt, /*parse_special=*/true);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* from_env = std::getenv("INFER_FUZZ_MODEL");
  const std::string path = from_env != nullptr ? from_env : INFER_DEFAULT_MODEL;
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr,
                 "fuzz_tokenizer: model file %s not found: run data/fetch_model.sh, or name a GGUF "
                 "file with a gpt2/smollm tokenizer in INFER_FUZZ_MODEL\n",
                 path.c_str());
    std::exit(1);
  }
  try {
    // Both live until the process ends: the tokenizer copies what it needs from the file.
    static const infer::gguf::GgufFile file = infer::gguf::GgufFile::open(path);
    static const Tokenizer tokenizer = Tokenizer::from_gguf(file);
    g_tokenizer = &tokenizer;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      const std::string bytes = tokenizer.token_bytes(id);
      if (bytes.size() == 1) g_byte_has_token[static_cast<unsigned char>(bytes[0])] = true;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_tokenizer: cannot load the tokenizer of %s: %s\n", path.c_str(), e.what());
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Tokenizer& tok = *g_tokenizer;
  FuzzedDataProvider in(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: fuzz_encode(tok, std::string(reinterpret_cast<const char*>(data + 1), size - 1), true); break;
    case 1: fuzz_encode(tok, std::string(reinterpret_cast<const char*>(data + 1), size - 1), false); break;
    case 2: fuzz_decode(tok, in); break;
    case 3: fuzz_chat(tok, in); break;
  }
  return 0;
}
