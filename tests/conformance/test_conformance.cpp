// Conformance against ONNX's backend node tests (libonnx-testdata, ONNX 1.12): every case is
// imported and run with our Interpreter, reference kernels then optimized kernels, and compared with the
// backend's default tolerance (rtol 1e-3, atol 1e-7; NaN equals NaN; ints and bools exact).
//
// tests/conformance/expectations.txt drives it: every case is listed as "pass <case>" (claimed: must
// pass) or "exclude <case> <reason>". The test fails when a claimed case fails, when the file lists a
// case that does not exist, or when a case is missing from the file. An excluded case that passes is
// reported so the list stays honest.
//
// Maintenance: SEGMUX_CONFORMANCE_WRITE=<file> writes the current status in the same format (keeping
// hand-written reasons of cases that still fail); SEGMUX_CONFORMANCE_DOC=<file> writes docs/conformance.md.
// SEGMUX_ONNX_NODE_TESTS overrides the data folder; SEGMUX_CONFORMANCE_FILTER=<substring> runs a subset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "onnx/onnx_io.h"
#include "runtime/interpreter.h"

namespace segmux {
namespace {

namespace fs = std::filesystem;

const char* kDefaultData = "/usr/share/libonnx-testdata/data/node";

std::string data_dir() {
  const char* e = std::getenv("SEGMUX_ONNX_NODE_TESTS");
  return e && *e ? e : kDefaultData;
}

std::string expectations_path() { return std::string(SEGMUX_SOURCE_DIR) + "/tests/conformance/expectations.txt"; }

struct Expectation {
  bool pass = false;
  std::string reason;
  int line = 0;
};

std::map<std::string, Expectation> read_expectations(const std::string& path, std::vector<std::string>* errors) {
  std::map<std::string, Expectation> out;
  std::ifstream f(path);
  if (!f) {
    errors->push_back("cannot open " + path);
    return out;
  }
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string kind, name;
    ss >> kind >> name;
    Expectation e;
    e.line = n;
    if (kind == "pass") {
      e.pass = true;
    } else if (kind == "exclude") {
      std::getline(ss, e.reason);
      e.reason.erase(0, e.reason.find_first_not_of(' '));
      if (e.reason.empty())
        errors->push_back("line " + std::to_string(n) + ": excluded case '" + name + "' has no reason");
    } else {
      errors->push_back("line " + std::to_string(n) + ": expected 'pass <case>' or 'exclude <case> <reason>'");
      continue;
    }
    if (name.empty())
      errors->push_back("line " + std::to_string(n) + ": no case name");
    else if (!out.emplace(name, e).second)
      errors->push_back("line " + std::to_string(n) + ": '" + name + "' listed twice");
  }
  return out;
}

std::string one_line(std::string s, size_t max_len = 160) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max_len) s = s.substr(0, max_len) + "...";
  return s;
}

// Compares one output; empty string when equal within tolerance.
std::string compare(const Tensor& got, const Tensor& want, const std::string& what) {
  if (got.dtype() != want.dtype())
    return what + ": dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
           std::string(dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return what + ": shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  const bool exact = !dtype_is_float(want.dtype());
  double worst = 0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = got.get_as_double(i), b = want.get_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // also equal infinities
    double excess = exact ? 1.0 : std::fabs(a - b) - (1e-7 + 1e-3 * std::fabs(b));
    if (std::isnan(excess) || excess > 0) {
      if (worst_i < 0 || std::isnan(excess) || excess > worst) {
        worst = std::isnan(excess) ? INFINITY : excess;
        worst_i = i;
      }
    }
  }
  if (worst_i < 0) return "";
  std::ostringstream os;
  os << what << ": element " << worst_i << " is " << got.get_as_double(worst_i) << ", expected "
     << want.get_as_double(worst_i);
  return os.str();
}

struct CaseResult {
  bool passed = false;
  std::string reason;  // why it failed, "<category>: <detail>"
};

std::string classify_import_error(std::string msg) {
  const std::string prefix = "importing ONNX model '";
  if (msg.rfind(prefix, 0) == 0 && msg.find("': ") != std::string::npos) msg = msg.substr(msg.find("': ") + 3);
  auto has = [&](const char* s) { return msg.find(s) != std::string::npos; };
  size_t p = msg.find("op type '");
  if (has("is not supported by segmux") && p != std::string::npos) {
    size_t q = msg.find('\'', p + 9);
    return "op not implemented: " + msg.substr(p + 9, q - p - 9);
  }
  if (has("element type")) {
    size_t t = msg.find("element type ");
    std::string rest = msg.substr(t + 13);
    return "unsupported dtype: " + rest.substr(0, rest.find_first_of(" ,"));
  }
  if (has("subgraph")) return "control flow (subgraph attribute)";
  if (has("is not a tensor")) return "non-tensor value (sequence/optional/map)";
  if (has("upgrading opset")) return "opset upgrade failed: " + one_line(msg.substr(msg.find("upgrading opset")));
  if (has("ONNX check failed")) return "ONNX checker: " + one_line(msg.substr(msg.find("ONNX check failed") + 19));
  return "import failed: " + one_line(msg);
}

