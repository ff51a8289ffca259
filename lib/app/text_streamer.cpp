#include "app/text_streamer.hpp"

#include <cstdio>

namespace infer {

void TextStreamer::print(const std::string& piece) {
  text_ += piece;
  std::fputs(piece.c_str(), stdout);
  std::fflush(stdout);
}

void TextStreamer::operator()(const StepRecord& step) {
  if (!tokenizer_.ends_generation(step.token)) print(decoder_.push(step.token));
}

void TextStreamer::finish() {
  print(decoder_.flush());
  std::fputs("\n\n", stdout);
  std::fflush(stdout);
}

}  // namespace infer
