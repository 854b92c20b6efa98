#include "models/sam31/config.h"

namespace segmux::sam31 {

ModelConfig default_config() { return ModelConfig{}; }

}  // namespace segmux::sam31
