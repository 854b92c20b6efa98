// Seed corpora for the fuzz targets, generated at run time (scripts/fuzz.sh): each target, started
// with SEGMUX_FUZZ_WRITE_SEEDS=DIR, writes a few small valid inputs to DIR and exits.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "io/safetensors.h"
#include "ir/builder.h"

namespace segmux::fuzz {

// Three small graphs: a MatMul; with Add+Relu; with a shape chain, Softmax and an Identity output.
inline std::vector<ir::Graph> seed_graphs() {
  std::vector<ir::Graph> out;
  for (int variant = 0; variant < 3; ++variant) {
    ir::Graph g;
    g.name = "seed" + std::to_string(variant);
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 4});
    Tensor w(DType::f32, {4, 4});
    for (int i = 0; i < 16; ++i) w.data<float>()[i] = float(i % 5) * 0.25f;
    int y = b.op1("MatMul", {x, b.constant(w, "w")});
    if (variant >= 1) y = b.op1("Relu", {b.op1("Add", {y, b.scalar_f32(0.5f)})});
    if (variant >= 2) {
      int shape = b.op1("Shape", {y});
      int d0 = b.op1("Gather", {shape, b.ints({0})}, {{"axis", int64_t(0)}});
      y = b.op1("Reshape", {y, b.op1("Concat", {d0, b.ints({-1})}, {{"axis", int64_t(0)}})});
      y = b.op1("Softmax", {y}, {{"axis", int64_t(-1)}});
    }
    b.output(b.op1("Identity", {y}), "y");
    out.push_back(std::move(g));
  }
  return out;
}

// Calls write(dir, graph, index) for each seed graph when SEGMUX_FUZZ_WRITE_SEEDS is set, then exits.
template <typename WriteFn>
void write_seeds_if_asked(WriteFn write) {
  const char* dir = std::getenv("SEGMUX_FUZZ_WRITE_SEEDS");
  if (!dir) return;
  // A seed that cannot be written is reported and skipped; at least one must succeed.
  int written = 0;
  auto graphs = seed_graphs();
  for (size_t i = 0; i < graphs.size(); ++i) {
    try {
      std::string bytes = write(graphs[i]);
      std::string path = std::string(dir) + "/seed" + std::to_string(i);
      write_file_atomic(path, bytes.data(), bytes.size());
      ++written;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz seed %zu skipped: %s\n", i, e.what());
    }
  }
  std::exit(written > 0 ? 0 : 1);
}

}  // namespace segmux::fuzz
