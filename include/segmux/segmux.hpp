// segmux C++ API: a header-only wrapper over the C API (segmux/segmux.h), so the library's ABI stays
// the C one whatever compiler or standard library the application uses. Errors throw segmux::Exception (a distinct name
// from the engine's internal segmux::Error, which never leaves the library).
//
//   segmux::Model model(segmux::Model::Options().model_dir("model/"));
//   segmux::Session session = model.open_video("video.mp4");
//   session.add_text_prompt(0, "person");
//   session.propagate([](const segmux::FrameView& f) { ...; return true; });
//
//   segmux::ImagePredictor predictor = model.open_image_predictor("photo.jpg");  // SAM-1-style clicks
//   segmux::Prediction candidates = predictor.predict(segmux::PredictPrompt().point(163, 79));
//   segmux::Prediction refined = predictor.predict(
//       segmux::PredictPrompt().point(163, 79).point(150, 60).mask_input(candidates, candidates.best()).single_mask());
//
// Thread safety is the C API's (one call at a time per session; one open session per model).
#ifndef SEGMUX_SEGMUX_HPP
#define SEGMUX_SEGMUX_HPP

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segmux/segmux.h"

namespace segmux {

class Exception : public std::runtime_error {
 public:
  Exception(segmux_status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  segmux_status status() const { return status_; }

 private:
  segmux_status status_;
};

namespace detail {
inline segmux_status check(segmux_status s) {
  if (s < 0) throw Exception(s, std::string(segmux_status_name(s)) + ": " + segmux_last_error());
  return s;
}
}  // namespace detail

// The outputs of one frame, borrowed (valid as long as the frame it views).
class FrameView {
 public:
  explicit FrameView(const segmux_frame* f) : f_(f) {}
  int index() const { return segmux_frame_index(f_); }
  size_t size() const { return segmux_frame_num_objects(f_); }
  int width() const { return segmux_frame_width(f_); }
  int height() const { return segmux_frame_height(f_); }
  int64_t obj_id(size_t k) const { return segmux_frame_obj_ids(f_)[k]; }
  float score(size_t k) const { return segmux_frame_scores(f_)[k]; }
  const float* box_xywh(size_t k) const { return segmux_frame_boxes_xywh(f_) + 4 * k; }
  const uint8_t* mask(size_t k) const { return segmux_frame_mask(f_, k); }  // height x width, 0/1
  std::string prompt(size_t k) const {  // the text prompt that found object k ("" for points)
    const char* p = segmux_frame_prompt(f_, k);
    return p ? p : "";
  }
  std::vector<int64_t> mask_rle(size_t k) const {
    const int64_t* counts = nullptr;
    size_t n = 0;
    detail::check(segmux_frame_mask_rle(f_, k, &counts, &n));
    return std::vector<int64_t>(counts, counts + n);
  }
  const segmux_frame* get() const { return f_; }

 private:
  const segmux_frame* f_;
};

// An owned frame.
class Frame : public FrameView {
 public:
  explicit Frame(segmux_frame* f) : FrameView(f), owned_(f) {}
  Frame(Frame&& o) noexcept : FrameView(o.owned_), owned_(std::exchange(o.owned_, nullptr)) {}
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
  Frame& operator=(Frame&&) = delete;
  ~Frame() { segmux_frame_free(owned_); }

