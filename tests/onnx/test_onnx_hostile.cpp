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

#include "common/error_text.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"
#include "test_ops.h"

namespace segmux {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

using segmux::test::error_of;

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

// x -> Conv(x, producer(w0)): `producer` is an op whose output libonnx cannot type (an experimental op
// with no inference function, or our own "segmux" domain). libonnx 1.12's Conv inference then reads
// the weight's missing type through a null pointer; the importer must never let it get that far.
onnx::ModelProto conv_with_untyped_weight(const std::string& producer, const std::string& domain) {
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  if (!domain.empty()) {
    auto* o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(1);
  }
  add_io(g->add_input(), "x", {1, 1, 6, 6});
  auto* w = g->add_initializer();
  w->set_name("w0");
  w->set_data_type(TensorProto::FLOAT);
  for (int64_t d : {1, 1, 2, 2}) w->add_dims(d);
  for (int i = 0; i < 4; ++i) w->add_float_data(1.0f);
  auto* p = g->add_node();
  p->set_op_type(producer);
  p->set_domain(domain);
  p->set_name("producer");
  p->add_input("w0");
  p->add_output("w");
  auto* n = g->add_node();
  n->set_op_type("Conv");
  n->set_name("victim");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("kernel_shape");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(2);
  a->add_ints(2);
  add_io(g->add_output(), "y", {1, 1, 5, 5});
  return m;
}

TEST(OnnxHostile, UntypedWeightsNeverReachOnnxShapeInference) {
  test_ops::register_test_ops();
  // An op segmux does not implement is named before any libonnx code looks at the graph.
  std::string e =
      error_of([&] { onnx_io::import_onnx_bytes(conv_with_untyped_weight("Crop", "").SerializeAsString(), "crop"); });
  EXPECT_HAS(e, "node 'producer' (Crop)");
  EXPECT_HAS(e, "not supported by segmux");
  // Our own fused ops are unknown to libonnx: the graph still imports, typed by segmux's inference.
  ir::Graph g;
  EXPECT_NO_THROW(
      g = onnx_io::import_onnx_bytes(conv_with_untyped_weight("Gelu", "segmux").SerializeAsString(), "segmux op"));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.value(g.outputs.at(0)).shape, (Shape{1, 1, 5, 5}));
}

// The crash CI's fuzzer found: a Conv whose weight (made inside the graph, so no declared rank) has
// more spatial axes than its input. libonnx 1.12's inference indexed the input's dims past their end.
TEST(OnnxHostile, ConvWeightRankBeyondTheInputIsAClearError) {
  test_ops::register_test_ops();
  onnx::ModelProto m = conv_with_untyped_weight("Identity", "");
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->clear_float_data();
  for (int64_t d : {1, 1, 2, 2, 2}) w->add_dims(d);
  for (int i = 0; i < 8; ++i) w->add_float_data(1.0f);
  m.mutable_graph()->mutable_node(1)->clear_attribute();  // the kernel comes from the weight's shape
  std::string e = error_of([&] { onnx_io::import_onnx_bytes(m.SerializeAsString(), "rank mismatch"); });
  EXPECT_HAS(e, "node 'victim' (Conv)");
  // A symbolic batch: the input's rank is unknown to segmux until the dim is fixed, so the import
  // passes without reading the weight; fixing it brings the same error.
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("n");
  EXPECT_NO_THROW(onnx_io::import_onnx_bytes(m.SerializeAsString(), "rank mismatch, symbolic batch"));
  onnx_io::ImportOptions fixed;
  fixed.dim_params["n"] = 1;
  e = error_of([&] { onnx_io::import_onnx_bytes(m.SerializeAsString(), "rank mismatch, batch fixed", fixed); });
  EXPECT_HAS(e, "node 'victim' (Conv)");
}

std::string temp_dir(const std::string& name) {
  fs::path p = fs::path(SEGMUX_BINARY_DIR) / "onnx_hostile_tmp" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// y = x + w, with w [4] f32 stored in external data `location`.
onnx::ModelProto external_model(const std::string& location) {
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {4});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  add_io(g->add_output(), "y", {4});
  return m;
}

const std::string kSecret = "SECRET-0123456789";  // 16+ bytes: enough for the [4] f32 weight

