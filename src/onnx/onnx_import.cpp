// ONNX -> IR: parse, check (our structural checks, then libonnx's checker), upgrade to opset 17 when
// older, convert, shape-infer (segmux's own schemas). libonnx's shape inference never sees an imported
// model: 1.12's reads protobuf fields out of range on hostile ranks (Conv whose weight has more axes
// than its input), and our schemas already type every op we support. Every failure is a segmux::Error naming the model
// and, where there is one, the node.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <onnx/checker.h>
#include <onnx/version_converter/convert.h>

#include "ir/op_schema.h"
#include "onnx/onnx_io.h"
#include "onnx/onnx_tensor.h"

namespace segmux::onnx_io {

using namespace detail;

namespace {

constexpr int kTargetOpset = 17;

// Regular files only (a FIFO would block the read forever), size checked before reading.
std::string read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  SEGMUX_CHECK(fd >= 0, "cannot open ONNX model '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("ONNX model '", path, "' is not a regular file");
  }
  if (st.st_size >= INT_MAX) {
    ::close(fd);
    fail("ONNX model '", path, "' is ", st.st_size,
         " bytes; ONNX models over 2 GB keep their weights in external data files");
  }
  std::string bytes(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      fail("cannot read ONNX model '", path, "': ", err ? std::strerror(err) : "the file shrank while read");
    }
    done += size_t(n);
  }
  ::close(fd);
  return bytes;
}

std::string node_label(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "#" + std::to_string(index) : n.name();
  return "node '" + name + "' (" + (n.domain().empty() ? "" : n.domain() + ".") + n.op_type() + ")";
}

// Checks the model the way onnx::checker::check_model does, but with the model folder set so external
// data paths resolve relative to it.
void run_checker(const onnx::ModelProto& m, const std::string& model_dir) {
  SEGMUX_CHECK(m.has_ir_version(), "the model has no ir_version");
  SEGMUX_CHECK(m.ir_version() <= onnx::Version::IR_VERSION, "ir_version ", m.ir_version(),
               " is newer than this ONNX library supports (", int(onnx::Version::IR_VERSION), ")");
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : m.opset_import()) {
    std::string domain = imp.domain() == "ai.onnx" ? "" : imp.domain();
    SEGMUX_CHECK(opsets.emplace(domain, int(imp.version())).second, "opset of domain '", imp.domain(),
                 "' is imported twice");
    SEGMUX_CHECK(imp.version() >= 1 && imp.version() <= INT_MAX, "domain '", imp.domain(), "' has opset version ",
                 imp.version());
  }
  SEGMUX_CHECK(m.ir_version() < 3 || !opsets.empty(), "the model imports no opset");
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(int(m.ir_version()));
  ctx.set_opset_imports(opsets);
  ctx.set_model_dir(model_dir);
  onnx::checker::LexicalScopeContext lex;
  onnx::checker::check_graph(m.graph(), ctx, lex);
  onnx::checker::check_model_local_functions(m, ctx, lex);
}

// The window attributes of convolution and pooling nodes, checked before ONNX's own shape inference
// sees them: it divides by the strides (SIGFPE on 0) and trusts every list's length.
bool has_window_attributes(const std::string& domain, const std::string& op) {
  static const std::set<std::string> ops = {"Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
                                            "MaxPool", "AveragePool",   "LpPool",      "MaxUnpool"};
  return (domain.empty() || domain == "ai.onnx") && ops.count(op);
}

