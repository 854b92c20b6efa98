// The SAM-1-style interactive image predictor with the official semantics (SAM3InteractiveImagePredictor of
// facebookresearch/sam3, sam1_task_predictor.py, as Sam3Image.predict_inst drives it), on the SAM 3.1 tracker's
// interactive SAM heads: points, a box and / or low-res mask logits from a previous call in; every candidate
// mask (three with multimask_output, else one), its predicted IoU score and its low-res logits out.
//   image     : the image processor's pre-processing (preprocess_image) and backbone; the interactive head
//   prompts   : points (x, y) in image pixels -> / (W, H) * image_size; a box x0,y0,x1,y1 becomes two points
//               labelled 2 / 3 placed before the clicks; mask_input (1, Hm, Wm) logits -> mask_downscaling
//   selection : multimask -> mask tokens 1..3; single -> token 0 unless unstable (dynamic multimask)
//   outputs   : low-res logits clamped to [-32, 32]; masks = holes (<= max_hole_area, 8-connected) filled,
//               bilinear to the image size (align_corners False), > mask_threshold unless return_logits
// Several images (official set_image_batch / predict_batch): set_images, then predict(prompt, image_index).
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "pipeline/backends/model.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

struct ImagePredictorOptions {  // the official constructor's defaults
  float mask_threshold = 0.0f;
  int max_hole_area = 256;
  int max_sprinkle_area = 0;
};

struct ImagePrompt {
  std::vector<std::array<float, 2>> points;  // x, y in image pixels
  std::vector<int> labels;                   // per point: 1 foreground, 0 background
  std::optional<std::array<float, 4>> box;   // x0, y0, x1, y1 in image pixels
  Tensor mask_input;                         // f32 [1, Hm, Wm] or [Hm, Wm] low-res logits; undefined: none
  bool multimask_output = true;
  bool return_logits = false;
};

struct ImagePrediction {
  int width = 0, height = 0;
  std::vector<float> scores;      // C predicted IoU scores (C = 3 with multimask_output, else 1)
  Tensor low_res_logits;          // f32 [C, Hm, Wm], clamped to [-32, 32]: feed one back as mask_input
  Tensor logits;                  // f32 [C, H, W] at the image size (return_logits only)
  std::vector<BinaryMask> masks;  // C masks at the image size (not with return_logits)
};

// The prompt's problems in words (label count, label values, points or box outside the image, a box
// that is empty, a mask_input of the wrong shape or with non-finite values, no prompt at all); "" if none.
std::string image_prompt_error(const ImagePrompt& p, int width, int height, int low_res_size);

class ImagePredictor {
 public:
  // A session of `model` of its own holds the images' features (the model outlives the predictor).
  explicit ImagePredictor(Model& model, ImagePredictorOptions options = {});
  ~ImagePredictor();
  ImagePredictor(const ImagePredictor&) = delete;
  ImagePredictor& operator=(const ImagePredictor&) = delete;
  // Official set_image: the backbone on one image; every predict() until the next set_image reuses it.
  void set_image(const RgbImage& image);
  // Official set_image_batch: the backbone on every image; predict(prompt, i) asks image i.
  void set_images(const std::vector<RgbImage>& images);
  int image_count() const { return int(sizes_.size()); }
  // Official predict (predict_batch's per-image step for image_index > 0). Bad prompts: an error
  // naming the problem (image_prompt_error).
  ImagePrediction predict(const ImagePrompt& prompt, int image_index = 0);

 private:
  void release();
  std::unique_ptr<ModelSession> session_;
  ImagePredictorOptions opt_;
  std::vector<std::array<int, 2>> sizes_;  // width, height per image
};

}  // namespace segmux::pipeline