TEST(OnnxHostile, ExternalDataSymlinksMayNotLeaveTheModelFolder) {
  test_ops::register_test_ops();
  const std::string root = temp_dir("symlinks");
  const std::string dir = root + "/model";
  fs::create_directories(dir + "/sub");
  fs::create_directories(root + "/elsewhere");
  write_file(root + "/elsewhere/secret.bin", kSecret);
  write_file(dir + "/sub/inside.bin", std::string(16, '\0'));
  fs::create_symlink(root + "/elsewhere/secret.bin", dir + "/file_link.bin");
  fs::create_symlink(root + "/elsewhere", dir + "/dir_link");
  fs::create_symlink("../../elsewhere/secret.bin", dir + "/sub/relative_link.bin");
  fs::create_symlink("sub/inside.bin", dir + "/inside_link.bin");  // stays inside: allowed
  for (const std::string loc : {"file_link.bin", "dir_link/secret.bin", "sub/relative_link.bin",
                                "./sub/../file_link.bin", "sub//relative_link.bin"}) {
    write_file(dir + "/m.onnx", external_model(loc).SerializeAsString());
    std::string e = error_of([&] { onnx_io::import_onnx_file(dir + "/m.onnx"); });
    SCOPED_TRACE(loc);
    EXPECT_HAS(e, "initializer 'w'");
    EXPECT_TRUE(e.find("symbolic link") != std::string::npos || e.find("leaves the model folder") != std::string::npos)
        << e;
  }
  write_file(dir + "/m.onnx", external_model("inside_link.bin").SerializeAsString());
  EXPECT_NO_THROW(onnx_io::import_onnx_file(dir + "/m.onnx"));
  // The model folder itself may be reached through a symlink.
  fs::create_symlink(dir, root + "/model_link");
  EXPECT_NO_THROW(onnx_io::import_onnx_file(root + "/model_link/m.onnx"));
}

