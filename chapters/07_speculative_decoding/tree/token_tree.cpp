#include "token_tree.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

int TokenTree::add(int32_t token, int parent) {
  if (parent < -1 || parent >= size() || (parent == -1) != tokens_.empty())
    throw std::invalid_argument(fmt::format("TokenTree::add: parent {} for node {}", parent, size()));
  tokens_.push_back(token);
  parents_.push_back(parent);
  depths_.push_back(parent < 0 ? 0 : depth(parent) + 1);
  return size() - 1;
}

int TokenTree::max_depth() const { return *std::max_element(depths_.begin(), depths_.end()); }

std::vector<int> TokenTree::children(int i) const {
  std::vector<int> out;
  for (int j = i + 1; j < size(); ++j)
    if (parent(j) == i) out.push_back(j);
  return out;
}

std::vector<int> TokenTree::path_to(int i) const {
  std::vector<int> path;
  for (int j = i; j >= 0; j = parent(j)) path.push_back(j);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<std::vector<bool>> TokenTree::ancestor_mask() const {
  std::vector<std::vector<bool>> mask(tokens_.size(), std::vector<bool>(tokens_.size(), false));
  for (int i = 0; i < size(); ++i)
    for (int j : path_to(i)) mask[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = true;
  return mask;
}

}  // namespace infer
