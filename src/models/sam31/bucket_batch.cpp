#include "models/sam31/bucket_batch.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/tensor_ops.h"
#include "ir/builder.h"
#include "models/sam31/tensor_names.h"

namespace segmux::sam31 {

namespace {

constexpr const char* kBucketsTag = "buckets";

// Tensors (d0, rest...) with equal `rest` -> (sum d0, rest...).
Tensor concat_rows(const std::vector<Tensor>& parts, const std::string& what) {
  SEGMUX_CHECK(!parts.empty(), what, ": nothing to stack");
  Shape shape = parts[0].shape();
  SEGMUX_CHECK(!shape.empty(), what, ": a scalar cannot be stacked over buckets");
  int64_t rows = 0;
  for (const Tensor& p : parts) {
    Shape rest = p.shape();
    SEGMUX_CHECK(p.dtype() == parts[0].dtype() && rest.size() == shape.size(), what, ": buckets disagree on the ",
                 "input's dtype or rank");
    rows += rest[0];
    rest[0] = shape[0];
    SEGMUX_CHECK(rest == shape, what, ": buckets disagree on the shape (", shape_str(p.shape()), " vs ",
                 shape_str(parts[0].shape()), ")");
  }
  shape[0] = rows;
  Tensor out(parts[0].dtype(), shape);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (const Tensor& p : parts) {
    std::memcpy(dst, p.raw(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

const std::vector<std::string>& per_bucket_inputs(CandidateId id) {
  namespace pd = names::propagation_decoder;
  namespace me = names::memory_encoder;
  static const std::vector<std::string> propagation = {pd::kMemoryMaskmem, pd::kObjPtrs, pd::kSlotValid};
  static const std::vector<std::string> memory = {me::kMaskLogits, me::kSlotValid, me::kSlotConditioning,
                                                  me::kSlotObjectScore};
  static const std::vector<std::string> none;
  switch (id) {
    case CandidateId::propagation_decoder:
      return propagation;
    case CandidateId::memory_encoder:
      return memory;
    default:
      return none;
  }
}

bool has_bucket_variants(CandidateId id) { return !per_bucket_inputs(id).empty(); }

std::string bucket_variant(const std::string& base, int buckets) {
  SEGMUX_CHECK(buckets >= 2, "a bucket variant needs at least 2 buckets, got ", buckets);
  const std::string tag = kBucketsTag + std::to_string(buckets);
  return base.empty() ? tag : base + "." + tag;
}

bool parse_bucket_variant(const std::string& variant, std::string* base, int* buckets) {
  const size_t dot = variant.rfind('.');
  const std::string tail = dot == std::string::npos ? variant : variant.substr(dot + 1);
  const std::string tag = kBucketsTag;
  if (tail.size() <= tag.size() || tail.compare(0, tag.size(), tag) != 0 || tail.size() > tag.size() + 3) return false;
  int n = 0;
  for (size_t i = tag.size(); i < tail.size(); ++i) {
    if (tail[i] < '0' || tail[i] > '9') return false;
    n = n * 10 + (tail[i] - '0');
  }
  if (n < 2 || tail[tag.size()] == '0') return false;
  *base = dot == std::string::npos ? "" : variant.substr(0, dot);
  *buckets = n;
  return true;
}

ir::Graph replicate_over_buckets(const ir::Graph& one, int buckets, const std::vector<std::string>& per_bucket) {
  SEGMUX_CHECK(buckets >= 2, one.name, ": a bucket variant needs at least 2 buckets, got ", buckets);
  ir::Graph g;
  g.name = one.name;
  g.metadata = one.metadata;
  g.metadata["buckets"] = std::to_string(buckets);
  ir::GraphBuilder b(g);
  // Values every copy shares: the inputs given once and the initializers (the weights).
  std::map<int, int> shared;
  std::map<int, int> stacked;  // one-bucket input id -> batched input id
  for (int in : one.inputs) {
    const ir::Value& v = one.value(in);
    SEGMUX_CHECK(v.has_shape && !v.shape.empty(), one.name, ": input ", v.name, " has no fixed shape");
    const bool split = std::find(per_bucket.begin(), per_bucket.end(), v.name) != per_bucket.end();
    Shape s = v.shape;
    if (split) s[0] *= buckets;
    (split ? stacked : shared)[in] = b.input(v.name, v.dtype, s);
  }
  for (const std::string& name : per_bucket)
    SEGMUX_CHECK(one.find_value(name) >= 0, one.name, ": no input named ", name);
  for (const auto& [id, t] : one.initializers) {
    const ir::Value& v = one.value(id);
    const int nv = g.add_value(v.name, v.dtype, v.shape);
    g.initializers[nv] = t;  // shared storage: the copies read one tensor
    shared[id] = nv;
  }
  std::vector<std::vector<int>> outs(one.outputs.size());
  for (int k = 0; k < buckets; ++k) {
    const std::string prefix = "bucket" + std::to_string(k) + "/";
    std::map<int, int> ids = shared;
    for (const auto& [in, batched] : stacked) {
      const int64_t rows = one.value(in).shape[0];
      ids[in] = b.op1("Slice", {batched, b.ints({k * rows}), b.ints({(k + 1) * rows}), b.ints({0})});
    }
    for (const ir::Node& n : one.nodes) {
      ir::Node c = n;
      c.name = prefix + n.name;
      for (int& i : c.inputs)
        if (i >= 0) i = ids.at(i);
      for (int& o : c.outputs) {
        if (o < 0) continue;
        const ir::Value& v = one.value(o);
        const int nv =
            g.add_value(prefix + v.name, v.dtype, v.has_shape ? std::optional<Shape>(v.shape) : std::optional<Shape>());
        g.value(nv).producer = int(g.nodes.size());
        ids[o] = nv;
        o = nv;
      }
      g.nodes.push_back(std::move(c));
    }
    for (size_t o = 0; o < one.outputs.size(); ++o) outs[o].push_back(ids.at(one.outputs[o]));
  }
  for (size_t o = 0; o < one.outputs.size(); ++o) {
    const ir::Value& v = one.value(one.outputs[o]);
    SEGMUX_CHECK(v.has_shape && !v.shape.empty() && v.shape[0] == 1, one.name, ": output ", v.name,
                 " has no leading dimension of 1");
    b.output(b.op1("Concat", outs[o], {{"axis", int64_t(0)}}), v.name);
  }
  ir::verify_structure(g);
  return g;
}

std::map<std::string, Tensor> stack_bucket_inputs(const std::vector<std::map<std::string, Tensor>>& per_bucket,
                                                  const std::vector<std::string>& per_bucket_names, bool check_shared) {
  SEGMUX_CHECK(!per_bucket.empty(), "stack_bucket_inputs: no buckets");
  std::map<std::string, Tensor> out;
  for (const auto& [name, first] : per_bucket[0]) {
    const bool split = std::find(per_bucket_names.begin(), per_bucket_names.end(), name) != per_bucket_names.end();
    std::vector<Tensor> parts;
    for (size_t k = 0; k < per_bucket.size(); ++k) {
      auto it = per_bucket[k].find(name);
      SEGMUX_CHECK(it != per_bucket[k].end(), "stack_bucket_inputs: bucket ", k, " lacks input ", name);
      if (!split)
        SEGMUX_CHECK(it->second.shape() == first.shape() && (!check_shared || same_bytes(it->second, first)),
                     "stack_bucket_inputs: input ", name, " is shared by the buckets but bucket ", k, " differs");
      parts.push_back(it->second);
    }
    out[name] = split ? concat_rows(parts, name) : first;
  }
  return out;
}

std::vector<std::map<std::string, Tensor>> split_bucket_outputs(const std::map<std::string, Tensor>& outputs,
                                                                int buckets) {
  std::vector<std::map<std::string, Tensor>> per(static_cast<size_t>(buckets));
  for (const auto& [name, t] : outputs) {
    SEGMUX_CHECK(t.rank() >= 1 && t.dim(0) == buckets, "output ", name, " of shape ", shape_str(t.shape()),
                 " does not hold ", buckets, " buckets on axis 0");
    for (int k = 0; k < buckets; ++k) per[size_t(k)][name] = take(t, 0, k, 1);
  }
  return per;
}

}  // namespace segmux::sam31
