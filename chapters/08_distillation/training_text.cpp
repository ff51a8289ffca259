#include "training_text.hpp"

#include <stdexcept>

#include "eval/evaluation.hpp"  // held_out_text, the other side of the cut

namespace infer {

std::string training_text(const std::string& eval_text) {
  // held_out_text returns what follows "\nRuth\n\n"; the training text ends where the marker starts.
  const std::string held_out = held_out_text(eval_text);
  const std::string marker = "\nRuth\n\n";
  const std::size_t cut = eval_text.size() - held_out.size() - marker.size();
  if (eval_text.compare(cut, marker.size(), marker) != 0)
    throw std::logic_error("training_text: the held-out book is not preceded by its marker");
  return eval_text.substr(0, cut);
}

}  // namespace infer