// `ranks`: the declared rank of graph inputs and initializers, where known.
void check_window_attributes(const onnx::NodeProto& n, int index, const std::map<std::string, int>& ranks) {
  if (!has_window_attributes(n.domain(), n.op_type())) return;
  constexpr int64_t kMaxWindowValue = int64_t(1) << 31;  // far beyond any real kernel, stride or pad
  const std::string where = node_label(n, index);
  size_t spatial = 0;  // the number of spatial axes: from the data input's rank, else the first list seen
  std::string spatial_from;
  auto r = n.input_size() > 0 ? ranks.find(n.input(0)) : ranks.end();
  if (r != ranks.end()) {
    SEGMUX_CHECK(r->second >= 3, where, ": input '", n.input(0), "' has rank ", r->second,
                 "; convolution and pooling need [N, C, spatial...]");
    spatial = size_t(r->second - 2);
    spatial_from = "input '" + n.input(0) + "'";
  }
  auto ints = [&](const onnx::AttributeProto& a, int64_t min) {
    SEGMUX_CHECK(a.type() == onnx::AttributeProto::INTS, where, ": attribute '", a.name(), "' must be a list of ints");
    for (int64_t v : a.ints())
      SEGMUX_CHECK(v >= min && v <= kMaxWindowValue, where, ": attribute '", a.name(), "' has value ", v, " (must be ",
                   min == 0 ? "0" : "1", "..", kMaxWindowValue, ")");
    return size_t(a.ints_size());
  };
  auto same_rank = [&](const onnx::AttributeProto& a, size_t count) {
    if (spatial_from.empty()) {
      spatial = count;
      spatial_from = "attribute '" + a.name() + "'";
    }
    SEGMUX_CHECK(count == spatial, where, ": attribute '", a.name(), "' has ", count, " spatial values but ",
                 spatial_from, " has ", spatial);
  };
  const onnx::AttributeProto* pads = nullptr;
  for (const auto& a : n.attribute()) {
    const std::string& k = a.name();
    if (k == "kernel_shape" || k == "strides" || k == "dilations") {
      size_t count = ints(a, 1);
      SEGMUX_CHECK(count > 0, where, ": attribute '", k, "' is empty");
      same_rank(a, count);
    } else if (k == "output_padding") {
      same_rank(a, ints(a, 0));
    } else if (k == "pads") {
      ints(a, 0);
      pads = &a;
    } else if (k == "group") {
      SEGMUX_CHECK(a.type() == onnx::AttributeProto::INT && a.i() >= 1 && a.i() <= kMaxWindowValue, where,
                   ": attribute 'group' must be an int >= 1");
    } else if (k == "p") {
      SEGMUX_CHECK(a.type() == onnx::AttributeProto::INT && a.i() >= 1 && a.i() <= 64, where,
                   ": attribute 'p' must be an int in 1..64");
    }
  }
  if (pads && !spatial_from.empty())
    SEGMUX_CHECK(size_t(pads->ints_size()) == 2 * spatial, where, ": attribute 'pads' has ", pads->ints_size(),
                 " values, expected ", 2 * spatial, " (begin and end of each of the ", spatial, " spatial axes)");
  if (pads)
    SEGMUX_CHECK(pads->ints_size() % 2 == 0, where, ": attribute 'pads' has an odd number of values (",
                 pads->ints_size(), ")");
}

// Structural checks of our own, before libonnx sees the model: its checker leaves some of these
// unchecked and its version converter crashes on them (e.g. a graph output nothing produces).
int default_opset(const onnx::ModelProto& m) {
  for (const auto& imp : m.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") return int(imp.version());
  return -1;
}

[[noreturn]] void unsupported_op(const std::string& where, const std::string& domain, const std::string& op) {
  fail(where, ": op type '", op, "'", domain.empty() ? "" : " of domain '" + domain + "'",
       " is not supported by segmux");
}

// Before any libonnx code reads a node: an op must be one segmux implements, or a standard ONNX op of
// the model's older opset that the version converter may turn into one (Upsample -> Resize; convert()
// checks again after the upgrade). Experimental and unknown ops never reach libonnx's checker.
void check_op_known(const onnx::NodeProto& n, int index, int opset) {
  const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
  if (ir::find_schema(domain, n.op_type())) return;
  if (domain.empty() && opset >= 1 && opset < kTargetOpset) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
    if (s && s->support_level() == onnx::OpSchema::SupportType::COMMON && !s->deprecated()) return;
  }
  unsupported_op(node_label(n, index), domain, n.op_type());
}

