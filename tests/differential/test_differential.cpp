// Differential tests against ONNX Runtime: small generated graphs (GraphBuilder) of the ops segmux
// supports, seeded random inputs, exported to ONNX and run through ORT, through our Interpreter with
// reference kernels and with optimized kernels, and through Interpreter again after ONNX re-import
// (which must be bit-identical to the original graph). Each case states its tolerance
// (|ours - ort| <= atol + rtol * |ort|; integer and bool outputs exact). The worst absolute and
// relative differences per case are printed at the end. Skips when ONNX Runtime is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iomanip>
#include <random>

#include "ir/builder.h"
#include "onnx/onnx_io.h"
#include "runtime/interpreter.h"
#include "verify/ort_peer.h"

namespace segmux {
namespace {

using ir::Attrs;
using ir::GraphBuilder;

// How to fill one graph input.
struct InputSpec {
  enum Kind { uniform, ints, boolean, given } kind = uniform;
  double lo = -1, hi = 1;  // uniform range, or int range [lo, hi]
  Tensor value;            // kind == given
};

struct Case {
  std::string name;
  std::function<void(GraphBuilder&)> build;  // adds inputs, ops and outputs
  std::map<std::string, InputSpec> specs;    // per input name; default uniform [-1, 1]
  double atol = 1e-5, rtol = 1e-5;
};

struct Worst {
  std::string name;
  std::string which;
  double abs = 0, rel = 0;
};
std::vector<Worst>& worst_table() {
  static std::vector<Worst> t;
  return t;
}

Tensor make_input(const ir::Value& v, const InputSpec& spec, std::mt19937& rng) {
  if (spec.kind == InputSpec::given) return spec.value;
  Tensor t(v.dtype, v.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x;
    if (spec.kind == InputSpec::boolean)
      x = double(rng() & 1);
    else if (spec.kind == InputSpec::ints)
      x = double(std::uniform_int_distribution<int64_t>(int64_t(spec.lo), int64_t(spec.hi))(rng));
    else
      x = std::uniform_real_distribution<double>(spec.lo, spec.hi)(rng);
    t.set_from_double(i, x);
  }
  return t;
}

// Compares ours against ORT's output; returns the worst differences and whether all are within tolerance.
bool within(const Tensor& ours, const Tensor& ort, const Case& c, Worst* w, std::string* detail) {
  if (ours.dtype() != ort.dtype() || ours.shape() != ort.shape()) {
    *detail = "dtype/shape " + std::string(dtype_name(ours.dtype())) + shape_str(ours.shape()) + " vs ORT " +
              std::string(dtype_name(ort.dtype())) + shape_str(ort.shape());
    return false;
  }
  const bool exact = !dtype_is_float(ort.dtype());
  bool ok = true;
  for (int64_t i = 0; i < ort.numel(); ++i) {
    double a = ours.get_as_double(i), b = ort.get_as_double(i);
    if ((std::isnan(a) && std::isnan(b)) || a == b) continue;
    double d = std::fabs(a - b), rel = d / std::max(std::fabs(b), 1e-30);
    if (std::isnan(d)) d = rel = INFINITY;
    w->abs = std::max(w->abs, d);
    w->rel = std::max(w->rel, std::fabs(b) > 1e-3 ? rel : 0.0);
    bool good = exact ? false : d <= c.atol + c.rtol * std::fabs(b);
    if (!good && ok) {
      std::ostringstream os;
      os << "element " << i << ": ours " << a << ", ORT " << b;
      *detail = os.str();
      ok = false;
    }
  }
  return ok;
}

std::string skip_reason(const std::string& msg) {
  // An op the kernel library does not have yet is a skip, not a failure.
  for (const char* s : {"unknown op type", "no kernel", "No kernel", "not supported by segmux"})
    if (msg.find(s) != std::string::npos) return msg;
  return "";
}

void run_case(const Case& c) {
  std::string why;
  if (!ort_available(&why)) GTEST_SKIP() << "ONNX Runtime unavailable: " << why;
  ir::Graph g;
  try {
    GraphBuilder b(g);
    c.build(b);
  } catch (const Error& e) {
    std::string s = skip_reason(e.what());
    if (!s.empty()) GTEST_SKIP() << s;
    FAIL() << "building the graph: " << e.what();
  }
  std::mt19937 rng(uint32_t(std::hash<std::string>{}(c.name)));
  std::map<std::string, Tensor> inputs;
  for (int v : g.inputs) {
    const ir::Value& val = g.value(v);
    auto it = c.specs.find(val.name);
    inputs[val.name] = make_input(val, it == c.specs.end() ? InputSpec{} : it->second, rng);
  }
  const std::string bytes = onnx_io::export_onnx_bytes(g);
  auto ort_out = verify::OrtPeer::from_bytes(bytes)->run(inputs);

  std::map<std::string, Tensor> reference;
  for (bool optimized : {false, true}) {
    std::map<std::string, Tensor> ours;
    try {
      ours = Interpreter(g, InterpreterOptions{.num_threads = optimized ? 2 : 1, .use_optimized_kernels = optimized})
                 .run(inputs);
    } catch (const Error& e) {
      std::string s = skip_reason(e.what());
      if (!s.empty()) GTEST_SKIP() << s;
      FAIL() << (optimized ? "optimized" : "reference") << " session: " << e.what();
    }
    if (!optimized) reference = ours;
    Worst w{c.name, optimized ? "optimized" : "reference"};
    for (int v : g.outputs) {
      const std::string& name = g.value(v).name;
      std::string detail;
      ASSERT_TRUE(ours.count(name) && ort_out.count(name)) << name;
      EXPECT_TRUE(within(ours.at(name), ort_out.at(name), c, &w, &detail))
          << c.name << " (" << w.which << " kernels) output '" << name << "': " << detail << " (atol " << c.atol
          << ", rtol " << c.rtol << ")";
    }
    worst_table().push_back(w);
  }
  // Export -> import -> run: bit-identical to running the original graph.
  ir::Graph back = onnx_io::import_onnx_bytes(bytes, c.name);
  auto again = Interpreter(back, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false}).run(inputs);
  for (auto& [name, t] : reference) {
    ASSERT_TRUE(again.count(name)) << name;
    EXPECT_TRUE(again.at(name).identical(t)) << c.name << ": output '" << name << "' differs after ONNX round trip";
  }
}

Tensor rand_const(DType dt, const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  Tensor t(dt, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, std::uniform_real_distribution<double>(lo, hi)(rng));
  return t;
}

InputSpec range(double lo, double hi) { return InputSpec{InputSpec::uniform, lo, hi, {}}; }
InputSpec int_range(double lo, double hi) { return InputSpec{InputSpec::ints, lo, hi, {}}; }
InputSpec bools() { return InputSpec{InputSpec::boolean, 0, 1, {}}; }

// Single-op graph: one f32 input per shape, the op, one output.
Case unary(const std::string& op, Attrs attrs = {}, Shape shape = {2, 3, 4, 5}, InputSpec spec = {}, double atol = 1e-6,
           double rtol = 1e-5) {
  Case c;
  c.name = op;
  c.build = [=](GraphBuilder& b) {
    int x = b.input("x", DType::f32, shape);
    b.output(b.op1(op, {x}, attrs), "y");
  };
  c.specs["x"] = spec;
  c.atol = atol;
  c.rtol = rtol;
  return c;
}

Case binary(const std::string& op, Shape a, Shape bs, InputSpec spec_b = {}, DType dt = DType::f32) {
  Case c;
  c.name = op + shape_str(a) + shape_str(bs);
  c.build = [=](GraphBuilder& b) {
    int x = b.input("a", dt, a);
    int y = b.input("b", dt, bs);
    b.output(b.op1(op, {x, y}), "y");
  };
  c.specs["b"] = spec_b;
  if (dt != DType::f32) c.specs["a"] = c.specs["b"] = int_range(-20, 20);
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  // ---- linear algebra
  cs.push_back({"MatMul_batched_broadcast",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 1, 4, 16});
                  int w = b.input("w", DType::f32, {3, 16, 5});
                  b.output(b.op1("MatMul", {x, w}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"MatMul_const_weight",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 7, 24});
                  int w = b.constant(rand_const(DType::f32, {24, 12}, 1), "w");
                  b.output(b.op1("MatMul", {x, w}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"Gemm_transB_alpha_beta",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {6, 10});
                  int w = b.constant(rand_const(DType::f32, {8, 10}, 2), "w");
                  int bias = b.constant(rand_const(DType::f32, {8}, 3), "bias");
                  b.output(b.op1("Gemm", {x, w, bias}, {{"transB", int64_t(1)}, {"alpha", 0.5f}, {"beta", 2.0f}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"Einsum_attention_scores",
                [](GraphBuilder& b) {
                  int q = b.input("q", DType::f32, {2, 3, 5, 8});
                  int k = b.input("k", DType::f32, {2, 3, 6, 8});
                  b.output(b.op1("Einsum", {q, k}, {{"equation", std::string("bhqd,bhkd->bhqk")}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"Einsum_transpose_sum",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {4, 5, 6});
                  b.output(b.op1("Einsum", {x}, {{"equation", std::string("ijk->kj")}}), "y");
                },
                {},
                1e-5,
                1e-4});
  // ---- convolutions
  cs.push_back({"Conv_stride2_pad1_bias",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 3, 11, 9});
                  int w = b.constant(rand_const(DType::f32, {4, 3, 3, 3}, 4), "w");
                  int bias = b.constant(rand_const(DType::f32, {4}, 5), "bias");
                  b.output(b.op1("Conv", {x, w, bias},
                                 {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                           "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"Conv_dilated_asym_pads",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 4, 10, 10});
                  int w = b.constant(rand_const(DType::f32, {6, 4, 3, 2}, 6), "w");
                  b.output(
                      b.op1("Conv", {x, w},
                            {{"dilations", std::vector<int64_t>{2, 1}}, {"pads", std::vector<int64_t>{0, 1, 2, 0}}}),
                      "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back(
      {"Conv_depthwise",
       [](GraphBuilder& b) {
         int x = b.input("x", DType::f32, {1, 8, 9, 9});
         int w = b.constant(rand_const(DType::f32, {8, 1, 3, 3}, 7), "w");
         b.output(b.op1("Conv", {x, w}, {{"group", int64_t(8)}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "y");
       },
       {},
       1e-5,
       1e-4});
  cs.push_back({"Conv_1x1_grouped",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 8, 5, 6});
                  int w = b.constant(rand_const(DType::f32, {6, 4, 1, 1}, 8), "w");
                  b.output(b.op1("Conv", {x, w}, {{"group", int64_t(2)}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"ConvTranspose_stride2",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 4, 5, 5});
                  int w = b.constant(rand_const(DType::f32, {4, 3, 2, 2}, 9), "w");
                  int bias = b.constant(rand_const(DType::f32, {3}, 10), "bias");
                  b.output(b.op1("ConvTranspose", {x, w, bias}, {{"strides", std::vector<int64_t>{2, 2}}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"ConvTranspose_pads_outpad",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 4, 4, 5});
                  int w = b.constant(rand_const(DType::f32, {4, 2, 3, 3}, 11), "w");
                  b.output(b.op1("ConvTranspose", {x, w},
                                 {{"strides", std::vector<int64_t>{2, 2}},
                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                  {"output_padding", std::vector<int64_t>{1, 0}}}),
                           "y");
                },
                {},
                1e-5,
                1e-4});
  // ---- pooling
  cs.push_back(unary("MaxPool",
                     {{"kernel_shape", std::vector<int64_t>{3, 3}},
                      {"strides", std::vector<int64_t>{2, 2}},
                      {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                     {1, 3, 9, 8}));
  cs.push_back(unary("AveragePool",
                     {{"kernel_shape", std::vector<int64_t>{2, 3}},
                      {"strides", std::vector<int64_t>{2, 1}},
                      {"pads", std::vector<int64_t>{1, 1, 0, 1}},
                      {"count_include_pad", int64_t(0)}},
                     {1, 3, 7, 8}));
  cs.back().name = "AveragePool_exclude_pad";
  cs.push_back(unary("AveragePool",
                     {{"kernel_shape", std::vector<int64_t>{3, 3}},
                      {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                      {"count_include_pad", int64_t(1)},
                      {"ceil_mode", int64_t(1)},
                      {"strides", std::vector<int64_t>{2, 2}}},
                     {1, 2, 8, 8}));
  cs.back().name = "AveragePool_include_pad_ceil";
  cs.push_back(unary("GlobalAveragePool", {}, {2, 5, 4, 3}));
  // ---- normalization and softmax
  cs.push_back({"LayerNormalization",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 7, 32});
                  int s = b.constant(rand_const(DType::f32, {32}, 12, 0.5, 1.5), "scale");
                  int o = b.constant(rand_const(DType::f32, {32}, 13), "bias");
                  b.output(b.op1("LayerNormalization", {x, s, o}, {{"axis", int64_t(-1)}, {"epsilon", 1e-5f}}), "y");
                },
                {{"x", range(-3, 3)}},
                1e-5,
                1e-4});
  cs.push_back({"LayerNormalization_axis1",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 4, 5});
                  int s = b.constant(rand_const(DType::f32, {4, 5}, 14, 0.5, 1.5), "scale");
                  b.output(b.op1("LayerNormalization", {x, s}, {{"axis", int64_t(1)}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"BatchNormalization_inference",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 4, 3, 3});
                  int s = b.constant(rand_const(DType::f32, {4}, 15, 0.5, 1.5), "scale");
                  int o = b.constant(rand_const(DType::f32, {4}, 16), "bias");
                  int m = b.constant(rand_const(DType::f32, {4}, 17), "mean");
                  int v = b.constant(rand_const(DType::f32, {4}, 18, 0.2, 2.0), "var");
                  b.output(b.op1("BatchNormalization", {x, s, o, m, v}, {{"epsilon", 1e-3f}}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back({"InstanceNormalization",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 4, 5});
                  int s = b.constant(rand_const(DType::f32, {3}, 19, 0.5, 1.5), "scale");
                  int o = b.constant(rand_const(DType::f32, {3}, 20), "bias");
                  b.output(b.op1("InstanceNormalization", {x, s, o}), "y");
                },
                {},
                1e-5,
                1e-4});
  cs.push_back(unary("Softmax", {{"axis", int64_t(-1)}}, {2, 3, 17}, range(-8, 8)));
  cs.push_back(unary("Softmax", {{"axis", int64_t(1)}}, {2, 5, 3}, range(-8, 8)));
  cs.back().name = "Softmax_axis1";
  cs.push_back(unary("LogSoftmax", {{"axis", int64_t(-1)}}, {3, 11}, range(-8, 8), 1e-5, 1e-5));
  // ---- element-wise, broadcasting
  cs.push_back(binary("Add", {2, 3, 4, 5}, {4, 1}));
  cs.push_back(binary("Sub", {3, 1, 5}, {1, 4, 1}));
  cs.push_back(binary("Mul", {2, 3, 4, 5}, {}));
  cs.push_back(binary("Div", {2, 1, 6}, {3, 6}, range(0.5, 2)));
  cs.push_back(binary("Pow", {4, 5}, {5}, range(-2, 2)));
  cs.back().specs["a"] = range(0.1, 3);
  cs.push_back(binary("Max", {2, 3, 4}, {3, 1}));
  cs.push_back(binary("Min", {2, 3, 4}, {4}));
  cs.push_back(binary("Add", {3, 4}, {4}, {}, DType::i64));
  cs.back().name += "_i64";
  cs.push_back(binary("Less", {3, 4}, {4}));
  cs.push_back(binary("Equal", {3, 4}, {3, 1}, {}, DType::i64));
  cs.push_back({"Where_broadcast",
                [](GraphBuilder& b) {
                  int cnd = b.input("c", DType::boolean, {3, 1, 5});
                  int x = b.input("x", DType::f32, {4, 5});
                  int y = b.input("y", DType::f32, {3, 4, 1});
                  b.output(b.op1("Where", {cnd, x, y}), "out");
                },
                {{"c", bools()}}});
  for (const char* op :
       {"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Neg", "Abs", "Floor", "Ceil", "Sin", "Cos", "Softplus", "Sign"})
    cs.push_back(unary(op, {}, {2, 3, 4, 5}, range(-4, 4), 1e-6, 1e-5));
  cs.push_back(unary("Log", {}, {3, 7}, range(0.01, 10)));
  cs.push_back(unary("Sqrt", {}, {3, 7}, range(0, 10)));
  cs.push_back(unary("Reciprocal", {}, {3, 7}, range(0.5, 4)));
  cs.push_back(unary("LeakyRelu", {{"alpha", 0.2f}}, {3, 7}));
  cs.push_back(unary("HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}, {3, 7}, range(-4, 4)));
  cs.push_back(unary("Elu", {{"alpha", 0.7f}}, {3, 7}, range(-3, 3)));
  cs.push_back({"Clip_min_max", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {4, 6});
                  b.output(b.op1("Clip", {x, b.scalar_f32(-0.3f), b.scalar_f32(0.5f)}), "y");
                }});
  cs.push_back({"Cast_f32_to_i64_and_back",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 5});
                  int i = b.op1("Cast", {x}, {{"to", int64_t(7)}});  // INT64
                  b.output(i, "as_int");
                  b.output(b.op1("Cast", {i}, {{"to", int64_t(1)}}), "as_float");
                },
                {{"x", range(-50, 50)}}});
  // ---- resizing and sampling
  auto resize = [](const std::string& name, Attrs attrs, Shape in, std::vector<float> scales,
                   std::vector<int64_t> sizes, double atol) {
    Case c;
    c.name = name;
    c.build = [=](GraphBuilder& b) {
      int x = b.input("x", DType::f32, in);
      int roi = -1;
      int sc = scales.empty() ? -1 : b.constant(Tensor::from_vector<float>({int64_t(scales.size())}, scales), "scales");
      int sz = sizes.empty() ? -1 : b.ints(sizes);
      std::vector<int> ins = {x, roi, sc};
      if (sz >= 0) ins.push_back(sz);
      b.output(b.op1("Resize", ins, attrs), "y");
    };
    c.atol = atol;
    c.rtol = 1e-5;
    return c;
  };
  cs.push_back(resize("Resize_linear_half_pixel_up", {{"mode", std::string("linear")}}, {1, 2, 5, 7}, {1, 1, 2, 1.5f},
                      {}, 1e-6));
  cs.push_back(
      resize("Resize_linear_align_corners_sizes",
             {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}},
             {1, 2, 5, 7}, {}, {1, 2, 9, 4}, 1e-6));
  cs.push_back(
      resize("Resize_linear_down_pytorch_half_pixel",
             {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}},
             {1, 3, 8, 9}, {1, 1, 0.5f, 0.5f}, {}, 1e-6));
  cs.push_back(resize("Resize_nearest_asymmetric_floor",
                      {{"mode", std::string("nearest")},
                       {"coordinate_transformation_mode", std::string("asymmetric")},
                       {"nearest_mode", std::string("floor")}},
                      {1, 2, 4, 5}, {1, 1, 2, 3}, {}, 0));
  cs.push_back(resize("Resize_nearest_sizes_round_prefer_floor", {{"mode", std::string("nearest")}}, {1, 1, 6, 5}, {},
                      {1, 1, 4, 9}, 0));
  cs.push_back(resize("Resize_cubic", {{"mode", std::string("cubic")}, {"cubic_coeff_a", -0.75f}}, {1, 2, 6, 6},
                      {1, 1, 1.5f, 2}, {}, 1e-5));
  auto roi_align = [](const std::string& name, const std::string& mode, const std::string& ctm) {
    Case c;
    c.name = name;
    c.build = [=](GraphBuilder& b) {
      int x = b.input("x", DType::f32, {2, 3, 10, 12});
      int rois = b.constant(
          Tensor::from_vector<float>({3, 4}, {0.5f, 1.0f, 7.5f, 6.0f, 2.2f, 0.0f, 11.0f, 9.5f, 1.0f, 1.0f, 3.0f, 2.5f}),
          "rois");
      int idx = b.constant(Tensor::from_vector<int64_t>({3}, {0, 1, 1}), "batch_indices");
      b.output(b.op1("RoiAlign", {x, rois, idx},
                     {{"output_height", int64_t(4)},
                      {"output_width", int64_t(3)},
                      {"sampling_ratio", int64_t(2)},
                      {"spatial_scale", 0.9f},
                      {"mode", mode},
                      {"coordinate_transformation_mode", ctm}}),
               "y");
    };
    c.atol = 1e-5;
    c.rtol = 1e-5;
    return c;
  };
  cs.push_back(roi_align("RoiAlign_avg_half_pixel", "avg", "half_pixel"));
  cs.push_back(roi_align("RoiAlign_avg_output_half_pixel", "avg", "output_half_pixel"));
  cs.push_back(roi_align("RoiAlign_max_half_pixel", "max", "half_pixel"));
  // ---- indexing and reductions
  cs.push_back({"TopK_largest", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 10});
                  auto outs = b.op("TopK", {x, b.ints({4})}, {{"axis", int64_t(-1)}}, 2);
                  b.output(outs[0], "values");
                  b.output(outs[1], "indices");
                }});
  cs.push_back({"TopK_smallest_axis0", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {9, 4});
                  auto outs = b.op("TopK", {x, b.ints({3})}, {{"axis", int64_t(0)}, {"largest", int64_t(0)}}, 2);
                  b.output(outs[0], "values");
                  b.output(outs[1], "indices");
                }});
  cs.push_back({"Gather_axis1_negative_indices",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 6, 2});
                  int i = b.input("i", DType::i64, {2, 4});
                  b.output(b.op1("Gather", {x, i}, {{"axis", int64_t(1)}}), "y");
                },
                {{"i", int_range(-6, 5)}}});
  cs.push_back({"GatherElements",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {4, 5});
                  int i = b.input("i", DType::i64, {4, 3});
                  b.output(b.op1("GatherElements", {x, i}, {{"axis", int64_t(1)}}), "y");
                },
                {{"i", int_range(-5, 4)}}});
  cs.push_back({"Slice_steps_negative", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {6, 7, 8});
                  b.output(b.op1("Slice", {x, b.ints({5, 1}), b.ints({0, 100}), b.ints({0, 2}), b.ints({-2, 3})}), "y");
                }});
  cs.push_back({"ReduceMean_keepdims", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 4, 5});
                  b.output(b.op1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1, 3}}}), "y");
                }});
  cs.push_back({"ReduceSum_axes_input",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 4});
                  b.output(b.op1("ReduceSum", {x, b.ints({-1})}, {{"keepdims", int64_t(0)}}), "y");
                },
                {},
                1e-6,
                1e-5});
  cs.push_back({"ReduceMax", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 4, 5});
                  b.output(b.op1("ReduceMax", {x}, {{"axes", std::vector<int64_t>{0}}}), "y");
                }});
  cs.push_back({"ArgMax", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 7, 2});
                  b.output(b.op1("ArgMax", {x}, {{"axis", int64_t(1)}, {"keepdims", int64_t(0)}}), "y");
                }});
  cs.push_back(
      {"CumSum_reverse",
       [](GraphBuilder& b) {
         int x = b.input("x", DType::f32, {3, 6});
         b.output(b.op1("CumSum", {x, b.constant(Tensor::scalar<int64_t>(1), "axis")}, {{"reverse", int64_t(1)}}), "y");
       },
       {},
       1e-6,
       1e-5});
  // ---- shape manipulation
  cs.push_back({"Reshape_Transpose_Concat_Split", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 8});
                  int r = b.op1("Reshape", {x, b.ints({2, 3, 2, 4})});
                  int t = b.op1("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
                  int y = b.input("y", DType::f32, {2, 2, 1, 4});
                  int c = b.op1("Concat", {t, y}, {{"axis", int64_t(2)}});
                  auto parts = b.op("Split", {c, b.ints({1, 3})}, {{"axis", int64_t(2)}}, 2);
                  b.output(parts[0], "p0");
                  b.output(parts[1], "p1");
                }});
  cs.push_back({"Squeeze_Unsqueeze_Expand_Tile", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 3, 1, 2});
                  int s = b.op1("Squeeze", {x, b.ints({0, 2})});
                  int u = b.op1("Unsqueeze", {s, b.ints({1})});
                  int e = b.op1("Expand", {u, b.ints({2, 3, 4, 2})});
                  b.output(b.op1("Tile", {e, b.ints({1, 2, 1, 3})}), "y");
                }});
  for (const char* mode : {"constant", "reflect", "edge"}) {
    cs.push_back({std::string("Pad_") + mode, [mode](GraphBuilder& b) {
                    int x = b.input("x", DType::f32, {1, 2, 4, 5});
                    std::vector<int> ins = {x, b.ints({0, 0, 2, 1, 0, 0, 1, 3})};
                    if (std::string(mode) == "constant") ins.push_back(b.scalar_f32(0.25f));
                    b.output(b.op1("Pad", ins, {{"mode", std::string(mode)}}), "y");
                  }});
  }
  // ---- more indexing, data-dependent shapes and misc
  cs.push_back({"NonZero", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 5});
                  int m = b.op1("Greater", {x, b.scalar_f32(0.3f)});
                  b.output(b.op1("NonZero", {m}), "y");
                }});
  cs.push_back({"ScatterND", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {4, 3, 2});
                  int i = b.constant(Tensor::from_vector<int64_t>({2, 1}, {3, 1}), "idx");
                  int u = b.input("u", DType::f32, {2, 3, 2});
                  b.output(b.op1("ScatterND", {x, i, u}), "y");
                }});
  cs.push_back({"ScatterElements_axis1", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 5});
                  int i = b.constant(Tensor::from_vector<int64_t>({3, 2}, {0, 4, -1, 2, 1, 3}), "idx");
                  int u = b.input("u", DType::f32, {3, 2});
                  b.output(b.op1("ScatterElements", {x, i, u}, {{"axis", int64_t(1)}}), "y");
                }});
  cs.push_back({"GatherND_batch_dims", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 4, 3});
                  int i = b.constant(Tensor::from_vector<int64_t>({2, 2, 1}, {3, 0, 1, 2}), "idx");
                  b.output(b.op1("GatherND", {x, i}, {{"batch_dims", int64_t(1)}}), "y");
                }});
  cs.push_back({"Trilu_upper_k1", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 4, 5});
                  b.output(b.op1("Trilu", {x, b.constant(Tensor::scalar<int64_t>(1), "k")}), "y");
                }});
  cs.push_back({"DepthToSpace_CRD", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 8, 2, 3});
                  b.output(b.op1("DepthToSpace", {x}, {{"blocksize", int64_t(2)}, {"mode", std::string("CRD")}}), "y");
                }});
  cs.push_back({"Flatten_axis2", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 4, 5});
                  b.output(b.op1("Flatten", {x}, {{"axis", int64_t(2)}}), "y");
                }});
  cs.push_back({"PRelu_broadcast_slope", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {2, 3, 4});
                  int s = b.constant(rand_const(DType::f32, {3, 1}, 21), "slope");
                  b.output(b.op1("PRelu", {x, s}), "y");
                }});
  cs.push_back(unary("HardSwish", {}, {3, 8}, range(-5, 5)));
  cs.push_back(unary("Selu", {}, {3, 8}, range(-3, 3)));
  cs.push_back({"Mod_fmod",
                [](GraphBuilder& b) {
                  int x = b.input("a", DType::f32, {4, 5});
                  int y = b.input("b", DType::f32, {5});
                  b.output(b.op1("Mod", {x, y}, {{"fmod", int64_t(1)}}), "y");
                },
                {{"a", range(-10, 10)}, {"b", range(0.5, 3)}},
                1e-6,
                1e-5});
  cs.push_back({"Mod_int",
                [](GraphBuilder& b) {
                  int x = b.input("a", DType::i64, {4, 5});
                  int y = b.input("b", DType::i64, {5});
                  b.output(b.op1("Mod", {x, y}), "y");
                },
                {{"a", int_range(-30, 30)}, {"b", int_range(1, 7)}}});
  cs.push_back({"ReduceLogSumExp",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 4, 5});
                  b.output(b.op1("ReduceLogSumExp", {x}, {{"axes", std::vector<int64_t>{-1}}}), "y");
                },
                {{"x", range(-5, 5)}},
                1e-6,
                1e-5});
  cs.push_back({"Shape_Range_ConstantOfShape", [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {3, 4});
                  int sh = b.op1("Shape", {x});
                  int z = b.op1("ConstantOfShape", {sh}, {{"value", Tensor::from_vector<float>({1}, {0.5f})}});
                  b.output(b.op1("Add", {x, z}), "y");
                  b.output(b.op1("Range", {b.constant(Tensor::scalar<float>(1.0f), "start"),
                                           b.constant(Tensor::scalar<float>(4.0f), "limit"),
                                           b.constant(Tensor::scalar<float>(0.75f), "delta")}),
                           "r");
                }});
  cs.push_back({"And_Or_Not_Xor",
                [](GraphBuilder& b) {
                  int p = b.input("p", DType::boolean, {3, 4});
                  int q = b.input("q", DType::boolean, {4});
                  b.output(b.op1("And", {p, q}), "and");
                  b.output(b.op1("Or", {p, q}), "or");
                  b.output(b.op1("Xor", {p, q}), "xor");
                  b.output(b.op1("Not", {p}), "not");
                },
                {{"p", bools()}, {"q", bools()}}});
  // ---- a small composite: conv block + attention-style matmuls + layer norm
  cs.push_back({"Composite_conv_attention_block",
                [](GraphBuilder& b) {
                  int x = b.input("x", DType::f32, {1, 4, 6, 6});
                  int w = b.constant(rand_const(DType::f32, {8, 4, 3, 3}, 30, -0.3, 0.3), "w");
                  int c = b.op1("Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
                  int r = b.op1("Relu", {c});
                  int t = b.op1("Transpose", {b.op1("Reshape", {r, b.ints({1, 8, 36})})},
                                {{"perm", std::vector<int64_t>{0, 2, 1}}});  // [1,36,8]
                  int q = b.op1("MatMul", {t, b.constant(rand_const(DType::f32, {8, 8}, 31, -0.5, 0.5), "wq")});
                  int k = b.op1("MatMul", {t, b.constant(rand_const(DType::f32, {8, 8}, 32, -0.5, 0.5), "wk")});
                  int s = b.op1(
                      "Mul", {b.op1("MatMul", {q, b.op1("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}})}),
                              b.scalar_f32(0.35f)});
                  int a = b.op1("MatMul", {b.op1("Softmax", {s}, {{"axis", int64_t(-1)}}), t});
                  int n = b.op1("LayerNormalization",
                                {b.op1("Add", {a, t}), b.constant(rand_const(DType::f32, {8}, 33, 0.5, 1.5), "g")},
                                {{"axis", int64_t(-1)}});
                  b.output(n, "y");
                },
                {},
                1e-5,
                1e-4});
  return cs;
}

class Differential : public ::testing::TestWithParam<Case> {};

TEST_P(Differential, MatchesOnnxRuntime) { run_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ops, Differential, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Prints the worst differences per case once every case has run.
class WorstTablePrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    if (worst_table().empty()) return;
    std::cout << "\nworst |ours - ORT| per case (max abs, max rel where |ORT| > 1e-3):\n";
    for (const Worst& w : worst_table())
      std::cout << "  " << std::left << std::setw(44) << w.name << std::setw(10) << w.which << " abs " << std::setw(11)
                << std::setprecision(3) << w.abs << " rel " << w.rel << "\n";
  }
};
const auto* const kPrinter = ::testing::AddGlobalTestEnvironment(new WorstTablePrinter);

}  // namespace
}  // namespace segmux
