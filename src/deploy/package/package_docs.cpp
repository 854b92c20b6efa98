#include "deploy/package/package_docs.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "io/files.h"
#include "io/paths.h"

namespace segmux::package {

namespace {

nlohmann::json signature(const ir::Graph& g, const std::vector<int>& ids) {
  nlohmann::json out = nlohmann::json::array();
  for (int id : ids) {
    const ir::Value& v = g.value(id);
    out.push_back({{"name", v.name}, {"dtype", std::string(dtype_name(v.dtype))}, {"shape", v.shape}});
  }
  return out;
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

// The predictor's entry points (pipeline/predictor/session_api.h) and the backend calls under them
// (docs/predictor.md): which candidates each can run.
const char* kEntryPoints =
    "| entry point | runs | candidates it may run |\n"
    "| --- | --- | --- |\n"
    "| `start_session(video)` | per session | none (frames are decoded lazily) |\n"
    "| `add_prompt(frame, text)` | per prompt | text_encoder; then as `propagate_in_video` on that frame |\n"
    "| `propagate_in_video(...)` | per frame | backbone, detector (per prompt), propagation_decoder and "
    "memory_encoder (per tracker bucket), interactive_decoder + memory_encoder_image_size (per object given a "
    "mask: new objects, reconditioning) |\n"
    "| `close_session()` | per session | none (drops the tracker state) |\n";

}  // namespace

nlohmann::json file_contract(const sam31::CompiledFile& f, const ir::Graph& g) {
  return {{"file", f.file},
          {"variant", f.variant},
          {"smx", f.file + ".smx"},
          {"onnx", "onnx/" + f.file + ".onnx"},
          {"slim_onnx", "onnx/" + f.file + ".slim.onnx"},
          {"inputs", signature(g, g.inputs)},
          {"outputs", signature(g, g.outputs)}};
}

void write_route_docs(const sam31::ModelConfig& cfg, nlohmann::json contracts,
                      const std::map<std::string, std::string>& markdown, const std::string& dir) {
  make_directories(dir + "/contracts");
  nlohmann::json inv = {
      {"format", "segmux-inventory-1"}, {"config", cfg.name}, {"candidates", nlohmann::json::array()}};
  std::ostringstream md;
  md << "# Inventory: " << cfg.name << "\n\n## Predictor entry points\n\n" << kEntryPoints;
  md << "\n## Candidate boundaries\n\n| candidate | runs | inputs | outputs | compiled files |\n"
     << "| --- | --- | --- | --- | --- |\n";
  for (const sam31::Candidate& c : sam31::candidates()) {
    nlohmann::json& j = contracts[c.name];
    j["candidate"] = c.name;
    j["runs"] = c.runs;
    j["contract_markdown"] = "contracts/" + c.name + ".md";
    write_text(dir + "/contracts/" + c.name + ".json", j.dump(2));
    auto md_of = markdown.find(c.name);
    SEGMUX_CHECK(md_of != markdown.end(), "no written contract for candidate ", c.name);
    write_text(dir + "/contracts/" + c.name + ".md", md_of->second);
    std::string ins, outs, files;
    for (const auto& n : c.inputs) ins += (ins.empty() ? "`" : ", `") + n + "`";
    for (const auto& n : c.outputs) outs += (outs.empty() ? "`" : ", `") + n + "`";
    for (const auto& f : j["files"]) files += (files.empty() ? "`" : ", `") + f["smx"].get<std::string>() + "`";
    md << "| " << c.name << " | " << c.runs << " | " << ins << " | " << outs << " | " << files << " |\n";
    inv["candidates"].push_back({{"candidate", c.name},
                                 {"runs", c.runs},
                                 {"inputs", c.inputs},
                                 {"outputs", c.outputs},
                                 {"contract", "contracts/" + c.name + ".json"},
                                 {"files", j["files"]}});
  }
  inv["entry_points"] = {
      {{"name", "start_session"}, {"runs", "per session"}, {"candidates", nlohmann::json::array()}},
      {{"name", "add_prompt"}, {"runs", "per prompt"}, {"candidates", {"text_encoder", "point_decoder"}}},
      {{"name", "propagate_in_video"},
       {"runs", "per frame"},
       {"candidates", {"backbone", "detector", "propagation_decoder", "memory_encoder", "interactive_decoder"}}},
      {{"name", "close_session"}, {"runs", "per session"}, {"candidates", nlohmann::json::array()}}};
  md << "\nShapes and dtypes per file: `contracts/<candidate>.json`; the written contract: "
        "`contracts/<candidate>.md`.\n";
  write_text(dir + "/inventory.md", md.str());
  write_text(dir + "/inventory.json", inv.dump(2));
}

std::string atc_command(const nlohmann::json& fc, const std::string& precision) {
  std::string shapes;
  for (const auto& in : fc["inputs"]) {
    shapes += (shapes.empty() ? "" : ";") + in["name"].get<std::string>() + ":";
    std::string dims;
    for (const auto& d : in["shape"]) dims += (dims.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
    shapes += dims;
  }
  const std::string file = fc["file"].get<std::string>();
  return "atc --framework=5 --model=onnx/" + file + ".onnx --output=om/" + file + " --input_shape=\"" + shapes +
         "\" --soc_version=<your SoC>" +
         (precision == "bf16" ? " --precision_mode=allow_mix_precision" : " --precision_mode=force_fp32");
}

std::string trtexec_command(const nlohmann::json& fc, const std::string& precision) {
  std::string shapes;
  for (const auto& in : fc["inputs"]) {
    std::string dims;
    for (const auto& d : in["shape"]) dims += (dims.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    shapes += (shapes.empty() ? "" : ",") + in["name"].get<std::string>() + ":" + dims;
  }
  const std::string file = fc["file"].get<std::string>();
  return "trtexec --onnx=onnx/" + file + ".onnx --shapes=" + shapes + " --saveEngine=trt/" + file + ".engine" +
         (precision == "bf16" ? " --bf16" : "");
}

}  // namespace segmux::package
