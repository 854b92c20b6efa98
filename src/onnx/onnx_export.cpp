// IR -> ONNX: ModelProto at opset 17 (plus domain "segmux" when fused nodes exist), initializers as
// raw_data (or in an external data file for big models), value_info for every typed value, checked
// with libonnx's checker before it is returned or written.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdio>
#include <set>

#include "io/safetensors.h"
#include "onnx/onnx_io.h"
#include "onnx/onnx_tensor.h"

namespace segmux::onnx_io {

using namespace detail;

namespace {

void set_type(onnx::ValueInfoProto* vi, const ir::Value& v) {
  vi->set_name(v.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (v.has_shape) {
    auto* shape = tt->mutable_shape();
    for (int64_t d : v.shape) {
      if (d >= 0)
        shape->add_dim()->set_dim_value(d);
      else
        shape->add_dim();  // data-dependent: unknown dim
    }
  }
}

// Our attributes carry no ONNX type of their own (an int may stand for a float, an empty list for any
// list); the ONNX schema of the op says which type to write.
void set_attribute(onnx::AttributeProto* a, const std::string& name, const ir::AttrValue& value,
                   const onnx::OpSchema* schema, const ir::Node& node) {
  using AP = onnx::AttributeProto;
  a->set_name(name);
  AP::AttributeType want = AP::UNDEFINED;
  if (schema) {
    auto it = schema->attributes().find(name);
    if (it != schema->attributes().end()) want = it->second.type;
  }
  if (auto* i = std::get_if<int64_t>(&value)) {
    if (want == AP::FLOAT) {
      a->set_type(AP::FLOAT);
      a->set_f(float(*i));
    } else {
      a->set_type(AP::INT);
      a->set_i(*i);
    }
  } else if (auto* f = std::get_if<float>(&value)) {
    a->set_type(AP::FLOAT);
    a->set_f(*f);
  } else if (auto* s = std::get_if<std::string>(&value)) {
    a->set_type(AP::STRING);
    a->set_s(*s);
  } else if (auto* iv = std::get_if<std::vector<int64_t>>(&value)) {
    if (want == AP::FLOATS) {
      a->set_type(AP::FLOATS);
      for (int64_t x : *iv) a->add_floats(float(x));
    } else {
      a->set_type(AP::INTS);
      for (int64_t x : *iv) a->add_ints(x);
    }
  } else if (auto* fv = std::get_if<std::vector<float>>(&value)) {
    if (want == AP::INTS && fv->empty()) {
      a->set_type(AP::INTS);
    } else {
      a->set_type(AP::FLOATS);
      for (float x : *fv) a->add_floats(x);
    }
  } else if (auto* sv = std::get_if<std::vector<std::string>>(&value)) {
    a->set_type(AP::STRINGS);
    for (auto& x : *sv) a->add_strings(x);
  } else if (auto* t = std::get_if<Tensor>(&value)) {
    a->set_type(AP::TENSOR);
    SEGMUX_CHECK(t->defined(), node.describe(), ": attribute '", name, "' holds an empty tensor");
    tensor_to_proto(*t, "", a->mutable_t());
  } else {
    fail(node.describe(), ": attribute '", name, "' has a type ONNX export does not know");
  }
}

struct Built {
  onnx::ModelProto model;
  // Initializers moved out of the model: proto index -> tensor, written to the data file in order.
  std::vector<std::pair<int, Tensor>> external;
};

Built build_model(const ir::Graph& graph_in, const ExportOptions& opt, bool allow_external) {
  // Names must be unique and non-empty in ONNX; uniquify a copy only when needed.
  const ir::Graph* gptr = &graph_in;
  ir::Graph renamed;
  {
    std::set<std::string> names;
    bool clean = true;
    for (auto& v : graph_in.values) clean = clean && !v.name.empty() && names.insert(v.name).second;
    if (!clean) {
      renamed = graph_in;
      renamed.uniquify_names();
      gptr = &renamed;
    }
  }
  const ir::Graph& g = *gptr;
  ir::verify_structure(g);

  Built out;
  onnx::ModelProto& m = out.model;
  m.set_ir_version(8);
  m.set_producer_name(opt.producer);
  bool uses_segmux = false;
  for (auto& n : g.nodes) {
    SEGMUX_CHECK(n.domain.empty() || n.domain == "segmux", n.describe(), ": domain '", n.domain,
                 "' cannot be exported");
    uses_segmux = uses_segmux || n.domain == "segmux";
  }
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opt.opset);
  if (uses_segmux) {
    auto* own = m.add_opset_import();
    own->set_domain("segmux");
    own->set_version(1);
  }
  for (auto& [k, v] : g.metadata) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }

  onnx::GraphProto* gp = m.mutable_graph();
  gp->set_name(g.name.empty() ? "graph" : g.name);
  for (int v : g.inputs) {
    SEGMUX_CHECK(g.value(v).has_shape, "graph input '", g.value(v).name,
                 "' has no static shape; ONNX export needs at least its rank (fix the input shapes first)");
    set_type(gp->add_input(), g.value(v));
  }
  for (int v : g.outputs) set_type(gp->add_output(), g.value(v));

