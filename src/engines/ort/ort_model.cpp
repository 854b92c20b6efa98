#include "engines/ort/ort_model.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#if !defined(SEGMUX_NO_ORT) && __has_include(<onnxruntime_c_api.h>)
#define SEGMUX_HAVE_ORT_HEADER 1
#include <dlfcn.h>
#include <limits.h>
#include <onnxruntime_c_api.h>
#else
#define SEGMUX_HAVE_ORT_HEADER 0
#endif

#ifndef SEGMUX_ORT_DEFAULT_LIB
#define SEGMUX_ORT_DEFAULT_LIB ""
#endif
#ifndef SEGMUX_BUILD_DIR
#define SEGMUX_BUILD_DIR ""
#endif

namespace segmux {

std::vector<std::string> ort_library_candidates(const std::string& env_lib, const std::string& module_dir,
                                                const std::string& build_dir, const std::string& build_tree_lib) {
  if (!env_lib.empty()) return {env_lib};
  std::vector<std::string> paths;
  const auto inside = [](const std::string& dir, const std::string& root) {
    return !root.empty() && dir.size() >= root.size() && dir.compare(0, root.size(), root) == 0 &&
           (dir.size() == root.size() || dir[root.size()] == '/');
  };
  if (!build_tree_lib.empty() && inside(module_dir, build_dir)) paths.push_back(build_tree_lib);
  if (!module_dir.empty()) paths.push_back(module_dir + "/libonnxruntime.so");
  paths.push_back("libonnxruntime.so");
  return paths;
}

#if SEGMUX_HAVE_ORT_HEADER

namespace {

// The process-wide state: the loaded library, its API table and one OrtEnv. Created once, on first
// use, and deliberately never torn down (ORT's own threads may outlive static destructors).
struct OrtRuntime {
  const OrtApi* api = nullptr;
  OrtEnv* env = nullptr;
  std::string error;  // non-empty when loading failed
};

// The folder of the executable or shared library this code was linked into.
std::string this_module_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&this_module_dir), &info) == 0 || !info.dli_fname) return {};
  char resolved[PATH_MAX];
  if (!realpath(info.dli_fname, resolved)) return {};
  std::string path(resolved);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The libraries to try, in order (see ort_model.h).
std::vector<std::string> library_paths() {
  const char* env = std::getenv("SEGMUX_ORT_LIB");
  return ort_library_candidates(env ? env : "", this_module_dir(), SEGMUX_BUILD_DIR, SEGMUX_ORT_DEFAULT_LIB);
}

OrtRuntime& runtime() {
  static OrtRuntime rt;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = nullptr;
    std::string path, tried;
    for (const std::string& p : library_paths()) {
      handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        path = p;
        break;
      }
      const char* e = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + "'" + p + "': " + (e ? e : "unknown dlopen error");
    }
    if (!handle) {
      rt.error = "cannot load ONNX Runtime (tried " + tried +
                 "); set SEGMUX_ORT_LIB to its libonnxruntime.so, put it beside the segmux binary or library, or "
                 "on the loader's path (in a source tree: scripts/setup.sh installs it)";
      return;
    }
    using GetApiBaseFn = const OrtApiBase* (*)();
    auto get_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
    if (!get_base) {
      rt.error = "'" + path + "' has no OrtGetApiBase symbol; is it libonnxruntime?";
      return;
    }
    const OrtApiBase* base = get_base();
    const OrtApi* api = base ? base->GetApi(ORT_API_VERSION) : nullptr;
    if (!api) {
      rt.error = "ONNX Runtime at '" + path + "' (version " + std::string(base ? base->GetVersionString() : "?") +
                 ") does not offer C API version " + std::to_string(ORT_API_VERSION);
      return;
    }
    OrtEnv* env = nullptr;
    if (OrtStatus* st = api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "segmux-ort", &env)) {
      rt.error = std::string("ONNX Runtime CreateEnv failed: ") + api->GetErrorMessage(st);
      api->ReleaseStatus(st);
      return;
    }
    rt.api = api;
    rt.env = env;
  });
  return rt;
}

const OrtApi& api_or_throw() {
  OrtRuntime& rt = runtime();
  if (!rt.api) fail("ONNX Runtime unavailable: ", rt.error);
  return *rt.api;
}

