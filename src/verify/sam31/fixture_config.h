// The golden fixtures' config.json and trace.json (written by the official-code capture): the model's
// sizes in the "reduced_vs_official" table (reduced values; the "derived" table is cross-checked
// against our derived sizes) and the control plane's settings ("control_plane_and_tracker_settings",
// trace.json: "control_plane_hyperparameters"). The product reads model.json and flat control settings
// only; verification, tests and the CLI read fixtures through these, and `segmux fixture-config`
// converts one.
#pragma once
#include <string>

#include "models/sam31/config.h"
#include "pipeline/predictor/control_config.h"

namespace segmux::verify {

// A fixture's config.json; errors name `what` and the entry that is wrong.
sam31::ModelConfig parse_fixture_config(const std::string& json_text, const std::string& what);
sam31::ModelConfig load_fixture_config(const std::string& path);
// A model config file of either form (the CLI's --config): a fixture's config.json or a flat model config.
sam31::ModelConfig load_model_or_fixture_config(const std::string& path);

// The control-plane settings of a fixture's config.json or trace.json (whichever section it holds)
// over the official defaults. Keys the control plane does not use are ignored; a present key with the
// wrong type is an error.
pipeline::ControlConfig parse_fixture_control_config(const std::string& json_text, const std::string& what);
pipeline::ControlConfig load_fixture_control_config(const std::string& path);

}  // namespace segmux::verify