// ONNX 1.12's test data stores bfloat16 tensors with element type UINT16; read them as the bf16 the
// model declares.
Tensor read_test_tensor(const fs::path& path, DType declared) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  SEGMUX_CHECK(f.good() || f.eof(), "cannot read ", path.string());
  onnx::TensorProto p;
  if (declared == DType::bf16 && p.ParseFromString(bytes) && p.data_type() == onnx::TensorProto::UINT16) {
    p.set_data_type(onnx::TensorProto::BFLOAT16);
    bytes = p.SerializeAsString();
  }
  return onnx_io::parse_tensor_proto(bytes, "tensor file " + path.filename().string());
}

CaseResult run_case(const fs::path& dir) {
  CaseResult r;
  ir::Graph g;
  try {
    g = onnx_io::import_onnx_file((dir / "model.onnx").string());
  } catch (const std::exception& e) {
    r.reason = classify_import_error(e.what());
    return r;
  }
  std::map<std::string, Tensor> inputs;
  std::vector<Tensor> expected;
  try {
    const fs::path data = dir / "test_data_set_0";
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      fs::path p = data / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) {
        r.reason = "test data: input " + std::to_string(k) + " missing (optional input?)";
        return r;
      }
      inputs[g.value(g.inputs[k]).name] = read_test_tensor(p, g.value(g.inputs[k]).dtype);
    }
    for (size_t k = 0; k < g.outputs.size(); ++k)
      expected.push_back(read_test_tensor(data / ("output_" + std::to_string(k) + ".pb"), g.value(g.outputs[k]).dtype));
  } catch (const std::exception& e) {
    r.reason = "test data: " + one_line(e.what());
    return r;
  }
  for (bool optimized : {false, true}) {
    const std::string which = optimized ? "optimized kernels" : "reference kernels";
    std::map<std::string, Tensor> outputs;
    try {
      Interpreter s(g, InterpreterOptions{.num_threads = optimized ? 2 : 1, .use_optimized_kernels = optimized});
      outputs = s.run(inputs);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.find("no kernel") != std::string::npos || msg.find("No kernel") != std::string::npos)
        r.reason = "kernel missing (" + which + "): " + one_line(msg);
      else
        r.reason = "failed (" + which + "): " + one_line(msg);
      return r;
    }
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const std::string& name = g.value(g.outputs[k]).name;
      auto it = outputs.find(name);
      if (it == outputs.end()) {
        r.reason = "wrong result (" + which + "): output '" + name + "' missing";
        return r;
      }
      std::string diff = compare(it->second, expected[k], "output '" + name + "'");
      if (!diff.empty()) {
        r.reason = "wrong result (" + which + "): " + one_line(diff);
        return r;
      }
    }
  }
  r.passed = true;
  return r;
}

// Op type of a case for grouping: the first non-Constant node of the model as written; a function
// expansion ("<case>_expanded", many nodes) is grouped as "<op of <case>> (expanded)".
std::string case_op_type(const fs::path& dir) {
  const std::string name = dir.filename().string(), suffix = "_expanded";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    fs::path base = dir.parent_path() / name.substr(0, name.size() - suffix.size());
    if (fs::exists(base / "model.onnx")) return case_op_type(base) + " (expanded)";
  }
  onnx::ModelProto m;
  std::ifstream f(dir / "model.onnx", std::ios::binary);
  if (f && m.ParseFromIstream(&f))
    for (const auto& n : m.graph().node())
      if (n.op_type() != "Constant") return n.op_type();
  return m.graph().node_size() > 0 ? "Constant" : "(unknown)";
}

bool is_auto_reason(const std::string& reason) {
  for (const char* p :
       {"op not implemented", "unsupported dtype", "control flow", "non-tensor value", "opset upgrade failed",
        "ONNX checker", "import failed", "test data", "kernel missing", "failed (", "wrong result"})
    if (reason.rfind(p, 0) == 0) return true;
  return false;
}