// Turns an OrtStatus into a segmux::Error (and releases it).
void check(const OrtApi& api, OrtStatus* st, const char* what) {
  if (!st) return;
  std::string msg = api.GetErrorMessage(st);
  api.ReleaseStatus(st);
  fail("ONNX Runtime: ", what, ": ", msg);
}

ONNXTensorElementDataType to_ort(DType t) {
  switch (t) {
    case DType::f32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DType::f16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DType::bf16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case DType::f64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DType::i64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DType::i32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DType::i8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DType::u8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DType::boolean:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
  }
  fail("unknown dtype");
}

bool from_ort(ONNXTensorElementDataType t, DType* out) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      *out = DType::f32;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      *out = DType::f16;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      *out = DType::bf16;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      *out = DType::f64;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      *out = DType::i64;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      *out = DType::i32;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      *out = DType::i8;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      *out = DType::u8;
      return true;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      *out = DType::boolean;
      return true;
    default:
      return false;
  }
}

// Owns OrtValues for the duration of one run.
struct ValueList {
  const OrtApi& api;
  std::vector<OrtValue*> values;
  explicit ValueList(const OrtApi& a, size_t n) : api(a), values(n, nullptr) {}
  ~ValueList() {
    for (OrtValue* v : values)
      if (v) api.ReleaseValue(v);
  }
};

std::vector<std::string> session_names(const OrtApi& api, OrtSession* s, bool inputs) {
  OrtAllocator* alloc = nullptr;
  check(api, api.GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");
  size_t n = 0;
  check(api, inputs ? api.SessionGetInputCount(s, &n) : api.SessionGetOutputCount(s, &n), "SessionGet*Count");
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    char* name = nullptr;
    check(api, inputs ? api.SessionGetInputName(s, i, alloc, &name) : api.SessionGetOutputName(s, i, alloc, &name),
          "SessionGet*Name");
    names.emplace_back(name);
    check(api, api.AllocatorFree(alloc, name), "AllocatorFree");
  }
  return names;
}

}  // namespace

bool ort_available(std::string* why) {
  OrtRuntime& rt = runtime();
  if (!rt.api && why) *why = rt.error;
  return rt.api != nullptr;
}

void OrtModel::open(const std::string* path, const std::string* bytes, const OrtModelOptions& options) {
  const OrtApi& api = api_or_throw();
  OrtSessionOptions* so = nullptr;
  check(api, api.CreateSessionOptions(&so), "CreateSessionOptions");
  struct ReleaseOptions {
    const OrtApi& api;
    OrtSessionOptions* so;
    ~ReleaseOptions() { api.ReleaseSessionOptions(so); }
  } release{api, so};
  check(api, api.SetIntraOpNumThreads(so, options.num_threads < 1 ? 1 : options.num_threads), "SetIntraOpNumThreads");
  check(api, api.SetInterOpNumThreads(so, 1), "SetInterOpNumThreads");
  check(api, api.SetSessionGraphOptimizationLevel(so, options.optimize ? ORT_ENABLE_ALL : ORT_DISABLE_ALL),
        "SetSessionGraphOptimizationLevel");
  if (!options.spin)
    check(api, api.AddSessionConfigEntry(so, "session.intra_op.allow_spinning", "0"), "AddSessionConfigEntry");
  OrtSession* s = nullptr;
  if (path) {
    check(api, api.CreateSession(runtime().env, path->c_str(), so, &s), ("loading '" + *path + "'").c_str());
  } else {
    check(api, api.CreateSessionFromArray(runtime().env, bytes->data(), bytes->size(), so, &s), "loading model bytes");
  }
  session_ = s;
  try {
    input_names_ = session_names(api, s, true);
    output_names_ = session_names(api, s, false);
  } catch (...) {
    api.ReleaseSession(s);  // the destructor does not run when a constructor throws
    session_ = nullptr;
    throw;
  }
}

OrtModel::OrtModel(const std::string& onnx_path, int num_threads)
    : OrtModel(onnx_path, OrtModelOptions{num_threads, true}) {}

OrtModel::OrtModel(const std::string& onnx_path, const OrtModelOptions& options) { open(&onnx_path, nullptr, options); }

std::unique_ptr<OrtModel> OrtModel::from_bytes(const std::string& model_bytes, const OrtModelOptions& options) {
  std::unique_ptr<OrtModel> p(new OrtModel());
  p->open(nullptr, &model_bytes, options);
  return p;
}

OrtModel::~OrtModel() {
  if (session_) runtime().api->ReleaseSession(static_cast<OrtSession*>(session_));
}

