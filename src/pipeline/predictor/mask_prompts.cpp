#include "pipeline/predictor/mask_prompts.h"

#include "core/error.h"
#include "ir/builder.h"
#include "runtime/interpreter.h"

namespace segmux::pipeline {

bool is_mask_prompt(const Prompt& p) { return p.mask.has_value(); }

std::vector<float> resize_antialias_plane(const std::vector<float>& plane, int height, int width, int out_height,
                                          int out_width) {
  SEGMUX_CHECK(
      height > 0 && width > 0 && out_height > 0 && out_width > 0 && plane.size() == size_t(height) * size_t(width),
      "resize_antialias_plane: bad sizes");
  // segmux.ResizeAntialias is torch's antialiased bilinear kernel (kernels/reference/resize.cpp).
  ir::Graph g;
  ir::GraphBuilder b(g);
  const int x = b.input("x", DType::f32, {1, 1, height, width});
  b.output(b.op1("ResizeAntialias", {x}, {{"sizes", std::vector<int64_t>{out_height, out_width}}}, "segmux"), "y");
  segmux::Interpreter session(std::move(g), segmux::InterpreterOptions{1, false});
  const Tensor y = session.run({{"x", Tensor::from_vector<float>({1, 1, height, width}, plane)}}).at("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

MaskInputs tracker_mask_inputs(const Prompt& p, int video_height, int video_width, int input_mask_size) {
  SEGMUX_CHECK(p.mask.has_value(), "add_prompt: no mask");
  const BinaryMask& m = *p.mask;
  SEGMUX_CHECK(p.obj_id.has_value(), "add_prompt: a mask prompt needs an obj_id (the object it creates or refines)");
  SEGMUX_CHECK(!p.text && p.boxes_xywh.empty(),
               "add_prompt: a mask is for one object: no text or bounding_boxes with it");
  SEGMUX_CHECK(p.points_xy.empty() && p.point_labels.empty() && !p.object_box,
               "add_prompt: a mask prompt excludes points and object_box (give them in a separate prompt)");
  SEGMUX_CHECK(m.height > 0 && m.width > 0, "add_prompt: the mask is empty (", m.height, "x", m.width, " pixels)");
  SEGMUX_CHECK(m.pixels.size() == size_t(m.height) * size_t(m.width), "add_prompt: the mask holds ", m.pixels.size(),
               " pixels for ", m.height, "x", m.width);
  // A mask as large as 64x the video is surely a mistake, and bounds the work.
  SEGMUX_CHECK(int64_t(m.height) * m.width <= int64_t(64) * video_height * video_width + (int64_t(1) << 20),
               "add_prompt: the mask (", m.height, "x", m.width, ") is far larger than the video (", video_height, "x",
               video_width, ")");
  int64_t area = 0;
  for (uint8_t v : m.pixels) {
    SEGMUX_CHECK(v <= 1, "add_prompt: the mask is not binary (a pixel holds ", int(v), "; expected 0 or 1)");
    area += v;
  }
  SEGMUX_CHECK(area > 0, "add_prompt: the mask of object ", *p.obj_id, " has no foreground pixel");

  const std::vector<float> plane(m.pixels.begin(), m.pixels.end());
  MaskInputs in;
  const bool at_input_size = m.height == input_mask_size && m.width == input_mask_size;
  in.input_mask = Tensor::from_vector<float>(
      {1, input_mask_size, input_mask_size},
      at_input_size ? plane : resize_antialias_plane(plane, m.height, m.width, input_mask_size, input_mask_size));
  if (m.height == video_height && m.width == video_width) {
    in.video_mask = m;
  } else {
    const std::vector<float> v = resize_antialias_plane(plane, m.height, m.width, video_height, video_width);
    in.video_mask = BinaryMask(video_height, video_width);
    for (size_t i = 0; i < v.size(); ++i) in.video_mask.pixels[i] = v[i] > 0.5f;
  }
  SEGMUX_CHECK(in.video_mask.area() > 0, "add_prompt: the mask of object ", *p.obj_id,
               " has no foreground pixel at the video size ", video_width, "x", video_height, " (too thin to resize)");
  return in;
}

}  // namespace segmux::pipeline
