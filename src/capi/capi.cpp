// The C API (include/segmux/segmux.h): library, models, frames. Sessions are in capi_session.cpp.
#include <algorithm>
#include <cstring>
#include <new>

#include "capi/capi_internal.h"
#include "core/cpu_cores.h"
#include "core/error.h"

namespace segmux::capi {

namespace {
thread_local std::string t_last_error;
}

void set_last_error(const std::string& message) { t_last_error = message; }

segmux_status status_of_current_exception(std::string& message) {
  try {
    throw;
  } catch (const segmux::Error& e) {
    message = e.what();
    return SEGMUX_ERROR_FAILED;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return SEGMUX_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
    return SEGMUX_ERROR_INTERNAL;
  } catch (...) {
    message = "internal error: an unknown exception";
    return SEGMUX_ERROR_INTERNAL;
  }
}

segmux_status invalid(const std::string& message) {
  set_last_error(message);
  return SEGMUX_ERROR_INVALID_ARGUMENT;
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
    auto log = [o](const std::string& line) {
      if (o->log) o->log(o->log_user, line.c_str());
    };
    auto m = std::make_unique<segmux_model>();
    {
      // Compiling a checkpoint on first use stages the cache entry in a folder named after the process:
      // two threads of one process must not build it at once.
      static std::mutex open_mu;
      std::lock_guard<std::mutex> lock(open_mu);
      m->opened = pl::open_model(src, log);
    }
    // The control plane's settings: the official defaults sized to the model (as `segmux track`
    // does), or a JSON file over the defaults.
    pl::ControlConfig cc;
    if (o->control_config && *o->control_config) {
      cc = pl::load_control_config(o->control_config);
    } else {
      const auto& mc = m->opened.config;
      cc = pl::default_control_config();
      cc.multiplex_count = cc.bucket_capacity = mc.multiplex_count;
      cc.max_num_objects = mc.max_num_objects;
      cc.num_maskmem = mc.num_maskmem;
      cc.max_obj_ptrs_in_encoder = mc.max_obj_ptrs_in_encoder;
    }
    pl::validate_control_config(cc, o->control_config ? o->control_config : "the model's control settings");
    m->predictor = std::make_unique<pl::VideoPredictor>(*m->opened.backend, cc);
    *model = m.release();
    return SEGMUX_OK;
  });
}

segmux_status segmux_model_close(segmux_model* model) {
  return guard([&] {
    if (!model) return SEGMUX_OK;
    {
      std::lock_guard<std::mutex> lock(model->mu);
      if (model->session)
        return segmux::capi::set_last_error("segmux_model_close: the model's session is still open"), SEGMUX_ERROR_BUSY;
    }
    delete model;
    return SEGMUX_OK;
  });
}

int segmux_frame_index(const segmux_frame* f) { return f ? f->frame_index : -1; }
size_t segmux_frame_num_objects(const segmux_frame* f) { return f ? f->obj_ids.size() : 0; }
int segmux_frame_width(const segmux_frame* f) { return f ? f->width : 0; }
int segmux_frame_height(const segmux_frame* f) { return f ? f->height : 0; }
const int64_t* segmux_frame_obj_ids(const segmux_frame* f) { return f ? f->obj_ids.data() : nullptr; }
const float* segmux_frame_scores(const segmux_frame* f) { return f ? f->scores.data() : nullptr; }
const float* segmux_frame_boxes_xywh(const segmux_frame* f) { return f ? f->boxes_xywh.data() : nullptr; }

const uint8_t* segmux_frame_mask(const segmux_frame* f, size_t k) {
  if (!f || k >= f->masks.size()) return nullptr;
  return f->masks[k].pixels.data();
}

segmux_status segmux_frame_mask_rle(const segmux_frame* f, size_t k, const int64_t** counts, size_t* num_counts) {
  return guard([&] {
    if (!f || !counts || !num_counts) return invalid("segmux_frame_mask_rle: NULL argument");
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
  if (!f) return nullptr;
  try {
    auto c = std::make_unique<segmux_frame>();
    c->frame_index = f->frame_index;
    c->width = f->width;
    c->height = f->height;
    c->obj_ids = f->obj_ids;
    c->scores = f->scores;
    c->boxes_xywh = f->boxes_xywh;
    c->masks = f->masks;
    c->rle.resize(f->obj_ids.size());
    return c.release();
  } catch (...) {
    segmux::capi::set_last_error("segmux_frame_clone: out of memory");
    return nullptr;
  }
}

void segmux_frame_free(segmux_frame* f) { delete f; }

}  // extern "C"
