// bench_image_batch: does running several images through the SAM 3.1 backbone in ONE call pay on this
// CPU (official set_image_batch), against one call per image? The backbone is the real candidate
// builder (models/sam31/backbone.cpp) at batch 1 and at batch B, compiled by our compiler and run by our
// Executor, with random weights of the official shapes; full width, full image size (config sizes),
// the ViT cut to `depth` blocks (the last one global) so that it fits the machine: per-block work is
// what batching changes. Runs are interleaved (batch 1 x B calls, then one batch-B call) and the
// median and best per-image times printed with their ratio.
// Usage: bench_image_batch [threads=2] [batch=2] [reps=3] [depth=2] [image_size=config]
#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "bench_common.h"
#include "compiler/compile.h"
#include "models/sam31/backbone.h"
#include "models/sam31/config.h"
#include "models/sam31/state_dict.h"

using namespace segmux;
using namespace segmux::bench;

namespace {

// Random weights for every vision-backbone entry of the official state dict (the other candidates'
// weights are not needed here).
sam31::Weights backbone_weights(const sam31::ModelConfig& cfg) {
  sam31::Weights w;
  uint32_t seed = 1;
  for (const sam31::ExpectedTensor& e : sam31::expected_state_dict(cfg)) {
    if (e.key.rfind("detector.backbone.vision_backbone.", 0) != 0 &&
        e.key.rfind("tracker.model.sam_mask_decoder.conv_s", 0) != 0)
      continue;
    w.set(e.key, random_f32(e.weights_shape(), seed++, -0.05f, 0.05f));
  }
  return w;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int B = argc > 2 ? std::atoi(argv[2]) : 2;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  const int depth = argc > 4 ? std::atoi(argv[4]) : 2;
  SEGMUX_CHECK(threads > 0 && B > 1 && reps > 0 && depth > 0, "bad arguments");
  omp_set_num_threads(threads);
  sam31::ModelConfig cfg = sam31::default_config();
  if (argc > 5) cfg.image_size = std::atoi(argv[5]);
  cfg.vit_depth = depth;
  cfg.vit_global = {depth - 1};
  const sam31::Weights w = backbone_weights(cfg);
  std::printf("bench_image_batch: image %d, width %d, %d ViT blocks (last global), batch %d, %d thread(s)\n",
              cfg.image_size, cfg.vit_dim, depth, B, threads);
  struct Peer {
    std::unique_ptr<Executor> ex;
    Tensor input;
    std::vector<double> per_image;
  };
  Peer one, many;
  for (Peer* p : {&one, &many}) {
    sam31::BackboneOptions o;
    o.batch = p == &one ? 1 : B;
    ir::Graph g = sam31::build_backbone(cfg, w, o);
    compiler::CompileOptions co;
    compiler::CompileResult r = compiler::compile_graph(g, co);
    std::printf("  batch %d: %zu nodes, arena %.0f MiB\n", int(o.batch), r.graph.nodes.size(),
                double(r.plan.arena_bytes) / (1 << 20));
    ExecutorOptions eo;
    eo.num_threads = threads;
    p->ex = std::make_unique<Executor>(r.graph, r.plan, eo);
    p->input = random_f32({o.batch, 3, cfg.image_size, cfg.image_size}, 7, -1.f, 1.f);
    p->ex->run({{"image", p->input}});  // warm-up
  }
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = now_s();
    for (int i = 0; i < B; ++i) one.ex->run({{"image", one.input}});
    one.per_image.push_back((now_s() - t0) / B);
    t0 = now_s();
    many.ex->run({{"image", many.input}});
    many.per_image.push_back((now_s() - t0) / B);
  }
  const double m1 = median(one.per_image), mb = median(many.per_image);
  const double b1 = *std::min_element(one.per_image.begin(), one.per_image.end());
  const double bb = *std::min_element(many.per_image.begin(), many.per_image.end());
  std::printf("  per image, %d calls at batch 1: median %.3f s, best %.3f s\n", B, m1, b1);
  std::printf("  per image, 1 call at batch %d:   median %.3f s, best %.3f s\n", B, mb, bb);
  std::printf("  batch %d / batch 1 per-image time: median %.3f, best %.3f (< 1: batching pays)\n", B, mb / m1,
              bb / b1);
  return 0;
}
