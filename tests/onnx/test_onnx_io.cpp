// ONNX import/export mechanics on handmade models. The ops used here are test-only ops registered
// in the "segmux" domain by this file (schema + reference kernel), so these tests do not depend on
// which ONNX ops the kernel library implements; test_onnx_roundtrip.cpp covers real ONNX ops.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/error_text.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"
#include "runtime/interpreter.h"
#include "test_ops.h"

namespace segmux {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

void add_io(onnx::ValueInfoProto* v, const std::string& name, int elem_type, const std::vector<std::string>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (auto& d : dims) {
    if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0]))))
      shape->add_dim()->set_dim_value(std::stoll(d));
    else
      shape->add_dim()->set_dim_param(d);
  }
}

onnx::ModelProto base_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* own = m.add_opset_import();
  own->set_domain("segmux");
  own->set_version(1);
  m.mutable_graph()->set_name("handmade");
  return m;
}

onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs, const std::string& domain = "segmux") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(op + "_node");
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

std::string bytes_of(const onnx::ModelProto& m) { return m.SerializeAsString(); }

using segmux::test::error_of;

std::string temp_dir(const std::string& name) {
  fs::path p = fs::path(SEGMUX_BINARY_DIR) / "onnx_io_tmp" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

TEST(OnnxImport, InitializersInEveryEncoding) {
  test_ops::register_test_ops();
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  auto* raw = g->add_initializer();  // raw_data
  raw->set_name("w_raw");
  raw->set_data_type(TensorProto::FLOAT);
  raw->add_dims(2);
  float vals[2] = {1.5f, -2.0f};
  raw->set_raw_data(reinterpret_cast<const char*>(vals), sizeof vals);
  auto* fd = g->add_initializer();  // float_data
  fd->set_name("w_float");
  fd->set_data_type(TensorProto::FLOAT);
  fd->add_dims(2);
  fd->add_float_data(3.0f);
  fd->add_float_data(4.0f);
  auto* i64 = g->add_initializer();
  i64->set_name("w_i64");
  i64->set_data_type(TensorProto::INT64);
  i64->add_dims(3);
  for (int64_t v : {7, -8, 9}) i64->add_int64_data(v);
  auto* h = g->add_initializer();  // f16 bit patterns in int32_data
  h->set_name("w_f16");
  h->set_data_type(TensorProto::FLOAT16);
  h->add_int32_data(0x3c00);  // scalar 1.0
  auto* b = g->add_initializer();
  b->set_name("w_bool");
  b->set_data_type(TensorProto::BOOL);
  b->add_dims(2);
  b->add_int32_data(1);
  b->add_int32_data(0);
  auto* u8 = g->add_initializer();
  u8->set_name("w_u8");
  u8->set_data_type(TensorProto::UINT8);
  u8->add_dims(1);
  u8->add_int32_data(200);
  add_io(g->add_input(), "x", TensorProto::FLOAT, {"2"});
  add_node(m, "TestConcatAll", {"x", "w_raw", "w_float"}, {"y"});
  add_io(g->add_output(), "y", TensorProto::FLOAT, {"6"});

  ir::Graph ig = onnx_io::import_onnx_bytes(bytes_of(m), "handmade");
  auto init = [&](const std::string& n) -> const Tensor& {
    int id = ig.find_value(n);
    EXPECT_GE(id, 0) << n;
    return *ig.initializer(id);
  };
  EXPECT_EQ(init("w_raw").data<float>()[1], -2.0f);
  EXPECT_EQ(init("w_float").data<float>()[0], 3.0f);
  EXPECT_EQ(init("w_i64").data<int64_t>()[1], -8);
  EXPECT_EQ(init("w_f16").dtype(), DType::f16);
  EXPECT_EQ(init("w_f16").rank(), 0);
  EXPECT_EQ(init("w_f16").get_as_double(0), 1.0);
  EXPECT_EQ(init("w_bool").get_as_double(0), 1.0);
  EXPECT_EQ(init("w_bool").get_as_double(1), 0.0);
  EXPECT_EQ(init("w_u8").data<uint8_t>()[0], 200);

  Interpreter s(ig, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false});
  auto out = s.run({{"x", Tensor::from_vector<float>({2}, {10, 20})}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.shape(), (Shape{6}));
  std::vector<float> want = {10, 20, 1.5f, -2, 3, 4};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], want[size_t(i)]);
}