TEST(OnnxHostile, ExternalDataMustBeARegularFileAndIsNeverOpenedOtherwise) {
  test_ops::register_test_ops();
  const std::string dir = temp_dir("fifo");
  const std::string fifo = dir + "/data.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_file(dir + "/m.onnx", external_model("data.bin").SerializeAsString());
  // A watcher opens the write end whenever a reader has the FIFO open: that both detects an importer
  // that opened it and unblocks one stuck in open() (so the test fails instead of hanging).
  std::atomic<bool> stop{false}, reader_seen{false};
  std::thread watcher([&] {
    while (!stop) {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        reader_seen = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::string e = error_of([&] { onnx_io::import_onnx_file(dir + "/m.onnx"); });
  stop = true;
  watcher.join();
  EXPECT_FALSE(reader_seen) << "the importer opened the FIFO";
  EXPECT_HAS(e, "not a regular file");
  EXPECT_HAS(e, "data.bin");
  // A directory is refused the same way.
  fs::create_directories(dir + "/folder.bin");
  write_file(dir + "/m.onnx", external_model("folder.bin").SerializeAsString());
  EXPECT_HAS(error_of([&] { onnx_io::import_onnx_file(dir + "/m.onnx"); }), "not a regular file");
}

TEST(OnnxHostile, TheModelFileItselfMustBeARegularFile) {
  const std::string dir = temp_dir("model_fifo");
  const std::string fifo = dir + "/m.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> stop{false}, reader_seen{false};
  std::thread watcher([&] {  // as above: detects (and unblocks) a reader stuck on the FIFO
    while (!stop) {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        reader_seen = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::string e = error_of([&] { onnx_io::import_onnx_file(fifo); });
  stop = true;
  watcher.join();
  EXPECT_HAS(e, "not a regular file");
  EXPECT_HAS(e, fifo);
  EXPECT_HAS(error_of([&] { onnx_io::import_onnx_file(dir); }), "not a regular file");
}

size_t peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

TEST(OnnxHostile, InitializerBytesAreCheckedBeforeAllocating) {
  test_ops::register_test_ops();
  // The ~100-byte model of the report: a [2^30] f32 initializer (4 GiB) holding 4 bytes.
  struct Case {
    std::vector<int64_t> dims;
    int type;
    const char* blamed;
  };
  const std::vector<Case> cases = {
      {{int64_t(1) << 30}, TensorProto::FLOAT, "raw_data has 4 bytes"},
      {{int64_t(1) << 20, int64_t(1) << 20}, TensorProto::DOUBLE, "raw_data has 4 bytes"},
      {{int64_t(1) << 30}, TensorProto::INT64, "int64_data has 1 values"},
      {{int64_t(1) << 30}, TensorProto::FLOAT, "float_data has 1 values"},
      {{int64_t(1) << 30}, TensorProto::UINT8, "int32_data has 1 values"},
      {{int64_t(1) << 30}, TensorProto::FLOAT16, "int32_data has 1 values"},
  };
  const size_t rss_before = peak_rss_bytes();
  for (const Case& c : cases) {
    onnx::ModelProto m = base_model();
    auto* g = m.mutable_graph();
    add_io(g->add_input(), "x", {1});
    auto* w = g->add_initializer();
    w->set_name("huge");
    w->set_data_type(c.type);
    for (int64_t d : c.dims) w->add_dims(d);
    const std::string blamed = c.blamed;
    if (blamed.rfind("raw_data", 0) == 0)
      w->set_raw_data("abcd");
    else if (blamed.rfind("int64", 0) == 0)
      w->add_int64_data(1);
    else if (blamed.rfind("float", 0) == 0)
      w->add_float_data(1.0f);
    else if (blamed.find("1 values") != std::string::npos)
      w->add_int32_data(1);
    auto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input("x");
    n->add_output("y");
    add_io(g->add_output(), "y", {1});
    std::string bytes = m.SerializeAsString();
    std::string e = error_of([&] { onnx_io::import_onnx_bytes(bytes, "tiny model"); });
    EXPECT_HAS(e, "initializer 'huge'");
    EXPECT_HAS(e, c.blamed);
  }
  // Nothing of the declared size was ever allocated (each case declares at least 1 GiB).
  EXPECT_LT(peak_rss_bytes(), rss_before + (size_t(512) << 20));
}

// segmux's own shape inference sees attributes from .smx files and GraphBuilder code, which ONNX's
// checks never saw: window arithmetic is bounded there too.
TEST(OnnxHostile, SegmuxWindowShapeInferenceIsBounded) {
  test_ops::register_test_ops();
  using Ints = std::vector<int64_t>;
  auto infer = [](const std::string& op, const Shape& x_shape, const ir::Attrs& attrs) {
    ir::Graph g;
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, x_shape);
    std::vector<int> ins{x};
    if (op == "MaxUnpool") ins.push_back(b.input("i", DType::i64, x_shape));
    if (op == "Conv" || op == "ConvTranspose") ins.push_back(b.constant(Tensor(DType::f32, {1, 1, 1, 1}), "w"));
    b.op1(op, ins, attrs);
  };
  // Rank 1: the spatial count underflowed to 2^64-2 and sized vectors from it (std::length_error).
  EXPECT_THROW(infer("MaxUnpool", {4}, {{"kernel_shape", Ints{2}}}), Error);
  EXPECT_THROW(infer("MaxUnpool", {1, 1, 4}, {{"kernel_shape", Ints{0}}}), Error);
  EXPECT_THROW(infer("MaxUnpool", {1, 1, 4}, {{"kernel_shape", Ints{2}}, {"strides", Ints{int64_t(1) << 62}}}), Error);
  const int64_t huge = int64_t(1) << 40;
  EXPECT_THROW(infer("MaxPool", {1, 1, 4, 4}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{huge, 1}}}), Error);
  EXPECT_THROW(infer("Conv", {1, 1, 4, 4}, {{"dilations", Ints{huge, huge}}}), Error);
  EXPECT_THROW(infer("ConvTranspose", {1, 1, 4, 4}, {{"strides", Ints{huge, huge}}}), Error);
  EXPECT_THROW(infer("ConvTranspose", {1, 1, 4, 4}, {{"output_padding", Ints{huge, 0}}}), Error);
  EXPECT_NO_THROW(infer("MaxUnpool", {1, 1, 4}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}));
}

}  // namespace
}  // namespace segmux
