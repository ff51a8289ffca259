// The model's tokenizer: byte-level BPE (GPT-2 style) read from the GGUF vocabulary and merges.
//
// encode(text):
//   1. split out special tokens (<|im_start|>, <|im_end|>, <|endoftext|>, ...) verbatim;
//   2. pre-tokenize each remaining span with the model's regular expression (for `smollm`:
//      every digit is its own piece, then the GPT-2 pattern), via PCRE2;
//   3. map each piece's bytes to the printable "byte-level" alphabet and apply BPE merges in
//      rank order until no merge applies; look the resulting symbols up in the vocabulary.
// A byte the vocabulary has no token for is left out, as llama.cpp leaves it out (SmolLM2 has no
// token for 21 bytes, such as the control character 0x14), so decode(encode(text)) is the text
// without those bytes.
// decode(ids) reverses the byte mapping. A token can end in the middle of a UTF-8 character,
// so streaming output goes through StreamDecoder, which holds back incomplete characters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace infer {
namespace gguf { class GgufFile; }

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model,pre,tokens,token_type,merges,bos/eos ids}. Throws
  // std::runtime_error for an unsupported tokenizer model or pre-tokenizer.
  static Tokenizer from_gguf(const gguf::GgufFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // parse_special: recognise special-token text such as "<|im_start|>" as one token.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string token_bytes(int32_t id) const;   // the raw bytes one token stands for
  std::string_view token_text(int32_t id) const;  // the vocabulary entry as stored

  int32_t vocab_size() const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  bool is_special(int32_t id) const;       // a control token (token_type 3)
  bool ends_generation(int32_t id) const;  // eos, <|im_end|> or <|endoftext|>

  // The ChatML template of SmolLM2-Instruct: a default system message is inserted when the
  // first message is not a system message, and "<|im_start|>assistant\n" is appended when
  // add_generation_prompt is true.
  std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt = true) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of token ids into UTF-8 text that is always whole characters.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t id);  // the text completed by this token (may be empty)
  std::string flush();           // whatever is still held back (invalid bytes become U+FFFD)

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace infer
