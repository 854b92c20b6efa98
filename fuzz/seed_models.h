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
#include "ir/op_schema.h"
#include "onnx/onnx_io.h"

namespace segmux::fuzz {

inline Tensor seed_tensor(const Shape& shape) {
  Tensor t(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i % 7) * 0.125f - 0.25f;
  return t;
}

// Small graphs: a MatMul; with Add+Relu; with a shape chain, Softmax and an Identity output; then the
// ops whose attributes and shape inputs hostile models aim at: Conv, the pools, Resize, Reshape.
inline std::vector<ir::Graph> seed_graphs() {
  std::vector<ir::Graph> out;
  for (int variant = 0; variant < 3; ++variant) {
    ir::Graph g;
    g.name = "seed" + std::to_string(variant);
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 4});
    int y = b.op1("MatMul", {x, b.constant(seed_tensor({4, 4}), "w")});
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
  using Ints = std::vector<int64_t>;
  {  // Conv (padded, strided, dilated) + bias
    ir::Graph g;
    g.name = "seed_conv";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {1, 2, 7, 7});
    int y = b.op1("Conv", {x, b.constant(seed_tensor({3, 2, 3, 3}), "w"), b.constant(seed_tensor({3}), "b")},
                  {{"strides", Ints{2, 1}}, {"pads", Ints{1, 1, 1, 0}}, {"dilations", Ints{1, 2}}});
    b.output(b.op1("Relu", {y}), "y");
    out.push_back(std::move(g));
  }
  {  // MaxPool, AveragePool, LpPool
    ir::Graph g;
    g.name = "seed_pools";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {1, 2, 8, 8});
    int m = b.op1("MaxPool", {x}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    int a = b.op1("AveragePool", {x},
                  {{"kernel_shape", Ints{3, 3}},
                   {"strides", Ints{2, 2}},
                   {"pads", Ints{1, 1, 0, 0}},
                   {"count_include_pad", int64_t(1)}});
    b.output(b.op1("Add", {m, a}), "y");
    b.output(b.op1("LpPool", {x}, {{"kernel_shape", Ints{2, 2}}, {"p", int64_t(2)}}), "lp");
    out.push_back(std::move(g));
  }
  {  // Resize by scales (linear) and by sizes (nearest)
    ir::Graph g;
    g.name = "seed_resize";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {1, 1, 4, 4});
    Tensor scales = Tensor::from_vector<float>({4}, {1.f, 1.f, 2.f, 1.5f});
    int roi = b.constant(Tensor::from_vector<float>({0}, {}), "roi");
    b.output(b.op1("Resize", {x, roi, b.constant(scales, "scales")}, {{"mode", std::string("linear")}}), "up");
    int none = b.constant(Tensor::from_vector<float>({0}, {}), "no_scales");
    b.output(b.op1("Resize", {x, roi, none, b.ints({1, 1, 3, 5})}, {{"mode", std::string("nearest")}}), "sized");
    out.push_back(std::move(g));
  }
  {  // Reshape with -1 and 0, Transpose, Flatten
    ir::Graph g;
    g.name = "seed_reshape";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 3, 4});
    int y = b.op1("Reshape", {x, b.ints({4, -1})});
    y = b.op1("Transpose", {y}, {{"perm", Ints{1, 0}}});
    y = b.op1("Reshape", {y, b.ints({0, 2, 2})});
    b.output(b.op1("Flatten", {y}, {{"axis", int64_t(1)}}), "y");
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

// The ONNX seeds: the graphs after shape inference (every value typed), as an exporter would see them.
inline void write_onnx_seeds_if_asked() {
  write_seeds_if_asked([](const ir::Graph& g) {
    ir::Graph typed = g;
    ir::infer_shapes(typed);
    return onnx_io::export_onnx_bytes(typed);
  });
}

}  // namespace segmux::fuzz
