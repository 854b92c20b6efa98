// The C API (include/segmux/segmux.h): library, models, frames. Sessions are in capi_session.cpp.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <new>
#include <unordered_map>

#include "capi/capi_checks.h"
#include "capi/capi_internal.h"
#include "core/cpu_cores.h"
#include "core/error.h"
#include "core/error_kind.h"

namespace segmux::capi {

namespace {
thread_local std::string t_last_error;

std::mutex g_handles_mu;
std::unordered_map<const void*, HandleType>& handles() {
  static auto* h = new std::unordered_map<const void*, HandleType>();  // never destroyed: used until exit
  return *h;
}

segmux_status status_of_kind(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument:
      return SEGMUX_ERROR_INVALID_ARGUMENT;
    case ErrorKind::NotFound:
      return SEGMUX_ERROR_NOT_FOUND;
    case ErrorKind::CorruptFile:
      return SEGMUX_ERROR_CORRUPT_FILE;
    case ErrorKind::Unsupported:
      return SEGMUX_ERROR_UNSUPPORTED;
    case ErrorKind::Io:
      return SEGMUX_ERROR_IO;
    case ErrorKind::Failed:
      break;
  }
  return SEGMUX_ERROR_FAILED;
}

const char* handle_type_name(HandleType type) {
  switch (type) {
    case HandleType::model:
      return "segmux_model";
    case HandleType::session:
      return "segmux_session";
    case HandleType::frame:
      return "segmux_frame";
    case HandleType::image_predictor:
      return "segmux_image_predictor";
    case HandleType::prediction:
      return "segmux_prediction";
  }
  return "handle";
}
}  // namespace

void register_handle(const void* handle, HandleType type) {
  std::lock_guard<std::mutex> lock(g_handles_mu);
  handles()[handle] = type;
}

void unregister_handle(const void* handle) {
  std::lock_guard<std::mutex> lock(g_handles_mu);
  handles().erase(handle);
}

bool is_live(const void* handle, HandleType type) {
  if (!handle) return false;
  std::lock_guard<std::mutex> lock(g_handles_mu);
  const auto it = handles().find(handle);
  return it != handles().end() && it->second == type;
}

segmux_status check_handle(const void* handle, HandleType type, const std::string& what) {
  if (!handle) return invalid(what + ": the " + handle_type_name(type) + " is NULL");
  if (!is_live(handle, type))
    return invalid(what + ": not an open " + handle_type_name(type) +
                   " (already closed or freed, or not a handle of this type)");
  return SEGMUX_OK;
}

void set_last_error(const std::string& message) { t_last_error = message; }

segmux_status status_of_current_exception(std::string& message) {
  try {
    throw;
  } catch (const segmux::Error& e) {
    message = e.what();
    return status_of_kind(kind_of(e));
  } catch (const std::filesystem::filesystem_error& e) {
    message = e.what();
    return e.code() == std::errc::no_such_file_or_directory ? SEGMUX_ERROR_NOT_FOUND : SEGMUX_ERROR_IO;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return SEGMUX_ERROR_OUT_OF_MEMORY;
  } catch (const std::length_error& e) {  // a size past what can be allocated at all
    message = std::string("out of memory: ") + e.what();
    return SEGMUX_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
    return SEGMUX_ERROR_INTERNAL;
  } catch (...) {
    message = "internal error: an unknown exception";
    return SEGMUX_ERROR_INTERNAL;
  }
}

segmux_status invalid(const std::string& message) { return failed(SEGMUX_ERROR_INVALID_ARGUMENT, message); }

segmux_status failed(segmux_status status, const std::string& message) {
  set_last_error(message);
  return status;
}

std::unique_ptr<segmux_frame> make_frame(const pipeline::FrameOutput& out, int width, int height) {
  auto f = std::make_unique<segmux_frame>();
  f->frame_index = out.frame_index;
  f->width = width;
  f->height = height;
  f->obj_ids = out.obj_ids;
  f->scores = out.probs;
  for (const auto& b : out.boxes_xywh) f->boxes_xywh.insert(f->boxes_xywh.end(), b.begin(), b.end());
  f->masks = out.masks;
  f->prompts = out.prompts;
  f->prompts.resize(f->obj_ids.size());  // "" for an object no text prompt found
  for (const auto& m : f->masks)
    SEGMUX_CHECK(m.width == width && m.height == height, "frame ", out.frame_index, ": a mask of ", m.width, "x",
                 m.height, " in a ", width, "x", height, " video");
  SEGMUX_CHECK(f->scores.size() == f->obj_ids.size() && f->masks.size() == f->obj_ids.size() &&
                   f->boxes_xywh.size() == 4 * f->obj_ids.size(),
               "frame ", out.frame_index, ": outputs of different lengths");
  f->rle.resize(f->obj_ids.size());
  return f;
}

}  // namespace segmux::capi

using segmux::capi::guard;
using segmux::capi::invalid;
namespace pl = segmux::pipeline;

