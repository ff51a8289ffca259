// The tokenizer proper: reading the vocabulary from GGUF, cutting out special tokens, and gluing
// the pre-tokenizer (pretokenizer.cpp), the byte-level alphabet (byte_level.cpp) and the BPE
// merges (bpe.cpp) together. The behaviour follows llama.cpp's "gpt2" tokenizer model
// (llama-vocab.cpp), which is what the golden fixtures are made with.
#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "gguf/gguf_file.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace infer {

namespace {

// tokenizer.ggml.token_type values (llama.h's llama_token_type).
enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
};

// A stretch of the input: either a special token already identified, or raw text still to be
// pre-tokenized and merged.
struct Fragment {
  int32_t special_id;     // -1 for raw text
  std::string_view text;  // the raw text (for a special token: its text in the input)
};

}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> tokens;      // vocabulary entries as stored (byte-level alphabet)
  std::vector<int32_t> types;           // TokenType of each entry
  std::vector<std::string> bytes;       // the raw bytes each token stands for
  std::unordered_map<std::string, int32_t> id_of;  // vocabulary entry -> id
  std::vector<int32_t> matched_verbatim;  // special tokens, longest text first
  BpeMerges merges;
  PreTokenizer pre;
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t im_end = -1;       // "<|im_end|>", ends a ChatML turn
  int32_t end_of_text = -1;  // "<|endoftext|>"

  Impl(BpeMerges m, PreTokenizer p) : merges(std::move(m)), pre(std::move(p)) {}

  int32_t find(const std::string& text) const {
    const auto it = id_of.find(text);
    return it == id_of.end() ? -1 : it->second;
  }

  void check_id(int32_t id) const {
    if (id < 0 || id >= std::ssize(tokens)) {
      throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(tokens.size() - 1) + ")");
    }
  }

  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  void encode_raw(std::string_view text, std::vector<int32_t>& out) const;
};