 private:
  segmux_frame* owned_;
};

struct PropagateOptions {
  segmux_direction direction = SEGMUX_BOTH;
  int start_frame_index = -1;       // -1: the first prompted frame
  int max_frame_num_to_track = -1;  // -1: all
};

class Session {
 public:
  explicit Session(segmux_session* s) : s_(s) {}
  Session(Session&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session& operator=(Session&&) = delete;
  ~Session() { segmux_session_close(s_); }

  Frame add_text_prompt(int frame_index, const std::string& text) {
    segmux_prompt p;
    segmux_prompt_init(&p);
    p.frame_index = frame_index;
    p.text = text.c_str();
    segmux_frame* out = nullptr;
    detail::check(segmux_session_add_prompt(s_, &p, &out));
    return Frame(out);
  }
  // Pushes an RGB frame into a live session; returns its index.
  int push_frame(const uint8_t* rgb, int width, int height, size_t stride = 0) {
    int index = -1;
    detail::check(segmux_session_push_frame(s_, rgb, width, height, stride, &index));
    return index;
  }
  // Live sessions: no more frames; the next forward propagation delivers every output still held back.
  void end_stream() { detail::check(segmux_session_end_stream(s_)); }
  // Calls on_frame(FrameView) for each output frame; returning false stops. An exception thrown by
  // on_frame stops the propagation and is rethrown here.
  void propagate(const std::function<bool(const FrameView&)>& on_frame, const PropagateOptions& o = {}) {
    struct Ctx {
      const std::function<bool(const FrameView&)>* fn;
      std::exception_ptr error;
    } ctx{&on_frame, nullptr};
    segmux_propagate_options opt = c_options(o);
    segmux_status s = segmux_session_propagate(
        s_, &opt,
        [](void* user, const segmux_frame* f) -> int {
          auto* c = static_cast<Ctx*>(user);
          try {
            return (*c->fn)(FrameView(f)) ? 1 : 0;
          } catch (...) {
            c->error = std::current_exception();
            return 0;
          }
        },
        &ctx);
    if (ctx.error) std::rethrow_exception(ctx.error);
    detail::check(s);
  }
  // Pull style: begin(), then next() until it returns false.
  void begin(const PropagateOptions& o = {}) {
    segmux_propagate_options opt = c_options(o);
    detail::check(segmux_session_propagate_begin(s_, &opt));
  }
  bool next(segmux_frame** out) { return detail::check(segmux_session_next_frame(s_, out)) == SEGMUX_OK; }
  void cancel() { detail::check(segmux_session_cancel(s_)); }
  bool remove_object(int64_t obj_id) {
    int removed = 0;
    detail::check(segmux_session_remove_object(s_, obj_id, &removed));
    return removed != 0;
  }
  void reset() { detail::check(segmux_session_reset(s_)); }
  int num_frames() const {
    int n = 0;
    detail::check(segmux_session_info(s_, &n, nullptr, nullptr));
    return n;
  }
  segmux_session* get() const { return s_; }

 private:
  static segmux_propagate_options c_options(const PropagateOptions& o) {
    segmux_propagate_options opt;
    segmux_propagate_options_init(&opt);
    opt.direction = o.direction;
    opt.start_frame_index = o.start_frame_index;
    opt.max_frame_num_to_track = o.max_frame_num_to_track;
    return opt;
  }
  segmux_session* s_;
};

// The candidate masks of one image-predictor prompt (owned): scores (predicted IoU), masks (or logits
// with return_logits) at the image size, and low-res logits to feed back as a later mask_input.
class Prediction {
 public:
  explicit Prediction(segmux_prediction* p) : p_(p) {}
  Prediction(Prediction&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Prediction(const Prediction&) = delete;
  Prediction& operator=(const Prediction&) = delete;
  Prediction& operator=(Prediction&& o) noexcept {  // a click loop keeps the latest prediction
    if (this != &o) {
      segmux_prediction_free(p_);
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~Prediction() { segmux_prediction_free(p_); }

  size_t size() const { return segmux_prediction_count(p_); }  // 3 (multimask) or 1
  int width() const { return segmux_prediction_width(p_); }
  int height() const { return segmux_prediction_height(p_); }
  float score(size_t i) const { return segmux_prediction_score(p_, i); }
  const uint8_t* mask(size_t i) const { return segmux_prediction_mask(p_, i); }  // height x width 0/1; null with logits
  const float* logits(size_t i) const { return segmux_prediction_logits(p_, i); }  // only with return_logits
  int low_res_size() const { return segmux_prediction_low_res_size(p_); }
  const float* low_res(size_t i) const { return segmux_prediction_low_res(p_, i); }  // low_res_size^2 logits
  size_t best() const {  // the candidate of the highest score (the notebooks' np.argmax(scores))
    size_t b = 0;
    for (size_t i = 1; i < size(); ++i)
      if (score(i) > score(b)) b = i;
    return b;
  }
  size_t area(size_t i) const {  // pixels of mask i (0 with return_logits)
    const uint8_t* m = mask(i);
    return m ? size_t(std::count(m, m + size_t(width()) * size_t(height()), uint8_t(1))) : 0;
  }
  segmux_prediction* get() const { return p_; }

 private:
  segmux_prediction* p_;
};

// A prompt of the image predictor (official predict): clicks and a box in pixels of the image, and
// optionally a previous prediction's low-res logits as mask_input.
class PredictPrompt {
 public:
  PredictPrompt& point(float x, float y, bool positive = true) {
    points_.insert(points_.end(), {x, y});
    labels_.push_back(positive ? 1 : 0);
    return *this;
  }
  PredictPrompt& box(float x0, float y0, float x1, float y1) {
    box_ = {x0, y0, x1, y1};
    has_box_ = true;
    return *this;
  }
  PredictPrompt& mask_input(const Prediction& from, size_t i) {  // the notebooks' logits[np.argmax(scores)]
    const int side = from.low_res_size();
    const float* v = from.low_res(i);
    if (!v)
      throw Exception(SEGMUX_ERROR_INVALID_ARGUMENT,
                      "mask_input: the prediction has no candidate " + std::to_string(i));
    return mask_input(std::vector<float>(v, v + size_t(side) * size_t(side)), side);
  }
  PredictPrompt& mask_input(std::vector<float> logits, int side) {
    mask_ = std::move(logits);
    mask_side_ = side;
    return *this;
  }
  PredictPrompt& single_mask() { return multimask_ = false, *this; }  // multimask_output=False
  PredictPrompt& return_logits() { return logits_ = true, *this; }

  // The C struct, viewing this prompt's vectors (valid while it lives, unchanged).
  segmux_predict_prompt c_prompt() const {
    segmux_predict_prompt q;
    segmux_predict_prompt_init(&q);
    q.points_xy = points_.data();
    q.point_labels = labels_.data();
    q.num_points = labels_.size();
    q.box_xyxy = has_box_ ? box_.data() : nullptr;
    q.mask_input = mask_.empty() ? nullptr : mask_.data();
    q.mask_input_size = mask_side_;
    q.multimask_output = multimask_ ? 1 : 0;
    q.return_logits = logits_ ? 1 : 0;
    return q;
  }

 private:
  std::vector<float> points_;
  std::vector<int> labels_;
  std::array<float, 4> box_{};
  bool has_box_ = false;
  std::vector<float> mask_;
  int mask_side_ = 0;
  bool multimask_ = true, logits_ = false;
};

// One image's embedding, asked any number of prompts. While it lives the model serves nothing else
// (close it before opening sessions or segmenting).
class ImagePredictor {
 public:
  explicit ImagePredictor(segmux_image_predictor* p) : p_(p) {}
  ImagePredictor(ImagePredictor&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  ImagePredictor(const ImagePredictor&) = delete;
  ImagePredictor& operator=(const ImagePredictor&) = delete;
  ImagePredictor& operator=(ImagePredictor&&) = delete;
  ~ImagePredictor() { segmux_image_predictor_close(p_); }

  Prediction predict(const PredictPrompt& prompt) {
    const segmux_predict_prompt q = prompt.c_prompt();
    segmux_prediction* out = nullptr;
    detail::check(segmux_image_predictor_predict(p_, &q, &out));
    return Prediction(out);
  }
  segmux_image_predictor* get() const { return p_; }

 private:
  segmux_image_predictor* p_;
};

class Model {
 public:
  struct Options {
    std::string model_dir_, checkpoint_, config_, vocab_, cache_dir_, control_config_, precision_;
    int num_threads_ = 0;  // 0: segmux_model_options_init's default (the cores this process may use)
    Options& model_dir(std::string v) { return model_dir_ = std::move(v), *this; }
    Options& checkpoint(std::string v) { return checkpoint_ = std::move(v), *this; }
    Options& config(std::string v) { return config_ = std::move(v), *this; }
    Options& vocab(std::string v) { return vocab_ = std::move(v), *this; }
    Options& cache_dir(std::string v) { return cache_dir_ = std::move(v), *this; }
    Options& control_config(std::string v) { return control_config_ = std::move(v), *this; }
    Options& num_threads(int v) { return num_threads_ = v, *this; }
    Options& precision(std::string v) { return precision_ = std::move(v), *this; }  // "fp32" (default) or "bf16"
  };

  explicit Model(const Options& o) {
    segmux_model_options mo;
    segmux_model_options_init(&mo);
    auto str = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
    mo.model_dir = str(o.model_dir_);
    mo.checkpoint = str(o.checkpoint_);
    mo.config = str(o.config_);
    mo.vocab = str(o.vocab_);
    mo.cache_dir = str(o.cache_dir_);
    mo.control_config = str(o.control_config_);
    mo.precision = str(o.precision_);
    if (o.num_threads_ != 0) mo.num_threads = o.num_threads_;
    detail::check(segmux_model_open(&mo, &m_));
  }
  Model(Model&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model& operator=(Model&&) = delete;
  ~Model() { segmux_model_close(m_); }

  Session open_video(const std::string& path) {
    segmux_session* s = nullptr;
    detail::check(segmux_session_open_video(m_, path.c_str(), &s));
    return Session(s);
  }
  Session open_live(int width, int height, int keep_frames = 0) {
    segmux_session* s = nullptr;
    detail::check(segmux_session_open_live(m_, width, height, keep_frames, &s));
    return Session(s);
  }
  // One image file (the official image processor, as `segmux segment`): each text with the boxes
  // (normalised x, y, w, h, each positive) as exemplars. Masks may overlap.
  Frame segment_file(const std::string& path, const std::vector<std::string>& texts,
                     const std::vector<float>& boxes_xywh = {}, float threshold = 0.5f) {
    std::vector<const char*> t;
    for (const std::string& s : texts) t.push_back(s.c_str());
    const std::vector<int> labels(boxes_xywh.size() / 4, 1);
    segmux_image_prompt p;
    segmux_image_prompt_init(&p);
    p.texts = t.data();
    p.num_texts = t.size();
    p.boxes_xywh = boxes_xywh.data();
    p.box_labels = labels.data();
    p.num_boxes = labels.size();
    p.threshold = threshold;
    segmux_frame* out = nullptr;
    detail::check(segmux_model_segment_file(m_, path.c_str(), &p, &out));
    return Frame(out);
  }
  // The SAM-1-style interactive predictor on an image file, or on RGB u8 rows `stride` bytes apart.
  ImagePredictor open_image_predictor(const std::string& path) {
    segmux_image_predictor* p = nullptr;
    detail::check(segmux_image_predictor_open_file(m_, path.c_str(), &p));
    return ImagePredictor(p);
  }
  ImagePredictor open_image_predictor(const uint8_t* rgb, int width, int height, size_t stride = 0) {
    segmux_image_predictor* p = nullptr;
    detail::check(segmux_image_predictor_open(m_, rgb, width, height, stride, &p));
    return ImagePredictor(p);
  }
  segmux_model* get() const { return m_; }

 private:
  segmux_model* m_ = nullptr;
};

inline std::string version() { return segmux_version(); }

}  // namespace segmux

#endif  // SEGMUX_SEGMUX_HPP