void check_structure(const onnx::ModelProto& m) {
  const onnx::GraphProto& g = m.graph();
  const int opset = default_opset(m);
  SEGMUX_CHECK(g.sparse_initializer_size() == 0, "sparse initializers are not supported");
  std::set<std::string> defined;
  auto check_type = [](const onnx::ValueInfoProto& vi, const char* role) {
    SEGMUX_CHECK(vi.has_type() && vi.type().has_tensor_type(), role, " '", vi.name(),
                 "' is not a tensor (sequences, maps, optionals and sparse tensors are not supported)");
    SEGMUX_CHECK(vi.type().tensor_type().has_elem_type(), role, " '", vi.name(), "' has no element type");
  };
  std::map<std::string, int> ranks;  // declared ranks, for check_window_attributes
  for (const auto& in : g.input())
    if (in.type().tensor_type().has_shape()) ranks[in.name()] = in.type().tensor_type().shape().dim_size();
  for (const auto& init : g.initializer()) {
    ranks[init.name()] = init.dims_size();
    SEGMUX_CHECK(!init.name().empty(), "an initializer has no name");
    SEGMUX_CHECK(defined.insert(init.name()).second, "initializer '", init.name(), "' is defined twice");
  }
  for (const auto& in : g.input()) {
    check_type(in, "graph input");
    SEGMUX_CHECK(!in.name().empty(), "a graph input has no name");
    SEGMUX_CHECK(defined.insert(in.name()).second || std::any_of(g.initializer().begin(), g.initializer().end(),
                                                                 [&](auto& t) { return t.name() == in.name(); }),
                 "graph input '", in.name(), "' is defined twice");
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    check_op_known(n, i, opset);
    for (const auto& a : n.attribute())
      SEGMUX_CHECK(a.type() != onnx::AttributeProto::GRAPH && a.type() != onnx::AttributeProto::GRAPHS && !a.has_g() &&
                       a.graphs_size() == 0,
                   node_label(n, i), ": attribute '", a.name(),
                   "' is a subgraph; control flow (If, Loop, Scan) is not supported");
    for (const std::string& in : n.input())
      SEGMUX_CHECK(in.empty() || defined.count(in), node_label(n, i), ": input '", in,
                   "' is not defined before this node");
    for (const std::string& out : n.output())
      SEGMUX_CHECK(out.empty() || defined.insert(out).second, node_label(n, i), ": output '", out,
                   "' is already defined");
    check_window_attributes(n, i, ranks);
  }
  for (const auto& out : g.output()) {
    check_type(out, "graph output");
    SEGMUX_CHECK(defined.count(out.name()), "graph output '", out.name(), "' is not produced by anything");
  }
  for (const auto& vi : g.value_info()) {
    check_type(vi, "value_info");
    SEGMUX_CHECK(defined.count(vi.name()), "value_info names '", vi.name(), "', which nothing defines");
  }
}

