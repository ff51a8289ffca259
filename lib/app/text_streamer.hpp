// Streams generated text to stdout as tokens arrive, and keeps a copy for the run record.
// Only whole UTF-8 characters are printed (a token may end mid-character), and end-of-
// generation tokens such as <|im_end|> are not printed.
#pragma once

#include <string>

#include "app/run_record.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer {

class TextStreamer {
 public:
  // `text` receives everything printed (usually RunRecord::text).
  TextStreamer(const Tokenizer& tokenizer, std::string& text) : tokenizer_(tokenizer), decoder_(tokenizer), text_(text) {}
  void operator()(const StepRecord& step);  // pass as the generation's on_token callback
  void finish();                            // prints what is held back and ends the paragraph

 private:
  void print(const std::string& piece);
  const Tokenizer& tokenizer_;
  StreamDecoder decoder_;
  std::string& text_;
};

}  // namespace infer
