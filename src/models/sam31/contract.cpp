#include "models/sam31/contract.h"

#include <set>
#include <sstream>

#include "core/error.h"

namespace segmux::sam31::contract {

namespace {

std::string dims(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// The rows of `ports` (graph value ids) described by `described`; `kind` is "input" or "output".
void write_rows(std::ostringstream& os, const std::string& name, const ir::Graph& g, const std::vector<int>& ports,
                const std::map<std::string, Port>& described, const std::string& kind) {
  std::set<std::string> seen;
  for (int id : ports) {
    const ir::Value& v = g.value(id);
    auto it = described.find(v.name);
    SEGMUX_CHECK(it != described.end(), "contract of ", name, ": graph ", kind, " '", v.name, "' has no description");
    SEGMUX_CHECK(v.has_shape, "contract of ", name, ": graph ", kind, " '", v.name, "' has no shape");
    os << "| `" << v.name << "` | " << dims(v.shape) << " | " << dtype_name(v.dtype) << " | " << it->second.meaning
       << " | " << it->second.who << " |\n";
    seen.insert(v.name);
  }
  for (const auto& [port, unused] : described)
    SEGMUX_CHECK(seen.count(port) != 0, "contract of ", name, " describes ", kind, " '", port,
                 "' that the graph does not have");
}

}  // namespace

std::string markdown(const std::string& name, const Description& d, const ir::Graph& g) {
  std::ostringstream os;
  os << "# Candidate `" << name << "`\n\n" << d.summary << "\n\n";
  os << "Shapes are for the configuration the contract was generated from; every size comes from "
        "`sam31::ModelConfig`.\n\n";
  os << "## Inputs\n\n| name | shape | dtype | meaning | producer |\n|---|---|---|---|---|\n";
  write_rows(os, name, g, g.inputs, d.inputs, "input");
  os << "\n## Outputs\n\n| name | shape | dtype | meaning | consumer |\n|---|---|---|---|---|\n";
  write_rows(os, name, g, g.outputs, d.outputs, "output");
  if (!d.notes.empty()) {
    os << "\n## Notes\n\n";
    for (const auto& n : d.notes) os << "- " << n << "\n";
  }
  return os.str();
}

}  // namespace segmux::sam31::contract