void write_expectations(const std::string& path, const std::map<std::string, CaseResult>& results,
                        const std::map<std::string, std::string>& op_of,
                        const std::map<std::string, Expectation>& old) {
  std::map<std::string, std::vector<std::string>> by_op;
  for (auto& [name, r] : results) by_op[op_of.at(name)].push_back(name);
  std::ofstream f(path);
  f << "# ONNX backend node tests (libonnx-testdata 1.12): what segmux claims. Read by test_conformance.\n"
       "# 'pass <case>' must pass with reference and optimized kernels; 'exclude <case> <reason>' is not claimed.\n"
       "# Regenerate: SEGMUX_CONFORMANCE_WRITE=<file> build/<you>/test_conformance (keeps reasons of cases that still "
       "fail).\n";
  for (auto& [op, names] : by_op) {
    f << "\n# op " << op << "\n";
    for (auto& name : names) {
      const CaseResult& r = results.at(name);
      if (r.passed) {
        f << "pass " << name << "\n";
      } else {
        // A hand-written reason is kept; an automatic one is replaced by the current one.
        auto it = old.find(name);
        std::string reason = r.reason;
        if (it != old.end() && !it->second.pass && !is_auto_reason(it->second.reason)) reason = it->second.reason;
        f << "exclude " << name << " " << reason << "\n";
      }
    }
  }
}

void write_doc(const std::string& path, const std::map<std::string, CaseResult>& results,
               const std::map<std::string, std::string>& op_of, const std::map<std::string, Expectation>& expect) {
  std::map<std::string, std::pair<int, int>> per_op;  // op -> passed, excluded
  std::map<std::string, int> per_category;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> excluded_by_op;
  int passed = 0, excluded = 0;
  for (auto& [name, r] : results) {
    const std::string& op = op_of.at(name);
    auto it = expect.find(name);
    bool claimed = it != expect.end() && it->second.pass && r.passed;
    if (claimed) {
      ++passed;
      ++per_op[op].first;
    } else {
      ++excluded;
      ++per_op[op].second;
      std::string reason = it != expect.end() && !it->second.pass ? it->second.reason : r.reason;
      per_category[reason.substr(0, reason.find(':'))]++;
      excluded_by_op[op].emplace_back(name, reason);
    }
  }
  int claimed_ops = 0;
  int expanded_passed = 0;
  for (auto& [op, c] : per_op) {
    if (op.find(" (expanded)") == std::string::npos)
      claimed_ops += c.first > 0;
    else
      expanded_passed += c.first;
  }
  std::ofstream f(path);
  f << "# ONNX conformance\n\n"
       "segmux runs the ONNX backend node tests shipped by Debian's `libonnx-testdata` (ONNX 1.12: "
    << results.size()
    << " cases, each a one-op model, or its function expansion, with one input/output data set). Each case\n"
       "is imported with `onnx_io::import_onnx_file` (older opsets are upgraded to 17 by ONNX's version converter) and "
       "run\n"
       "with our `Interpreter` twice, reference kernels (1 thread) and optimized kernels (2 threads); outputs must "
       "match "
       "the expected\n"
       "ones within the backend's default tolerance (rtol 1e-3, atol 1e-7, NaN equals NaN; ints and bools exact).\n\n"
       "The claim list is `tests/conformance/expectations.txt`; `test_conformance` fails when a claimed case\n"
       "fails, when a listed case does not exist and when a case is not listed. This page is generated by\n"
       "`SEGMUX_CONFORMANCE_DOC=docs/conformance.md build/<you>/test_conformance`.\n\n"
       "## Totals\n\n"
       "| | count |\n| --- | --- |\n"
    << "| op types claimed (at least one passing case, function expansions not counted) | " << claimed_ops << " |\n"
    << "| cases passed (claimed) | " << passed << " |\n"
    << "| of which function expansions (`*_expanded`, many-node models) | " << expanded_passed << " |\n"
    << "| cases excluded | " << excluded << " |\n\n"
    << "## Excluded cases by reason\n\n| reason | cases |\n| --- | --- |\n";
  std::vector<std::pair<int, std::string>> cats;
  for (auto& [c, n] : per_category) cats.emplace_back(-n, c);
  std::sort(cats.begin(), cats.end());
  for (auto& [n, c] : cats) f << "| " << c << " | " << -n << " |\n";
  f << "\n## Claimed op types\n\n| op type | cases passed | cases excluded |\n| --- | --- | --- |\n";
  for (auto& [op, c] : per_op)
    if (c.first > 0) f << "| " << op << " | " << c.first << " | " << c.second << " |\n";
  f << "\n## Differential tests against ONNX Runtime\n\n"
       "Beyond these fixed cases, `tests/differential` (test_differential) builds small graphs of the ops\n"
       "segmux relies on (MatMul, Gemm, Einsum, Conv/ConvTranspose, pooling, Layer/Batch/Instance norms,\n"
       "Softmax, broadcast element-wise ops, Resize, RoiAlign, TopK, Gather*, Scatter*, Slice, Pad, reductions,\n"
       "shape ops and a composite conv/attention block) with seeded random inputs, exports each to ONNX and\n"
       "compares ONNX Runtime 1.30 against our Interpreter with reference and optimized kernels, each case with\n"
       "its stated tolerance (|ours - ORT| <= atol + rtol |ORT|: 1e-5/1e-4 for accumulating ops, 1e-6/1e-5\n"
       "for element-wise ones, exact for integer and bool outputs); it prints the worst differences per case.\n"
       "Each graph is also re-imported from its ONNX export and must give bit-identical outputs.\n";
  f << "\n## Excluded cases\n\n";
  for (auto& [op, list] : excluded_by_op) {
    f << "- **" << op << "**: ";
    for (size_t i = 0; i < list.size(); ++i) {
      std::string reason = list[i].second;
      for (char& ch : reason)
        if (ch == '|') ch = '/';
      f << (i ? "; " : "") << "`" << list[i].first << "` (" << reason << ")";
    }
    f << "\n";
  }
}