namespace {

// The files a model open reads exist and are what they claim, so that their absence is NOT_FOUND and
// a file of the wrong kind CORRUPT_FILE, before anything is compiled.
void check_model_inputs(const segmux_model_options& o) {
  using segmux::capi::check_existing_path;
  using segmux::capi::PathKind;
  if (o.model_dir && *o.model_dir) {
    check_existing_path("options.model_dir", o.model_dir, PathKind::folder);
    check_existing_path("options.model_dir's model.json", std::string(o.model_dir) + "/model.json", PathKind::file);
  }
  if (o.checkpoint && *o.checkpoint) segmux::capi::check_checkpoint_file("options.checkpoint", o.checkpoint);
  if (o.config && *o.config) check_existing_path("options.config", o.config, PathKind::file);
  if (o.vocab && *o.vocab) check_existing_path("options.vocab", o.vocab, PathKind::file);
  if (o.control_config && *o.control_config)
    check_existing_path("options.control_config", o.control_config, PathKind::file);
}

}  // namespace

extern "C" {

const char* segmux_version(void) { return SEGMUX_VERSION_STRING; }

const char* segmux_last_error(void) { return segmux::capi::t_last_error.c_str(); }

const char* segmux_status_name(segmux_status status) {
  switch (status) {
    case SEGMUX_OK:
      return "SEGMUX_OK";
    case SEGMUX_END:
      return "SEGMUX_END";
    case SEGMUX_ERROR_INVALID_ARGUMENT:
      return "SEGMUX_ERROR_INVALID_ARGUMENT";
    case SEGMUX_ERROR_FAILED:
      return "SEGMUX_ERROR_FAILED";
    case SEGMUX_ERROR_BUSY:
      return "SEGMUX_ERROR_BUSY";
    case SEGMUX_ERROR_OUT_OF_MEMORY:
      return "SEGMUX_ERROR_OUT_OF_MEMORY";
    case SEGMUX_ERROR_INTERNAL:
      return "SEGMUX_ERROR_INTERNAL";
    case SEGMUX_ERROR_NOT_FOUND:
      return "SEGMUX_ERROR_NOT_FOUND";
    case SEGMUX_ERROR_CORRUPT_FILE:
      return "SEGMUX_ERROR_CORRUPT_FILE";
    case SEGMUX_ERROR_UNSUPPORTED:
      return "SEGMUX_ERROR_UNSUPPORTED";
    case SEGMUX_ERROR_IO:
      return "SEGMUX_ERROR_IO";
  }
  return "SEGMUX_UNKNOWN_STATUS";
}

void segmux_model_options_init(segmux_model_options* options) {
  if (!options) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->num_threads = std::min(segmux::usable_cores(), 1024);  // the cores this process may use (open: 1..1024)
}

segmux_status segmux_model_open(const segmux_model_options* o, segmux_model** model) {
  return guard([&] {
    if (!o || !model) return invalid("segmux_model_open: options and model must not be NULL");
    *model = nullptr;
    if (o->struct_size < sizeof(segmux_model_options))
      return invalid("segmux_model_open: options.struct_size is " + std::to_string(o->struct_size) + ", expected " +
                     std::to_string(sizeof(segmux_model_options)) + " (call segmux_model_options_init)");
    const bool has_dir = o->model_dir && *o->model_dir, has_ckpt = o->checkpoint && *o->checkpoint;
    if (has_dir == has_ckpt)
      return invalid("segmux_model_open: give exactly one of options.model_dir and options.checkpoint");
    if (o->num_threads < 1 || o->num_threads > 1024)
      return invalid("segmux_model_open: options.num_threads " + std::to_string(o->num_threads) + " is not in 1..1024");
    pl::ModelSource src;
    if (has_dir) src.model_dir = o->model_dir;
    if (has_ckpt) src.weights = o->checkpoint;
    if (o->config) src.config = o->config;
    if (o->vocab) src.vocab = o->vocab;
    if (o->cache_dir) src.cache_dir = o->cache_dir;
    src.num_threads = o->num_threads;
    if (o->precision && *o->precision) {
      src.precision = o->precision;
      if (src.precision != "fp32" && src.precision != "bf16")
        return invalid("segmux_model_open: options.precision '" + src.precision +
                       "' is not a precision: use fp32 or bf16");
      if (has_dir)
        return invalid(
            "segmux_model_open: options.precision is for a checkpoint (a model folder's precision was "
            "chosen when it was made: segmux deploy --precision)");
    }
    if (has_dir && !src.config.empty())
      return invalid("segmux_model_open: options.config is for a checkpoint (a model folder has its own)");
    check_model_inputs(*o);
    auto log = [o](const std::string& line) {
      if (o->log) o->log(o->log_user, line.c_str());
    };
    auto m = std::make_unique<segmux_model>();
    {
      // Compiling a checkpoint on first use stages the cache entry in a folder named after the process:
      // two threads of one process must not build it at once.
      static std::mutex open_mu;
      std::lock_guard<std::mutex> lock(open_mu);
      try {
        m->opened = pl::open_model(src, log);
      } catch (const segmux::KindedError&) {
        throw;
      } catch (const segmux::Error& e) {
        // The folder exists and has a model.json (checked above): what fails to load is damaged.
        if (has_dir) segmux::fail_as(segmux::ErrorKind::CorruptFile, e.what());
        throw;
      } catch (const std::bad_alloc&) {
        throw;
      } catch (const std::filesystem::filesystem_error&) {
        throw;
      } catch (const std::exception& e) {  // e.g. a JSON type error in a damaged model.json
        if (has_dir)
          segmux::fail_as(segmux::ErrorKind::CorruptFile, "model folder '", o->model_dir,
                          "' does not load: ", e.what());
        throw;
      }
    }
    // The control plane's settings: the official defaults sized to the model (as `segmux track`
    // does), or a JSON file over the defaults.
    pl::ControlConfig cc;
    if (o->control_config && *o->control_config) {
      cc = pl::load_control_config(o->control_config);
    } else {
      cc = pl::control_config_for(m->opened.config);
    }
    pl::validate_control_config(cc, o->control_config ? o->control_config : "the model's control settings");
    m->control = cc;
    *model = m.release();
    return SEGMUX_OK;
  });
}

segmux_status segmux_model_close(segmux_model* model) {
  return guard([&] {
    if (!model) return SEGMUX_OK;
    if (const segmux_status st =
            segmux::capi::check_handle(model, segmux::capi::HandleType::model, "segmux_model_close"))
      return st;
    {
      std::lock_guard<std::mutex> lock(model->mu);
      if (model->open_sessions > 0 || model->image_uses > 0)
        return segmux::capi::failed(SEGMUX_ERROR_BUSY, "segmux_model_close: " + std::to_string(model->open_sessions) +
                                                           " of the model's sessions and " +
                                                           std::to_string(model->image_uses) +
                                                           " of its images (segmentations, predictors) are still open");
    }
    delete model;
    return SEGMUX_OK;
  });
}

namespace {
// A frame the library gave out and has not freed (accessors answer NULL / 0 for anything else).
bool live_frame(const segmux_frame* f) { return segmux::capi::is_live(f, segmux::capi::HandleType::frame); }
}  // namespace

int segmux_frame_index(const segmux_frame* f) { return live_frame(f) ? f->frame_index : -1; }
size_t segmux_frame_num_objects(const segmux_frame* f) { return live_frame(f) ? f->obj_ids.size() : 0; }
int segmux_frame_width(const segmux_frame* f) { return live_frame(f) ? f->width : 0; }
int segmux_frame_height(const segmux_frame* f) { return live_frame(f) ? f->height : 0; }
const int64_t* segmux_frame_obj_ids(const segmux_frame* f) { return live_frame(f) ? f->obj_ids.data() : nullptr; }
const float* segmux_frame_scores(const segmux_frame* f) { return live_frame(f) ? f->scores.data() : nullptr; }
const float* segmux_frame_boxes_xywh(const segmux_frame* f) { return live_frame(f) ? f->boxes_xywh.data() : nullptr; }

const uint8_t* segmux_frame_mask(const segmux_frame* f, size_t k) {
  if (!live_frame(f) || k >= f->masks.size()) return nullptr;
  return f->masks[k].pixels.data();
}

const char* segmux_frame_prompt(const segmux_frame* f, size_t k) {
  if (!live_frame(f) || k >= f->prompts.size()) return nullptr;
  return f->prompts[k].c_str();
}

segmux_status segmux_frame_mask_rle(const segmux_frame* f, size_t k, const int64_t** counts, size_t* num_counts) {
  return guard([&] {
    if (!counts || !num_counts) return invalid("segmux_frame_mask_rle: NULL argument");
    if (const segmux_status st =
            segmux::capi::check_handle(f, segmux::capi::HandleType::frame, "segmux_frame_mask_rle"))
      return st;
    if (k >= f->masks.size())
      return invalid("segmux_frame_mask_rle: object " + std::to_string(k) + " of a frame with " +
                     std::to_string(f->masks.size()) + " objects");
    std::lock_guard<std::mutex> lock(f->rle_mu);
    if (!f->rle[k]) f->rle[k] = std::make_unique<pl::RleMask>(pl::rle_encode(f->masks[k]));
    *counts = f->rle[k]->counts.data();
    *num_counts = f->rle[k]->counts.size();
    return SEGMUX_OK;
  });
}

segmux_frame* segmux_frame_clone(const segmux_frame* f) {
  if (!live_frame(f)) return nullptr;
  try {
    auto c = std::make_unique<segmux_frame>();
    c->frame_index = f->frame_index;
    c->width = f->width;
    c->height = f->height;
    c->obj_ids = f->obj_ids;
    c->scores = f->scores;
    c->boxes_xywh = f->boxes_xywh;
    c->masks = f->masks;
    c->prompts = f->prompts;
    c->rle.resize(f->obj_ids.size());
    return c.release();
  } catch (...) {
    segmux::capi::set_last_error("segmux_frame_clone: out of memory");
    return nullptr;
  }
}

void segmux_frame_free(segmux_frame* f) {
  if (live_frame(f)) delete f;  // a second free of the same frame is ignored, never a double free
}

}  // extern "C"
