// Hostile ONNX models: each test builds the attack in memory (or in a temp folder) and expects a clear
// segmux::Error naming the thing at fault, never a crash, hang, escape or huge allocation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "onnx/onnx_io.h"
#include "test_ops.h"

namespace segmux {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

void add_io(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::ModelProto base_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("hostile");
  return m;
}

// x [1,1,6,6] -> op (node "victim") -> y; Conv gets a [1,1,2,2] weight.
onnx::ModelProto window_model(const std::string& op, const std::map<std::string, std::vector<int64_t>>& attrs) {
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {1, 1, 6, 6});
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("victim");
  n->add_input("x");
  if (op == "Conv") {
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(TensorProto::FLOAT);
    for (int64_t d : {1, 1, 2, 2}) w->add_dims(d);
    for (int i = 0; i < 4; ++i) w->add_float_data(1.0f);
    n->add_input("w");
  }
  n->add_output("y");
  for (auto& [k, v] : attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  if (op != "Conv" && !attrs.count("kernel_shape")) {
    auto* a = n->add_attribute();
    a->set_name("kernel_shape");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(2);
    a->add_ints(2);
  }
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  for (const char* d : {"n", "c", "h", "w"})
    y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(d);
  return m;
}

TEST(OnnxHostile, WindowAttributesAreCheckedBeforeOnnxShapeInference) {
  test_ops::register_test_ops();
  using Attrs = std::map<std::string, std::vector<int64_t>>;
  struct Case {
    Attrs attrs;
    const char* blamed;
  };
  const std::vector<Case> cases = {
      {{{"strides", {0, 0}}}, "'strides'"},  // SIGFPE inside ONNX shape inference before the fix
      {{{"strides", {-1, 1}}}, "'strides'"},
      {{{"strides", {1, 1, 1}}}, "'strides'"},
      {{{"dilations", {0, 1}}}, "'dilations'"},
      {{{"dilations", {-3, -3}}}, "'dilations'"},
      {{{"kernel_shape", {0, 2}}}, "'kernel_shape'"},
      {{{"kernel_shape", {-2, 2}}}, "'kernel_shape'"},
      {{{"kernel_shape", {2, 2}}, {"pads", {0, 0, 0}}}, "'pads'"},
      {{{"kernel_shape", {2, 2}}, {"pads", {0, -1, 0, 0}}}, "'pads'"},
  };
  for (const std::string op : {"Conv", "MaxPool", "AveragePool", "LpPool"}) {
    for (const Case& c : cases) {
      if (op != "Conv" && op != "MaxPool" && c.attrs.count("dilations")) continue;  // only these two dilate
      std::string bytes = window_model(op, c.attrs).SerializeAsString();
      std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes, "window model"); });
      SCOPED_TRACE(op);
      EXPECT_HAS(e, "node 'victim' (" + op + ")");
      EXPECT_HAS(e, c.blamed);
    }
  }
  // A sound window still imports.
  EXPECT_NO_THROW(onnx_io::import_onnx_bytes(
      window_model("MaxPool", {{"strides", {2, 2}}, {"pads", {0, 0, 1, 1}}}).SerializeAsString(), "fine"));
}

}  // namespace
}  // namespace segmux