// Applies ImportOptions::input_shapes / dim_params to the graph inputs of the proto.
void fix_input_shapes(onnx::ModelProto& m, const ImportOptions& opt) {
  std::set<std::string> seen;
  for (auto& in : *m.mutable_graph()->mutable_input()) {
    if (!in.type().has_tensor_type()) continue;
    auto* tt = in.mutable_type()->mutable_tensor_type();
    auto it = opt.input_shapes.find(in.name());
    if (it != opt.input_shapes.end()) {
      seen.insert(in.name());
      const Shape& want = it->second;
      if (tt->has_shape()) {
        SEGMUX_CHECK(tt->shape().dim_size() == int(want.size()), "input '", in.name(), "' has rank ",
                     tt->shape().dim_size(), ", the given shape ", shape_str(want), " has rank ", want.size());
        for (int k = 0; k < tt->shape().dim_size(); ++k) {
          const auto& d = tt->shape().dim(k);
          SEGMUX_CHECK(!d.has_dim_value() || d.dim_value() == want[size_t(k)], "input '", in.name(), "' has dim ", k,
                       " = ", d.dim_value(), ", the given shape is ", shape_str(want));
        }
      }
      tt->clear_shape();
      auto* shape = tt->mutable_shape();
      for (int64_t d : want) {
        SEGMUX_CHECK(d >= 0, "input '", in.name(), "': given shape ", shape_str(want), " has a negative dim");
        shape->add_dim()->set_dim_value(d);
      }
      continue;
    }
    if (!tt->has_shape() || opt.dim_params.empty()) continue;
    for (auto& d : *tt->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_param()) continue;
      auto p = opt.dim_params.find(d.dim_param());
      if (p != opt.dim_params.end()) d.set_dim_value(p->second);
    }
  }
  for (auto& [name, shape] : opt.input_shapes)
    SEGMUX_CHECK(seen.count(name), "ImportOptions::input_shapes names '", name, "', which is not a graph input");
}

struct ValueType {
  DType dtype = DType::f32;
  bool known_dtype = false;
  bool has_shape = false;
  Shape shape;
};

// Reads a ValueInfoProto's type; only tensor types are supported.
ValueType value_type(const onnx::ValueInfoProto& vi, const std::string& role) {
  ValueType t;
  SEGMUX_CHECK(vi.has_type(), role, " '", vi.name(), "' has no type");
  SEGMUX_CHECK(vi.type().has_tensor_type(), role, " '", vi.name(),
               "' is not a tensor (sequences, maps, optionals and sparse tensors are not supported)");
  const auto& tt = vi.type().tensor_type();
  if (tt.has_elem_type() && tt.elem_type() != onnx::TensorProto::UNDEFINED) {
    SEGMUX_CHECK(dtype_from_onnx(tt.elem_type(), &t.dtype), role, " '", vi.name(), "' has element type ",
                 onnx_type_name(tt.elem_type()), ", which segmux does not support");
    t.known_dtype = true;
  }
  if (tt.has_shape()) {
    t.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) {  // symbolic or unknown: no static shape
        t.has_shape = false;
        t.shape.clear();
        break;
      }
      SEGMUX_CHECK(d.dim_value() >= 0, role, " '", vi.name(), "' has a negative dim ", d.dim_value());
      t.shape.push_back(d.dim_value());
    }
  }
  return t;
}

ir::AttrValue convert_attribute(const onnx::AttributeProto& a, ExternalData& external, const std::string& where) {
  const std::string what = where + ": attribute '" + a.name() + "'";
  SEGMUX_CHECK(a.ref_attr_name().empty(), what, " refers to a function attribute; functions are not supported");
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::INT:
      return int64_t(a.i());
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::TENSOR:
      return tensor_from_proto(a.t(), external, what);
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      fail(what, " is a subgraph; control flow (If, Loop, Scan) is not supported");
    case onnx::AttributeProto::SPARSE_TENSOR:
    case onnx::AttributeProto::SPARSE_TENSORS:
      fail(what, " is a sparse tensor, which is not supported");
    case onnx::AttributeProto::TENSORS:
      fail(what, " is a list of tensors, which is not supported");
    case onnx::AttributeProto::TYPE_PROTO:
    case onnx::AttributeProto::TYPE_PROTOS:
      fail(what, " is a type, which is not supported");
    default:
      fail(what, " has unknown attribute type ", int(a.type()));
  }
}