std::map<std::string, Tensor> OrtModel::run(const std::map<std::string, Tensor>& inputs) {
  const OrtApi& api = api_or_throw();
  OrtAllocator* alloc = nullptr;
  check(api, api.GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");

  ValueList in_values(api, inputs.size());
  std::vector<const char*> in_names;
  size_t k = 0;
  for (auto& [name, t] : inputs) {
    SEGMUX_CHECK(t.defined(), "ONNX Runtime: input '", name, "' is an empty tensor handle");
    const Shape& shape = t.shape();
    int64_t dummy = 0;
    check(api,
          api.CreateTensorAsOrtValue(alloc, shape.empty() ? &dummy : shape.data(), shape.size(), to_ort(t.dtype()),
                                     &in_values.values[k]),
          ("creating input '" + name + "'").c_str());
    if (t.nbytes() > 0) {
      void* dst = nullptr;
      check(api, api.GetTensorMutableData(in_values.values[k], &dst), "GetTensorMutableData");
      std::memcpy(dst, t.raw(), t.nbytes());
    }
    in_names.push_back(name.c_str());
    ++k;
  }
  std::vector<const char*> out_names;
  for (auto& n : output_names_) out_names.push_back(n.c_str());
  ValueList out_values(api, out_names.size());
  check(api,
        api.Run(static_cast<OrtSession*>(session_), nullptr, in_names.data(), in_values.values.data(), in_names.size(),
                out_names.data(), out_names.size(), out_values.values.data()),
        "Run");

  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < out_names.size(); ++i) {
    OrtValue* v = out_values.values[i];
    int is_tensor = 0;
    check(api, api.IsTensor(v, &is_tensor), "IsTensor");
    SEGMUX_CHECK(is_tensor, "ONNX Runtime: output '", output_names_[i], "' is not a tensor");
    OrtTensorTypeAndShapeInfo* info = nullptr;
    check(api, api.GetTensorTypeAndShape(v, &info), "GetTensorTypeAndShape");
    ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t rank = 0;
    OrtStatus* st = api.GetTensorElementType(info, &et);
    if (!st) st = api.GetDimensionsCount(info, &rank);
    Shape shape(rank);
    if (!st && rank) st = api.GetDimensions(info, shape.data(), rank);
    api.ReleaseTensorTypeAndShapeInfo(info);
    check(api, st, "reading output type");
    DType dt;
    SEGMUX_CHECK(from_ort(et, &dt), "ONNX Runtime: output '", output_names_[i], "' has element type ", int(et),
                 ", which segmux tensors cannot hold");
    Tensor out(dt, shape);
    if (out.nbytes() > 0) {
      void* src = nullptr;
      check(api, api.GetTensorMutableData(v, &src), "GetTensorMutableData");
      std::memcpy(out.raw(), src, out.nbytes());
    }
    result.emplace(output_names_[i], std::move(out));
  }
  return result;
}

#else  // no ONNX Runtime header at build time: a stub that explains itself

#ifdef SEGMUX_NO_ORT
#define SEGMUX_ORT_OFF_REASON "segmux was built without ONNX Runtime (cmake -DSEGMUX_ORT=OFF)"
#else
#define SEGMUX_ORT_OFF_REASON                                                                               \
  "segmux was built without the ONNX Runtime C API header (third_party/ort/include); run scripts/setup.sh " \
  "and re-run cmake"
#endif

bool ort_available(std::string* why) {
  if (why) *why = SEGMUX_ORT_OFF_REASON;
  return false;
}

OrtModel::OrtModel(const std::string& onnx_path, int num_threads)
    : OrtModel(onnx_path, OrtModelOptions{num_threads, true}) {}
OrtModel::OrtModel(const std::string&, const OrtModelOptions&) {
  std::string why;
  ort_available(&why);
  fail("ONNX Runtime unavailable: ", why);
}
std::unique_ptr<OrtModel> OrtModel::from_bytes(const std::string&, const OrtModelOptions&) {
  std::string why;
  ort_available(&why);
  fail("ONNX Runtime unavailable: ", why);
}
OrtModel::~OrtModel() = default;
void OrtModel::open(const std::string*, const std::string*, const OrtModelOptions&) {}
std::map<std::string, Tensor> OrtModel::run(const std::map<std::string, Tensor>&) { fail("ONNX Runtime unavailable"); }

#endif

}  // namespace segmux