  size_t total = 0;
  for (auto& [id, t] : g.initializers) total += t.nbytes();
  const bool go_external = total > opt.external_data_threshold;
  SEGMUX_CHECK(!go_external || allow_external, "graph '", g.name, "' holds ", total,
               " bytes of initializers, over the external data threshold of ", opt.external_data_threshold,
               ": export it to a file (export_onnx_file) so the weights can go to an external data file");
  for (auto& [id, t] : g.initializers) {
    auto* tp = gp->add_initializer();
    if (go_external && t.nbytes() >= opt.external_data_min_bytes) {
      tp->set_name(g.value(id).name);
      tp->set_data_type(dtype_to_onnx(t.dtype()));
      for (int64_t d : t.shape()) tp->add_dims(d);
      out.external.emplace_back(gp->initializer_size() - 1, t);
    } else {
      tensor_to_proto(t, g.value(id).name, tp);
    }
  }

  std::set<int> io;
  for (int v : g.inputs) io.insert(v);
  for (int v : g.outputs) io.insert(v);
  for (auto& [id, t] : g.initializers) io.insert(id);

  for (const ir::Node& n : g.nodes) {
    auto* np = gp->add_node();
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    np->set_name(n.name);
    for (int v : n.inputs) np->add_input(v < 0 ? "" : g.value(v).name);
    size_t last = n.outputs.size();  // trailing omitted outputs are simply left off
    while (last > 0 && n.outputs[last - 1] < 0) --last;
    for (size_t k = 0; k < last; ++k) np->add_output(n.outputs[k] < 0 ? "" : g.value(n.outputs[k]).name);
    const onnx::OpSchema* schema =
        n.domain.empty() ? onnx::OpSchemaRegistry::Schema(n.op_type, opt.opset, "") : nullptr;
    for (auto& [name, value] : n.attrs) set_attribute(np->add_attribute(), name, value, schema, n);
    for (int o : n.outputs)
      if (o >= 0 && !io.count(o) && g.value(o).has_shape) set_type(gp->add_value_info(), g.value(o));
  }
  // ONNX requires a shape (at least a rank) on graph outputs; ONNX's own inference fills in those
  // our IR does not know statically (e.g. Range, data-dependent sizes).
  bool output_without_shape = false;
  for (const auto& o : gp->output()) output_without_shape |= !o.type().tensor_type().has_shape();
  if (output_without_shape) {
    try {
      onnx::shape_inference::InferShapes(m);
    } catch (const std::exception& e) {
      fail("graph '", g.name, "': ONNX shape inference for outputs without a static shape failed: ", e.what());
    }
    for (const auto& o : gp->output())
      SEGMUX_CHECK(o.type().tensor_type().has_shape(), "graph output '", o.name(),
                   "' has no known rank, which ONNX requires of graph outputs");
  }
  return out;
}

void check_exported(const onnx::ModelProto& m, const std::string& model_dir) {
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(int(m.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (auto& imp : m.opset_import()) opsets[imp.domain()] = int(imp.version());
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(model_dir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(m.graph(), ctx, lex);
  } catch (const std::exception& e) {
    fail("exported ONNX model fails the ONNX checker: ", e.what());
  }
}

std::string serialize(const onnx::ModelProto& m) {
  std::string bytes;
  SEGMUX_CHECK(m.ByteSizeLong() < size_t(INT32_MAX), "exported model is over 2 GB even without external data");
  SEGMUX_CHECK(m.SerializeToString(&bytes), "serializing the ONNX model failed");
  return bytes;
}

}  // namespace

std::string export_onnx_bytes(const ir::Graph& g, const ExportOptions& opt) {
  Built b = build_model(g, opt, false);
  check_exported(b.model, "");
  return serialize(b.model);
}

void export_onnx_file(const ir::Graph& g, const std::string& path, const ExportOptions& opt) {
  Built b = build_model(g, opt, true);
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string file_name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (!b.external.empty()) {
    const std::string data_name = file_name + ".data";
    // Offsets aligned to 64 bytes so the importer (and ORT) can use the data in place.
    size_t size = 0;
    std::vector<size_t> offsets;
    for (auto& [index, t] : b.external) {
      size = (size + 63) / 64 * 64;
      offsets.push_back(size);
      size += t.nbytes();
    }
    std::vector<char> data(size, 0);
    for (size_t i = 0; i < b.external.size(); ++i) {
      const Tensor& t = b.external[i].second;
      std::memcpy(data.data() + offsets[i], t.raw(), t.nbytes());
      auto* tp = b.model.mutable_graph()->mutable_initializer(b.external[i].first);
      tp->set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* k, const std::string& v) {
        auto* e = tp->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_name);
      add("offset", std::to_string(offsets[i]));
      add("length", std::to_string(t.nbytes()));
    }
    write_file_atomic(dir + "/" + data_name, data.data(), data.size());
  }
  check_exported(b.model, dir);
  std::string bytes = serialize(b.model);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace segmux::onnx_io