// A Constant node's value as a tensor.
Tensor constant_value(const onnx::NodeProto& n, ExternalData& external, const std::string& where) {
  SEGMUX_CHECK(n.attribute_size() == 1, where, ": Constant needs exactly one value attribute");
  const auto& a = n.attribute(0);
  const std::string& k = a.name();
  if (k == "value") {
    SEGMUX_CHECK(a.type() == onnx::AttributeProto::TENSOR, where, ": 'value' is not a tensor");
    return tensor_from_proto(a.t(), external, where + ": attribute 'value'");
  }
  if (k == "value_float") return Tensor::scalar<float>(a.f());
  if (k == "value_int") return Tensor::scalar<int64_t>(a.i());
  if (k == "value_floats")
    return Tensor::from_vector<float>({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
  if (k == "value_ints")
    return Tensor::from_vector<int64_t>({a.ints_size()}, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  if (k == "sparse_value") fail(where, ": sparse constants are not supported");
  fail(where, ": Constant attribute '", k, "' (strings?) is not supported");
}

ir::Graph convert(const onnx::ModelProto& m, ExternalData& external, const ImportOptions& opt) {
  const onnx::GraphProto& gp = m.graph();
  ir::Graph g;
  g.name = gp.name().empty() ? "graph" : gp.name();
  if (!m.producer_name().empty()) g.metadata["onnx.producer"] = m.producer_name();
  for (const auto& kv : m.metadata_props()) g.metadata[kv.key()] = kv.value();
  SEGMUX_CHECK(gp.sparse_initializer_size() == 0, "sparse initializers are not supported");

  // Declared types of every named value (inputs, outputs, value_info incl. what inference added).
  std::unordered_map<std::string, const onnx::ValueInfoProto*> declared;
  for (const auto& vi : gp.value_info()) declared[vi.name()] = &vi;
  for (const auto& vi : gp.output()) declared[vi.name()] = &vi;
  for (const auto& vi : gp.input()) declared[vi.name()] = &vi;

  std::unordered_map<std::string, int> ids;
  auto define = [&](const std::string& name, DType dt, std::optional<Shape> shape, const std::string& role) {
    SEGMUX_CHECK(!name.empty(), role, " has an empty name");
    SEGMUX_CHECK(!ids.count(name), role, " '", name, "' is defined twice");
    int id = g.add_value(name, dt, shape);
    ids[name] = id;
    return id;
  };

  std::set<std::string> initializer_names;
  for (const auto& init : gp.initializer()) initializer_names.insert(init.name());
  for (const auto& init : gp.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    Tensor t = tensor_from_proto(init, external, what);
    int id = define(init.name(), t.dtype(), t.shape(), "initializer");
    g.initializers.emplace(id, std::move(t));
  }
  for (const auto& in : gp.input()) {
    if (initializer_names.count(in.name())) continue;  // IR < 4: initializers are listed as inputs too
    ValueType t = value_type(in, "graph input");
    SEGMUX_CHECK(t.known_dtype, "graph input '", in.name(), "' has no element type");
    int id = define(in.name(), t.dtype, t.has_shape ? std::optional<Shape>(t.shape) : std::nullopt, "graph input");
    g.inputs.push_back(id);
  }

  std::unordered_map<std::string, int> node_name_count;
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    const std::string where = node_label(np, i);
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    if (domain.empty() && np.op_type() == "Constant") {
      SEGMUX_CHECK(np.output_size() == 1 && !np.output(0).empty(), where, ": Constant needs one output");
      Tensor t = constant_value(np, external, where);
      int id = define(np.output(0), t.dtype(), t.shape(), where + " output");
      g.initializers.emplace(id, std::move(t));
      continue;
    }
    ir::Node n;
    n.op_type = np.op_type();
    n.domain = domain;
    if (!ir::find_schema(domain, np.op_type())) unsupported_op(where, domain, np.op_type());
    std::string base = np.name().empty() ? np.op_type() : np.name();
    int count = node_name_count[base]++;
    n.name = count == 0 ? base : base + "_" + std::to_string(count);
    for (const auto& a : np.attribute()) {
      SEGMUX_CHECK(!n.attrs.count(a.name()), where, ": attribute '", a.name(), "' is given twice");
      n.attrs.emplace(a.name(), convert_attribute(a, external, where));
    }
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(-1);
        continue;
      }
      auto it = ids.find(in);
      SEGMUX_CHECK(it != ids.end(), where, ": input '", in, "' is not defined before this node");
      n.inputs.push_back(it->second);
    }
    const int node_index = int(g.nodes.size());
    for (const std::string& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      ValueType t;
      auto d = declared.find(out);
      if (d != declared.end()) t = value_type(*d->second, where + " output");
      int id = define(out, t.dtype, t.has_shape ? std::optional<Shape>(t.shape) : std::nullopt, where + " output");
      g.value(id).producer = node_index;
      n.outputs.push_back(id);
    }
    g.nodes.push_back(std::move(n));
  }
  for (const auto& out : gp.output()) {
    auto it = ids.find(out.name());
    SEGMUX_CHECK(it != ids.end(), "graph output '", out.name(), "' is not produced by any node");
    g.outputs.push_back(it->second);
  }
  ir::verify_structure(g);
  if (opt.infer_shapes) ir::infer_shapes(g);  // values behind symbolic dims keep a dtype, no shape
  return g;
}

