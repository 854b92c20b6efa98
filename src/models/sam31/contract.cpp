#include "models/sam31/contract.h"

#include <sstream>

namespace segmux::sam31::contract {

static std::string dims(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

void Table::input(const std::string& name, const std::vector<int64_t>& shape, const std::string& dtype,
                  const std::string& meaning, const std::string& producer) {
  inputs_.push_back({name, dims(shape), dtype, meaning, producer});
}

void Table::output(const std::string& name, const std::vector<int64_t>& shape, const std::string& dtype,
                   const std::string& meaning, const std::string& consumer) {
  outputs_.push_back({name, dims(shape), dtype, meaning, consumer});
}

std::string Table::markdown() const {
  std::ostringstream os;
  os << "# Candidate `" << name_ << "`\n\n" << summary_ << "\n\n";
  os << "Shapes are for the configuration the contract was generated from; every size comes from "
        "`sam31::ModelConfig`.\n\n";
  os << "## Inputs\n\n| name | shape | dtype | meaning | producer |\n|---|---|---|---|---|\n";
  for (auto& r : inputs_)
    os << "| `" << r.name << "` | " << r.shape << " | " << r.dtype << " | " << r.meaning << " | " << r.who << " |\n";
  os << "\n## Outputs\n\n| name | shape | dtype | meaning | consumer |\n|---|---|---|---|---|\n";
  for (auto& r : outputs_)
    os << "| `" << r.name << "` | " << r.shape << " | " << r.dtype << " | " << r.meaning << " | " << r.who << " |\n";
  if (!notes_.empty()) {
    os << "\n## Notes\n\n";
    for (auto& n : notes_) os << "- " << n << "\n";
  }
  return os.str();
}

}  // namespace segmux::sam31::contract
