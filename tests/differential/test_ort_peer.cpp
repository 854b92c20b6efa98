// The ONNX Runtime peer on tiny handmade models: every tensor dtype in and out, errors carry ORT's
// message. Skips (with the reason) when ONNX Runtime is not installed.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>

#include "verify/ort_peer.h"

namespace segmux {
namespace {

#define SKIP_WITHOUT_ORT()                                             \
  do {                                                                 \
    std::string why;                                                   \
    if (!ort_available(&why)) GTEST_SKIP() << "ONNX Runtime: " << why; \
  } while (0)

void add_io(onnx::ValueInfoProto* v, const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// One node model: out = op(a[, b]) with the given element type.
std::string tiny_model(const std::string& op, int elem_type, bool binary, const std::vector<int64_t>& dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input("a");
  if (binary) n->add_input("b");
  n->add_output("out");
  add_io(g->add_input(), "a", elem_type, dims);
  if (binary) add_io(g->add_input(), "b", elem_type, dims);
  add_io(g->add_output(), "out", elem_type, dims);
  return m.SerializeAsString();
}

TEST(OrtPeer, AvailabilityIsExplained) {
  std::string why;
  bool ok = ort_available(&why);
  if (!ok)
    EXPECT_FALSE(why.empty());
  else
    SUCCEED();
}

TEST(OrtPeer, AddsFloatsFromBytes) {
  SKIP_WITHOUT_ORT();
  auto peer = verify::OrtPeer::from_bytes(tiny_model("Add", onnx::TensorProto::FLOAT, true, {2, 3}));
  ASSERT_EQ(peer->input_names().size(), 2u);
  ASSERT_EQ(peer->output_names(), std::vector<std::string>{"out"});
  auto out = peer->run({{"a", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                        {"b", Tensor::from_vector<float>({2, 3}, {10, 20, 30, 40, 50, 60})}});
  ASSERT_EQ(out.count("out"), 1u);
  const Tensor& t = out.at("out");
  ASSERT_EQ(t.dtype(), DType::f32);
  ASSERT_EQ(t.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], float(11 * (i + 1)));
}

TEST(OrtPeer, RunsFromFile) {
  SKIP_WITHOUT_ORT();
  std::string path = std::string(SEGMUX_BINARY_DIR) + "/ort_peer_tiny.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << tiny_model("Neg", onnx::TensorProto::INT64, false, {3});
  }
  verify::OrtPeer peer(path, 1);
  auto out = peer.run({{"a", Tensor::from_vector<int64_t>({3}, {1, -2, 3})}});
  std::remove(path.c_str());
  const Tensor& t = out.at("out");
  ASSERT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.data<int64_t>()[0], -1);
  EXPECT_EQ(t.data<int64_t>()[1], 2);
  EXPECT_EQ(t.data<int64_t>()[2], -3);
}

TEST(OrtPeer, EveryDtypeRoundTripsThroughIdentity) {
  SKIP_WITHOUT_ORT();
  struct Case {
    DType dtype;
    int onnx_type;
  };
  const Case cases[] = {{DType::f32, onnx::TensorProto::FLOAT},     {DType::f16, onnx::TensorProto::FLOAT16},
                        {DType::bf16, onnx::TensorProto::BFLOAT16}, {DType::f64, onnx::TensorProto::DOUBLE},
                        {DType::i64, onnx::TensorProto::INT64},     {DType::i32, onnx::TensorProto::INT32},
                        {DType::i8, onnx::TensorProto::INT8},       {DType::u8, onnx::TensorProto::UINT8},
                        {DType::boolean, onnx::TensorProto::BOOL}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)));
    auto peer = verify::OrtPeer::from_bytes(tiny_model("Identity", c.onnx_type, false, {2, 2}));
    Tensor in(c.dtype, {2, 2});
    for (int i = 0; i < 4; ++i) in.set_from_double(i, i % 2 ? 1.0 : 0.0 + i);
    auto out = peer->run({{"a", in}});
    EXPECT_TRUE(out.at("out").identical(in));
  }
}

TEST(OrtPeer, ScalarsAndEmptyTensors) {
  SKIP_WITHOUT_ORT();
  auto scalar = verify::OrtPeer::from_bytes(tiny_model("Abs", onnx::TensorProto::FLOAT, false, {}));
  auto out = scalar->run({{"a", Tensor::scalar<float>(-2.5f)}});
  ASSERT_EQ(out.at("out").rank(), 0);
  EXPECT_EQ(out.at("out").data<float>()[0], 2.5f);
  auto empty = verify::OrtPeer::from_bytes(tiny_model("Abs", onnx::TensorProto::FLOAT, false, {0, 3}));
  out = empty->run({{"a", Tensor(DType::f32, {0, 3})}});
  EXPECT_EQ(out.at("out").shape(), (Shape{0, 3}));
}

TEST(OrtPeer, ErrorsCarryOrtMessages) {
  SKIP_WITHOUT_ORT();
  EXPECT_THROW(verify::OrtPeer::from_bytes("this is not a model"), Error);
  EXPECT_THROW(verify::OrtPeer("/nonexistent/model.onnx", 1), Error);
  auto peer = verify::OrtPeer::from_bytes(tiny_model("Add", onnx::TensorProto::FLOAT, true, {2, 3}));
  try {
    peer->run({{"a", Tensor(DType::f32, {2, 3})}, {"b", Tensor(DType::i64, {2, 3})}});
    FAIL() << "wrong dtype accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ONNX Runtime"), std::string::npos) << e.what();
  }
  EXPECT_THROW(peer->run({{"nope", Tensor(DType::f32, {2, 3})}}), Error);
}

}  // namespace
}  // namespace segmux

// ONNX Runtime 1.30 leaks a few bytes internally (a direct leak inside libonnxruntime.so, not through
// any object we own); keep LeakSanitizer quiet about that library only.
extern "C" const char* __lsan_default_suppressions() { return "leak:libonnxruntime.so\n"; }