TEST(OnnxImport, AttributesConstantsAndOptionalSlots) {
  test_ops::register_test_ops();
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", TensorProto::FLOAT, {"2", "3"});
  auto* c = add_node(m, "Constant", {}, {"c"}, "");
  auto* ca = c->add_attribute();
  ca->set_name("value_ints");
  ca->set_type(onnx::AttributeProto::INTS);
  ca->add_ints(4);
  ca->add_ints(5);
  auto* n = add_node(m, "TestRecordAttrs", {"x", "", "c"}, {"y", "", "z"});
  auto add_attr = [&](const std::string& name, onnx::AttributeProto::AttributeType t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(t);
    return a;
  };
  add_attr("f", onnx::AttributeProto::FLOAT)->set_f(0.25f);
  add_attr("i", onnx::AttributeProto::INT)->set_i(-3);
  add_attr("s", onnx::AttributeProto::STRING)->set_s("linear");
  auto* fs_ = add_attr("fs", onnx::AttributeProto::FLOATS);
  fs_->add_floats(1.0f);
  fs_->add_floats(2.0f);
  auto* is = add_attr("is", onnx::AttributeProto::INTS);
  is->add_ints(1);
  auto* ss = add_attr("ss", onnx::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  auto* t = add_attr("t", onnx::AttributeProto::TENSOR)->mutable_t();
  t->set_data_type(TensorProto::INT32);
  t->add_dims(2);
  t->add_int32_data(11);
  t->add_int32_data(12);
  add_io(g->add_output(), "y", TensorProto::FLOAT, {"2", "3"});
  add_io(g->add_output(), "z", TensorProto::FLOAT, {"2", "3"});

  ir::Graph ig = onnx_io::import_onnx_bytes(bytes_of(m), "attrs");
  ASSERT_EQ(ig.nodes.size(), 1u);  // the Constant became an initializer
  const ir::Node& node = ig.nodes[0];
  EXPECT_EQ(node.domain, "segmux");
  ASSERT_EQ(node.inputs.size(), 3u);
  EXPECT_EQ(node.inputs[1], -1);
  ASSERT_TRUE(ig.is_initializer(node.inputs[2]));
  EXPECT_EQ(ig.initializer(node.inputs[2])->data<int64_t>()[1], 5);
  ASSERT_EQ(node.outputs.size(), 3u);
  EXPECT_EQ(node.outputs[1], -1);
  EXPECT_EQ(node.attr_float("f", 0), 0.25f);
  EXPECT_EQ(node.attr_int("i", 0), -3);
  EXPECT_EQ(node.attr_string("s", ""), "linear");
  EXPECT_EQ(node.attr_floats("fs"), (std::vector<float>{1, 2}));
  EXPECT_EQ(node.attr_ints("is"), (std::vector<int64_t>{1}));
  EXPECT_EQ(std::get<std::vector<std::string>>(node.attrs.at("ss")), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(node.attr_tensor("t"), nullptr);
  EXPECT_EQ(node.attr_tensor("t")->data<int32_t>()[1], 12);
  EXPECT_TRUE(ig.value(node.outputs[0]).has_shape);

  // Export keeps every attribute kind, the omitted slots and the constant; a second import agrees.
  ir::Graph again = onnx_io::import_onnx_bytes(onnx_io::export_onnx_bytes(ig), "re-export");
  ASSERT_EQ(again.nodes.size(), 1u);
  EXPECT_EQ(again.nodes[0].attrs.size(), node.attrs.size());
  EXPECT_EQ(again.nodes[0].inputs[1], -1);
  EXPECT_EQ(again.nodes[0].outputs[1], -1);
  EXPECT_TRUE(again.nodes[0].attr_tensor("t")->identical(*node.attr_tensor("t")));
  EXPECT_EQ(std::get<std::vector<std::string>>(again.nodes[0].attrs.at("ss")), (std::vector<std::string>{"a", "b"}));
}

onnx::ModelProto symbolic_model() {
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", TensorProto::FLOAT, {"batch", "3"});
  add_node(m, "TestAffine", {"x"}, {"y"});
  add_io(g->add_output(), "y", TensorProto::FLOAT, {"batch", "3"});
  return m;
}

TEST(OnnxImport, SymbolicDims) {
  test_ops::register_test_ops();
  ir::Graph loose = onnx_io::import_onnx_bytes(bytes_of(symbolic_model()), "symbolic");
  EXPECT_FALSE(loose.value(loose.inputs[0]).has_shape);
  EXPECT_NE(error_of([&] { onnx_io::export_onnx_bytes(loose); }).find("'x' has no static shape"), std::string::npos);

  onnx_io::ImportOptions by_input;
  by_input.input_shapes["x"] = {4, 3};
  ir::Graph fixed = onnx_io::import_onnx_bytes(bytes_of(symbolic_model()), "symbolic", by_input);
  EXPECT_EQ(fixed.value(fixed.inputs[0]).shape, (Shape{4, 3}));
  EXPECT_EQ(fixed.value(fixed.outputs[0]).shape, (Shape{4, 3}));

  onnx_io::ImportOptions by_param;
  by_param.dim_params["batch"] = 2;
  ir::Graph p = onnx_io::import_onnx_bytes(bytes_of(symbolic_model()), "symbolic", by_param);
  EXPECT_EQ(p.value(p.inputs[0]).shape, (Shape{2, 3}));

  onnx_io::ImportOptions wrong;
  wrong.input_shapes["x"] = {4, 5};  // disagrees with the fixed dim 3
  EXPECT_NE(
      error_of([&] { onnx_io::import_onnx_bytes(bytes_of(symbolic_model()), "symbolic", wrong); }).find("input 'x'"),
      std::string::npos);
  onnx_io::ImportOptions unknown;
  unknown.input_shapes["nope"] = {1};
  EXPECT_NE(error_of([&] { onnx_io::import_onnx_bytes(bytes_of(symbolic_model()), "symbolic", unknown); }).find("nope"),
            std::string::npos);
}

TEST(OnnxImport, UnsupportedConstructsNameTheNode) {
  test_ops::register_test_ops();
  {  // unknown op
    onnx::ModelProto m = base_model();
    add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"2"});
    add_node(m, "NoSuchOpAnywhere", {"x"}, {"y"});
    add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"2"});
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes_of(m), "m"); });
    EXPECT_NE(e.find("NoSuchOpAnywhere"), std::string::npos) << e;
    EXPECT_NE(e.find("not supported"), std::string::npos) << e;
  }
  {  // a subgraph attribute (If)
    onnx::ModelProto m = base_model();
    auto* g = m.mutable_graph();
    add_io(g->add_input(), "cond", TensorProto::BOOL, {});
    auto* n = add_node(m, "If", {"cond"}, {"y"}, "");
    n->set_name("my_if");
    for (const char* branch : {"then_branch", "else_branch"}) {
      auto* a = n->add_attribute();
      a->set_name(branch);
      a->set_type(onnx::AttributeProto::GRAPH);
      auto* sg = a->mutable_g();
      sg->set_name(branch);
      auto* c = sg->add_node();
      c->set_op_type("Constant");
      c->add_output(std::string(branch) + "_out");
      auto* v = c->add_attribute();
      v->set_name("value_float");
      v->set_type(onnx::AttributeProto::FLOAT);
      v->set_f(1.0f);
      add_io(sg->add_output(), std::string(branch) + "_out", TensorProto::FLOAT, {});
    }
    add_io(g->add_output(), "y", TensorProto::FLOAT, {});
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes_of(m), "m"); });
    EXPECT_NE(e.find("my_if"), std::string::npos) << e;
  }
  {  // an element type we do not have
    onnx::ModelProto m = base_model();
    add_io(m.mutable_graph()->add_input(), "x", TensorProto::UINT16, {"2"});
    add_node(m, "TestAffine", {"x"}, {"y"});
    add_io(m.mutable_graph()->add_output(), "y", TensorProto::UINT16, {"2"});
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes_of(m), "m"); });
    EXPECT_NE(e.find("UINT16"), std::string::npos) << e;
  }
  {  // a sparse initializer
    onnx::ModelProto m = symbolic_model();
    auto* sp = m.mutable_graph()->add_sparse_initializer();
    sp->add_dims(4);
    sp->mutable_values()->set_name("sparse_w");
    sp->mutable_values()->set_data_type(TensorProto::FLOAT);
    sp->mutable_values()->add_dims(1);
    sp->mutable_values()->add_float_data(1.0f);
    sp->mutable_indices()->set_data_type(TensorProto::INT64);
    sp->mutable_indices()->add_dims(1);
    sp->mutable_indices()->add_int64_data(2);
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes_of(m), "m"); });
    EXPECT_NE(e.find("sparse"), std::string::npos) << e;
  }
  {  // raw_data of the wrong size
    onnx::ModelProto m = symbolic_model();
    auto* w = m.mutable_graph()->add_initializer();
    w->set_name("bad");
    w->set_data_type(TensorProto::FLOAT);
    w->add_dims(4);
    w->set_raw_data("abc");
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes_of(m), "m"); });
    EXPECT_NE(e.find("bad"), std::string::npos) << e;
  }
}

