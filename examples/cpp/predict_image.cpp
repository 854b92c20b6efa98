// Clicks on an image with the SAM-1-style interactive predictor of the segmux C++ wrapper
// (segmux/segmux.hpp), as the official sam3_for_sam1_task notebook does: the first click gives three
// candidate masks with their scores, the best one is picked, and each further click is asked with all
// the clicks so far plus the picked candidate's low-res logits as mask_input, for one mask.
//
//   predict_image_cpp MODEL_DIR IMAGE X,Y [X,Y ...]
//   predict_image_cpp --checkpoint WEIGHTS CONFIG VOCAB IMAGE X,Y [X,Y ...]
// X,Y in pixels of the image; X,Y:neg for a background click.
#include <segmux/segmux.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Click {
  float x = 0, y = 0;
  bool positive = true;
};

bool parse_click(const char* text, Click* c) {
  char tail[8] = {};
  const int n = std::sscanf(text, "%f,%f%7s", &c->x, &c->y, tail);
  c->positive = std::strcmp(tail, ":neg") != 0;
  return n == 2 || (n == 3 && !c->positive);
}

}  // namespace

int main(int argc, char** argv) {
  segmux::Model::Options opt;
  int first = 0;
  if (argc >= 4 && std::strcmp(argv[1], "--checkpoint") != 0) {
    opt.model_dir(argv[1]);
    first = 2;
  } else if (argc >= 7 && std::strcmp(argv[1], "--checkpoint") == 0) {
    opt.checkpoint(argv[2]).config(argv[3]).vocab(argv[4]);
    first = 5;
  } else {
    std::fprintf(stderr,
                 "usage: predict_image_cpp MODEL_DIR IMAGE X,Y[:neg]... | "
                 "predict_image_cpp --checkpoint WEIGHTS CONFIG VOCAB IMAGE X,Y[:neg]...\n");
    return 2;
  }
  const std::string image = argv[first];
  std::vector<Click> clicks;
  for (int i = first + 1; i < argc; ++i) {
    Click c;
    if (!parse_click(argv[i], &c)) {
      std::fprintf(stderr, "predict_image_cpp: '%s' is not a click X,Y or X,Y:neg\n", argv[i]);
      return 2;
    }
    clicks.push_back(c);
  }
  try {
    segmux::Model model(opt);
    segmux::ImagePredictor predictor = model.open_image_predictor(image);
    segmux::PredictPrompt prompt;
    prompt.point(clicks[0].x, clicks[0].y, clicks[0].positive);
    segmux::Prediction candidates = predictor.predict(prompt);
    std::printf("click 1: %zu candidates on %dx%d\n", candidates.size(), candidates.width(), candidates.height());
    for (size_t i = 0; i < candidates.size(); ++i)
      std::printf("candidate %zu: score %.6f area %zu\n", i, candidates.score(i), candidates.area(i));
    size_t picked = candidates.best();
    std::printf("picked candidate %zu\n", picked);
    // Later clicks: every click so far, the picked mask's low-res logits fed back, one mask out.
    prompt.single_mask();
    for (size_t k = 1; k < clicks.size(); ++k) {
      prompt.point(clicks[k].x, clicks[k].y, clicks[k].positive).mask_input(candidates, picked);
      candidates = predictor.predict(prompt);
      picked = 0;
      std::printf("click %zu: score %.6f area %zu\n", k + 1, candidates.score(0), candidates.area(0));
    }
    return 0;
  } catch (const segmux::Exception& e) {
    std::fprintf(stderr, "predict_image_cpp: %s\n", e.what());
    return 1;
  }
}
