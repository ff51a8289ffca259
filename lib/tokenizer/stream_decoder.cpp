// StreamDecoder: token ids in, whole UTF-8 characters out.
//
// A byte-level BPE token is a run of bytes, not of characters: "é" (C3 A9) or an emoji (four
// bytes) may be split over two or more tokens. Printing each token's bytes as they come would
// put half a character on the terminal, so we keep back the tail of an unfinished character until
// the token that completes it arrives.
#include "tokenizer/tokenizer.hpp"

#include "tokenizer/utf8.hpp"

namespace infer {

namespace {

// Moves the whole characters at the front of `pending` to the result. Bytes that can never be
// part of a character become U+FFFD; an unfinished character at the end stays in `pending`,
// unless `final` is set, in which case it too becomes U+FFFD.
std::string take_characters(std::string& pending, bool final) {
  std::string out;
  std::size_t pos = 0;
  while (pos < pending.size()) {
    const utf8::Step step = utf8::next(pending, pos);
    if (step.status == utf8::Status::incomplete && !final) break;
    if (step.status == utf8::Status::valid) {
      out.append(pending, pos, step.length);
    } else {
      out.append(utf8::kReplacement);
    }
    pos += step.length;
  }
  pending.erase(0, pos);
  return out;
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_.token_bytes(id);
  return take_characters(pending_, /*final=*/false);
}

std::string StreamDecoder::flush() { return take_characters(pending_, /*final=*/true); }

}  // namespace infer