TEST(OnnxImport, HostileBytesAreErrorsNotCrashes) {
  test_ops::register_test_ops();
  EXPECT_THROW(onnx_io::import_onnx_bytes("", "empty"), Error);
  EXPECT_THROW(onnx_io::import_onnx_bytes("\x08\x96\x01garbage\xff\xff", "garbage"), Error);
  EXPECT_THROW(onnx_io::import_onnx_file("/nonexistent/x.onnx"), Error);
  const std::string good = bytes_of(symbolic_model());
  for (size_t cut = 0; cut < good.size(); ++cut) {  // every truncation
    try {
      onnx_io::import_onnx_bytes(good.substr(0, cut), "truncated");
    } catch (const Error&) {
    }
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {  // random byte flips
    std::string b = good;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = char(rng() & 0xff);
    try {
      onnx_io::import_onnx_bytes(b, "mutated");
    } catch (const Error&) {
    }
  }
}

TEST(OnnxImport, ExternalDataMustStayInsideTheModelFolder) {
  test_ops::register_test_ops();
  const std::string dir = temp_dir("escape");
  onnx::ModelProto m = symbolic_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(1);
  w->set_data_location(TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("../outside.bin");
  std::ofstream(dir + "/m.onnx", std::ios::binary) << bytes_of(m);
  EXPECT_THROW(onnx_io::import_onnx_file(dir + "/m.onnx"), Error);
}

// GraphBuilder graph of test ops -> export -> import -> run: bit-identical to the original.
ir::Graph affine_chain() {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 5});
  Tensor w(DType::f32, {5});
  for (int i = 0; i < 5; ++i) w.data<float>()[i] = 0.1f * float(i) - 0.2f;
  int wv = b.constant(w, "w");
  int y = b.op1("TestAffine", {x}, {{"scale", 1.7f}, {"shift", int64_t(2)}}, "segmux");
  int z = b.op1("TestConcatAll", {y, wv}, {}, "segmux");
  b.output(z, "z");
  return g;
}