// Cuts special tokens out of the text, as llama.cpp does: one special token at a time, longest
// text first, every occurrence of it in every raw fragment left so far. (Longest first decides
// overlaps: a special token that contains another one wins.) Control tokens are matched only
// when parse_special is true; user-defined tokens are always matched, because llama.cpp and
// Hugging Face treat them as part of the text's vocabulary, not as markup.
std::vector<Fragment> Tokenizer::Impl::split_special(std::string_view text,
                                                     bool parse_special) const {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, text});

  for (const int32_t id : matched_verbatim) {
    if (!parse_special && types[id] != kUserDefined) continue;
    const std::string& special = tokens[id];

    std::vector<Fragment> next;
    for (const Fragment& fragment : fragments) {
      if (fragment.special_id >= 0) {
        next.push_back(fragment);
        continue;
      }
      std::string_view rest = fragment.text;
      for (std::size_t at; (at = rest.find(special)) != std::string_view::npos;) {
        if (at > 0) next.push_back({-1, rest.substr(0, at)});
        next.push_back({id, rest.substr(at, special.size())});
        rest.remove_prefix(at + special.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    fragments = std::move(next);
  }
  return fragments;
}

// Pre-tokenize, map to the byte-level alphabet, merge, look up.
void Tokenizer::Impl::encode_raw(std::string_view text, std::vector<int32_t>& out) const {
  // PCRE2 needs valid UTF-8, and llama.cpp reads broken UTF-8 in a particular way.
  const std::string valid = utf8::make_valid_as_llama_cpp(text);
  for (const std::string_view piece : pre.split(valid)) {
    const std::string word = byte_level::encode(piece);
    for (const std::string_view symbol : merges.apply(word)) {
      const auto it = id_of.find(std::string(symbol));
      if (it != id_of.end()) {
        out.push_back(it->second);
        continue;
      }
      // A symbol that is not in the vocabulary: fall back to its characters, each of which
      // stands for one byte. A vocabulary need not have a token for every byte: SmolLM2's lacks
      // 21 of them, among them the control characters 04, 06, 13, 14, 16 and 1D and the lead
      // bytes F1 and F2 (U+40000..U+BFFFF). llama.cpp leaves such a byte out of the ids, and so do
      // we, so that the ids stay llama.cpp's (tests/fuzz/README.md: found by fuzz_tokenizer, which
      // made an earlier version throw on "\x14").
      for (std::size_t pos = 0; pos < symbol.size();) {
        const std::size_t length = utf8::next(symbol, pos).length;
        const int32_t id = find(std::string(symbol.substr(pos, length)));
        if (id >= 0) out.push_back(id);
        pos += length;
      }
    }
  }
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model != "gpt2") {
    throw std::runtime_error("unsupported tokenizer model '" + model +
                             "' (tokenizer.ggml.model); this library implements 'gpt2' "
                             "(byte-level BPE)");
  }
  // llama.cpp calls a missing pre-tokenizer name "default"; we implement only "smollm".
  const std::string pre_name =
      file.has("tokenizer.ggml.pre") ? file.get_string("tokenizer.ggml.pre") : "default";

  auto impl = std::make_unique<Impl>(
      BpeMerges(file.get_string_array("tokenizer.ggml.merges")), PreTokenizer::for_name(pre_name));

  impl->tokens = file.get_string_array("tokenizer.ggml.tokens");
  const std::size_t n = impl->tokens.size();
  if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::runtime_error("tokenizer.ggml.tokens has " + std::to_string(n) + " entries");
  }

  if (file.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n) {
      throw std::runtime_error("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                               " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
    impl->types.reserve(n);
    for (const int64_t type : types) impl->types.push_back(static_cast<int32_t>(type));
  } else {
    impl->types.assign(n, kNormal);
  }

  impl->id_of.reserve(n);
  impl->bytes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    impl->id_of.emplace(impl->tokens[i], id);  // a duplicate entry keeps its first id
    const int32_t type = impl->types[i];
    // Control and user-defined tokens are stored as plain text, all others in the byte-level
    // alphabet.
    const bool plain = type == kControl || type == kUserDefined;
    impl->bytes[i] = plain ? impl->tokens[i] : byte_level::decode(impl->tokens[i]);
    if ((type == kControl || type == kUserDefined || type == kUnknown) &&
        !impl->tokens[i].empty()) {
      impl->matched_verbatim.push_back(id);
    }
  }
  // Longest first; ties by id so that the order does not depend on the sort.
  std::sort(impl->matched_verbatim.begin(), impl->matched_verbatim.end(),
            [&](int32_t a, int32_t b) {
              const std::size_t la = impl->tokens[a].size();
              const std::size_t lb = impl->tokens[b].size();
              return la != lb ? la > lb : a < b;
            });

  const auto read_id = [&](const std::string& key) -> int32_t {
    if (!file.has(key)) return -1;
    const uint64_t id = file.get_uint(key);
    if (id >= n) {
      throw std::runtime_error(key + " = " + std::to_string(id) + " is outside the vocabulary");
    }
    return static_cast<int32_t>(id);
  };
  impl->bos = read_id("tokenizer.ggml.bos_token_id");
  impl->eos = read_id("tokenizer.ggml.eos_token_id");
  impl->im_end = impl->find("<|im_end|>");
  impl->end_of_text = impl->find("<|endoftext|>");

  return Tokenizer(std::move(impl));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  for (const Fragment& fragment : impl_->split_special(text, parse_special)) {
    if (fragment.special_id >= 0) {
      ids.push_back(fragment.special_id);
    } else {
      impl_->encode_raw(fragment.text, ids);
    }
  }
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (const int32_t id : ids) {
    impl_->check_id(id);
    text += impl_->bytes[id];
  }
  return text;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  impl_->check_id(id);
  return impl_->bytes[id];
}

std::string_view Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id);
  return impl_->tokens[id];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }
int32_t Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::eos_id() const { return impl_->eos; }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && impl_->types[id] == kControl;
}

bool Tokenizer::ends_generation(int32_t id) const {
  return id >= 0 && (id == impl_->eos || id == impl_->im_end || id == impl_->end_of_text);
}

std::string Tokenizer::apply_chat_template(const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt) const {
  // SmolLM2-Instruct's template (the GGUF key tokenizer.chat_template), written out in C++
  // rather than interpreted from its Jinja source.
  std::string prompt;
  if (messages.empty() || messages.front().role != "system") {
    prompt += "<|im_start|>system\n"
              "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";
  }
  for (const ChatMessage& m : messages) {
    prompt += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (add_generation_prompt) prompt += "<|im_start|>assistant\n";
  return prompt;
}

}  // namespace infer