ir::Graph import_model(const std::string& bytes, const std::string& what, const std::string& model_dir,
                       const ImportOptions& opt) {
  try {
    SEGMUX_CHECK(bytes.size() < size_t(INT_MAX), "the model is ", bytes.size(),
                 " bytes; ONNX models over 2 GB keep their weights in external data files");
    onnx::ModelProto m;
    SEGMUX_CHECK(m.ParseFromArray(bytes.data(), int(bytes.size())),
                 "not a valid ONNX ModelProto (protobuf parse failed)");
    SEGMUX_CHECK(m.has_graph(), "the model has no graph");
    check_structure(m);
    fix_input_shapes(m, opt);
    int opset = 0;
    try {
      run_checker(m, model_dir);
      opset = default_opset(m);
      SEGMUX_CHECK(opset >= 1 || m.graph().node_size() == 0 || opset == -1, "bad default opset ", opset);
      if (opset > kTargetOpset) fail("default-domain opset ", opset, " is newer than segmux's opset ", kTargetOpset);
      if (opset >= 1 && opset < kTargetOpset) {
        SEGMUX_CHECK(opt.upgrade_opset, "default-domain opset ", opset, " (segmux implements opset ", kTargetOpset,
                     "; enable ImportOptions::upgrade_opset to convert)");
        try {
          m = onnx::version_conversion::ConvertVersion(m, kTargetOpset);
        } catch (const std::exception& e) {
          fail("upgrading opset ", opset, " to ", kTargetOpset, " failed: ", e.what());
        }
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail("ONNX check failed: ", e.what());
    }
    ExternalData external(model_dir);
    ir::Graph g = convert(m, external, opt);
    if (opset > 0) g.metadata["onnx.original_opset"] = std::to_string(opset);
    return g;
  } catch (const Error& e) {
    fail("importing ONNX model ", what, ": ", e.what());
  } catch (const std::bad_alloc&) {
    fail("importing ONNX model ", what, ": out of memory (hostile or huge sizes?)");
  } catch (const std::exception& e) {
    fail("importing ONNX model ", what, ": ", e.what());
  }
}

}  // namespace

ir::Graph import_onnx_file(const std::string& path, const ImportOptions& opt) {
  std::string dir = opt.base_dir;
  if (dir.empty()) {
    size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  }
  return import_model(read_whole_file(path), "'" + path + "'", dir, opt);
}

ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opt) {
  return import_model(bytes, what, opt.base_dir, opt);
}

Tensor parse_tensor_proto(const std::string& bytes, const std::string& what) {
  onnx::TensorProto p;
  SEGMUX_CHECK(bytes.size() < size_t(INT_MAX) && p.ParseFromArray(bytes.data(), int(bytes.size())), what,
               " is not a serialized ONNX TensorProto");
  ExternalData none("");
  return tensor_from_proto(p, none, what);
}

}  // namespace segmux::onnx_io