Tensor sample_input() {
  Tensor x(DType::f32, {2, 5});
  for (int i = 0; i < 10; ++i) x.data<float>()[i] = std::sin(float(i)) * 3.0f;
  return x;
}

TEST(OnnxRoundTrip, BytesRunBitIdentical) {
  test_ops::register_test_ops();
  ir::Graph g = affine_chain();
  auto want =
      Interpreter(g, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false}).run({{"x", sample_input()}});
  std::string bytes = onnx_io::export_onnx_bytes(g);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  ASSERT_EQ(m.opset_import_size(), 2);  // default domain 17 + segmux
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.opset_import(1).domain(), "segmux");
  ASSERT_EQ(m.graph().initializer_size(), 1);
  EXPECT_TRUE(m.graph().initializer(0).has_raw_data());
  EXPECT_GE(m.graph().value_info_size(), 1);  // the intermediate's known shape
  // "shift" was an int64 in our IR; our test schema is not ONNX's, so it stays an INT.
  ir::Graph back = onnx_io::import_onnx_bytes(bytes, "round trip");
  auto got = Interpreter(back, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false})
                 .run({{"x", sample_input()}});
  ASSERT_TRUE(got.at("z").identical(want.at("z")));
}

TEST(OnnxRoundTrip, ExternalDataFile) {
  test_ops::register_test_ops();
  ir::Graph g = affine_chain();
  const std::string dir = temp_dir("external");
  onnx_io::ExportOptions opt;
  opt.external_data_threshold = 0;  // force external data
  opt.external_data_min_bytes = 1;
  onnx_io::export_onnx_file(g, dir + "/model.onnx", opt);
  ASSERT_TRUE(fs::exists(dir + "/model.onnx.data"));
  EXPECT_THROW(onnx_io::export_onnx_bytes(g, opt), Error);  // one message cannot hold it
  ir::Graph back = onnx_io::import_onnx_file(dir + "/model.onnx");
  auto want =
      Interpreter(g, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false}).run({{"x", sample_input()}});
  auto got = Interpreter(back, InterpreterOptions{.num_threads = 1, .use_optimized_kernels = false})
                 .run({{"x", sample_input()}});
  ASSERT_TRUE(got.at("z").identical(want.at("z")));
  // Bytes alone cannot resolve external data unless told where the folder is.
  std::ifstream f(dir + "/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_THROW(onnx_io::import_onnx_bytes(bytes, "no folder"), Error);
  onnx_io::ImportOptions io;
  io.base_dir = dir;
  EXPECT_NO_THROW(onnx_io::import_onnx_bytes(bytes, "with folder", io));
}

