// A candidate's written contract (docs/contracts/<name>.md): its inputs and outputs with shapes, dtypes,
// meaning, producer and consumer, rendered as markdown.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux::sam31::contract {

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