TEST(Conformance, OnnxBackendNodeTests) {
  const std::string dir = data_dir();
  if (!fs::is_directory(dir))
    GTEST_SKIP() << "ONNX backend node tests not found at " << dir
                 << " (apt install libonnx-testdata, or set SEGMUX_ONNX_NODE_TESTS)";
  std::vector<std::string> file_errors;
  auto expect = read_expectations(expectations_path(), &file_errors);
  for (auto& e : file_errors) ADD_FAILURE() << "expectations.txt: " << e;

  const char* filter_env = std::getenv("SEGMUX_CONFORMANCE_FILTER");
  const std::string filter = filter_env ? filter_env : "";
  std::vector<fs::path> cases;
  for (auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());

  std::map<std::string, CaseResult> results;
  std::map<std::string, std::string> op_of;
  int claimed_pass = 0, excluded_pass = 0;
  for (const fs::path& c : cases) {
    const std::string name = c.filename().string();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    CaseResult r = run_case(c);
    op_of[name] = case_op_type(c);
    auto it = expect.find(name);
    if (it == expect.end()) {
      ADD_FAILURE() << "case '" << name << "' is not listed in expectations.txt (it "
                    << (r.passed ? "passes" : "fails: " + r.reason) << ")";
    } else if (it->second.pass && !r.passed) {
      ADD_FAILURE() << "claimed case '" << name << "' fails: " << r.reason;
    } else if (it->second.pass) {
      ++claimed_pass;
    } else if (r.passed) {
      ++excluded_pass;
      std::cout << "[ NOTE ] excluded case '" << name << "' now passes (was: " << it->second.reason
                << "); claim it in expectations.txt\n";
    }
    results.emplace(name, std::move(r));
  }
  if (filter.empty()) {
    std::set<std::string> present;
    for (auto& c : cases) present.insert(c.filename().string());
    for (auto& [name, e] : expect)
      if (!present.count(name))
        ADD_FAILURE() << "expectations.txt line " << e.line << " lists '" << name << "', which no longer exists in "
                      << dir;
  }
  std::cout << "[ INFO ] conformance: " << results.size() << " cases run, " << claimed_pass << " claimed and passing, "
            << excluded_pass << " excluded but passing\n";
  if (const char* w = std::getenv("SEGMUX_CONFORMANCE_WRITE")) write_expectations(w, results, op_of, expect);
  if (const char* d = std::getenv("SEGMUX_CONFORMANCE_DOC")) write_doc(d, results, op_of, expect);
}

// The comparison itself must be able to fail.
TEST(Conformance, ComparisonCatchesDifferences) {
  Tensor a = Tensor::from_vector<float>({3}, {1.0f, NAN, 2.0f});
  EXPECT_EQ(compare(a, a, "x"), "");
  Tensor b = Tensor::from_vector<float>({3}, {1.0f, NAN, 2.01f});
  EXPECT_NE(compare(a, b, "x"), "");
  Tensor c = Tensor::from_vector<float>({3}, {1.0f, 0.0f, 2.0f});
  EXPECT_NE(compare(a, c, "x"), "");
  Tensor d = Tensor::from_vector<float>({3}, {1.0005f, NAN, 2.0f});  // within rtol 1e-3
  EXPECT_EQ(compare(d, a, "x"), "");
  Tensor i = Tensor::from_vector<int64_t>({2}, {1, 2}), j = Tensor::from_vector<int64_t>({2}, {1, 3});
  EXPECT_NE(compare(i, j, "x"), "");
  EXPECT_NE(compare(a, a.reshaped({3, 1}), "x"), "");
}

}  // namespace
}  // namespace segmux