TEST(OnnxExport, AttributeTypesFollowOnnxSchemas) {
  // Built without GraphBuilder so no segmux schema is needed: LeakyRelu's alpha given as an int
  // must be written as the FLOAT ONNX declares; duplicate value names are made unique.
  ir::Graph g;
  int x = g.add_value("x", DType::f32, Shape{3});
  int y = g.add_value("x", DType::f32, Shape{3});  // same name on purpose
  g.inputs.push_back(x);
  ir::Node n;
  n.op_type = "LeakyRelu";
  n.name = "lrelu";
  n.inputs = {x};
  n.outputs = {y};
  n.attrs["alpha"] = int64_t(1);
  g.nodes.push_back(n);
  g.value(y).producer = 0;
  g.outputs.push_back(y);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(onnx_io::export_onnx_bytes(g)));
  ASSERT_EQ(m.graph().node(0).attribute_size(), 1);
  EXPECT_EQ(m.graph().node(0).attribute(0).type(), onnx::AttributeProto::FLOAT);
  EXPECT_EQ(m.graph().node(0).attribute(0).f(), 1.0f);
  EXPECT_NE(m.graph().input(0).name(), m.graph().output(0).name());
}

TEST(OnnxExport, RefusesForeignDomains) {
  ir::Graph g;
  int x = g.add_value("x", DType::f32, Shape{3});
  int y = g.add_value("y", DType::f32, Shape{3});
  g.inputs.push_back(x);
  ir::Node n;
  n.op_type = "Thing";
  n.domain = "com.example";
  n.name = "thing";
  n.inputs = {x};
  n.outputs = {y};
  g.nodes.push_back(n);
  g.outputs.push_back(y);
  EXPECT_NE(error_of([&] { onnx_io::export_onnx_bytes(g); }).find("com.example"), std::string::npos);
}

}  // namespace
}  // namespace segmux
