// Small helpers for the candidates' parity cases and written contracts: slicing fixture tensors and
// rendering a contract table as markdown.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux::sam31::contract {

// Copy of `count` entries starting at `start` along `axis` (any dtype).
Tensor take(const Tensor& t, int axis, int64_t start, int64_t count);
// Entries `indices` along `axis`, in that order (any dtype).
Tensor take_indices(const Tensor& t, int axis, const std::vector<int64_t>& indices);
// Copy with axes permuted (any dtype): out.shape[i] = t.shape[perm[i]].
Tensor permute(const Tensor& t, const std::vector<int>& perm);

class Table {
 public:
  Table(std::string name, std::string summary) : name_(std::move(name)), summary_(std::move(summary)) {}
  void input(const std::string& name, const std::vector<int64_t>& shape, const std::string& dtype,
             const std::string& meaning, const std::string& producer);
  void output(const std::string& name, const std::vector<int64_t>& shape, const std::string& dtype,
              const std::string& meaning, const std::string& consumer);
  void note(const std::string& text) { notes_.push_back(text); }
  std::string markdown() const;

 private:
  struct Row {
    std::string name, shape, dtype, meaning, who;
  };
  std::string name_, summary_;
  std::vector<Row> inputs_, outputs_;
  std::vector<std::string> notes_;
};

}  // namespace segmux::sam31::contract
