#include "verify/sam31/fixture.h"

#include "core/error.h"

namespace segmux::verify {

const Tensor& fixture_tensor(const TensorFile& f, const std::string& name) {
  if (f.has(name)) return f.at(name);
  auto it = f.metadata.find("alias:" + name);
  SEGMUX_CHECK(it != f.metadata.end(), "fixture tensor '", name, "' is neither stored nor an alias");
  return f.at(it->second);
}

const std::string& fixture_meta(const TensorFile& f, const std::string& key, const std::string& what) {
  auto it = f.metadata.find(key);
  SEGMUX_CHECK(it != f.metadata.end(), what, ": metadata '", key, "' is missing");
  return it->second;
}

}  // namespace segmux::verify
