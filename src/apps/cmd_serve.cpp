// segmux serve: the official SAM 3.1 request API over HTTP (cpp-httplib), with the web page at /.
// The request handling is service/service.h (no HTTP there); this file maps routes onto it, checks
// the bearer token, streams propagate_in_video as NDJSON and runs the idle-session expiry. docs/serve.md.
#include <signal.h>

#include <httplib.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <thread>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/precision_option.h"
#include "core/error.h"
#include "pipeline/model_store/model_store.h"
#include "pipeline/predictor/control_config.h"
#include "service/service.h"
#include "service/web_assets.h"

namespace segmux::apps {
namespace {

using nlohmann::json;
using service::RequestService;
using service::ServiceError;

std::string text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(text(j) + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", message}, {"status", status}});
}

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

// Equal strings, in a time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0;
}

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string token, allow_dir;
  int64_t max_body_bytes = int64_t(256) << 20;
  service::ServiceLimits limits;
};

class Server {
 public:
  Server(const Options& opt, RequestService& svc, service::ResourceStore& store)
      : opt_(opt), svc_(svc), store_(store) {}

  void routes() {
    http_.set_payload_max_length(size_t(opt_.max_body_bytes));
    http_.new_task_queue = [n = size_t(opt_.limits.max_sessions) * 2 + 6] { return new httplib::ThreadPool(n); };
    http_.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        send_error(res, 500, store_.public_text(std::string("internal error: ") + e.what()));
      } catch (...) {
        send_error(res, 500, "internal error");
      }
    });
    // Unknown routes (and the library's own refusals, e.g. a body over the limit) answer JSON too.
    http_.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours, JSON already
          const int status = res.status;
          if (status == 404)
            send_error(res, 404,
                       "no route " + req.method + " " + req.path.substr(0, 200) + " (docs/serve.md lists the API)");
          else if (status == 413)
            send_error(res, 413, "the request body is larger than --max-body-bytes");
          else
            send_error(res, status, "the server refused the request (HTTP " + std::to_string(status) + ")");
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.Get("/", [](const httplib::Request&, httplib::Response& res) { asset(res, "index.html"); });
    http_.Get(R"(/static/([A-Za-z0-9_.-]+))",
              [](const httplib::Request& req, httplib::Response& res) { asset(res, req.matches[1].str()); });
    http_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"status", "ok"}});
    });
    guarded_get("/metrics",
                [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, svc_.metrics()); });
    guarded_get("/api/videos", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"videos", store_.list_videos()}, {"max_upload_bytes", store_.max_upload_bytes()}});
    });
    guarded_get("/api/frame", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_content(svc_.frame_png(req.get_param_value("session_id"), int_param(req, "index")), "image/png");
    });
    guarded_get("/api/export", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.get_param_value("session_id"), what = req.get_param_value("what");
      if (what == "tracks") {
        res.set_header("Content-Disposition", "attachment; filename=\"tracks.json\"");
        res.set_content(svc_.export_tracks(id), "application/json");
      } else if (what == "overlay") {
        std::string ext;
        std::string bytes = svc_.export_overlay(id, ext);
        res.set_header("Content-Disposition", "attachment; filename=\"overlay" + ext + "\"");
        res.set_content(std::move(bytes), ext == ".gif" ? "image/gif" : "video/mp4");
      } else {
        throw ServiceError(400, "export: 'what' must be tracks or overlay");
      }
    });
    guarded_post("/api/upload", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.is_multipart_form_data()) {
        if (!req.has_file("file")) throw ServiceError(400, "upload: the multipart form has no 'file' part");
        const auto f = req.get_file_value("file");
        send_json(res, 200, store_.add_upload(f.filename, f.content));
      } else {
        const std::string name = req.has_param("filename") ? req.get_param_value("filename") : "";
        if (name.empty()) throw ServiceError(400, "upload: a raw body needs ?filename=NAME.mp4 (or send multipart)");
        send_json(res, 200, store_.add_upload(name, req.body));
      }
    });
    guarded_post("/api/request", [this](const httplib::Request& req, httplib::Response& res) { request(req, res); });
  }

  // Binds (port 0: any free port) and prints the address; returns the port.
  int bind() {
    const int port = opt_.port == 0                             ? http_.bind_to_any_port(opt_.host)
                     : http_.bind_to_port(opt_.host, opt_.port) ? opt_.port
                                                                : -1;
    if (port <= 0) fail("cannot listen on ", opt_.host, ":", opt_.port, " (in use, or not an address of this machine)");
    return port;
  }
  void listen() { http_.listen_after_bind(); }
  void stop() { http_.stop(); }

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  static void asset(httplib::Response& res, const std::string& name) {
    auto a = service::web_asset(name);
    if (!a) return send_error(res, 404, "no file '" + name + "'");
    res.set_content(std::string(a->data), std::string(a->content_type).c_str());
  }
  static int int_param(const httplib::Request& req, const char* key) {
    const std::string v = req.get_param_value(key);
    try {
      size_t used = 0;
      const long n = std::stol(v, &used);
      if (used == v.size() && n >= 0 && n <= std::numeric_limits<int>::max()) return int(n);
    } catch (const std::exception&) {
    }
    throw ServiceError(400, std::string("'") + key + "' must be a non-negative integer, got '" + v + "'");
  }

  // Token check and ServiceError -> JSON error for every API route.
  Handler guarded(Handler h) {
    return [this, h](const httplib::Request& req, httplib::Response& res) {
      if (!opt_.token.empty()) {
        const std::string auth = req.get_header_value("Authorization");
        if (auth.rfind("Bearer ", 0) != 0 || !same_secret(auth.substr(7), opt_.token))
          return send_error(res, 401, "missing or wrong bearer token (Authorization: Bearer TOKEN)");
      }
      try {
        h(req, res);
      } catch (const ServiceError& e) {
        send_error(res, e.status, store_.public_text(e.what()));
      } catch (const Error& e) {
        send_error(res, 400, store_.public_text(e.what()));
      }
    };
  }
  void guarded_get(const char* path, Handler h) { http_.Get(path, guarded(std::move(h))); }
  void guarded_post(const char* path, Handler h) { http_.Post(path, guarded(std::move(h))); }

  void request(const httplib::Request& req, httplib::Response& res) {
    const json r = RequestService::parse_body(req.body);
    if (!RequestService::is_stream(r)) return send_json(res, 200, svc_.handle(r));
    // Checked (and the model taken) before the 200: a bad request gets its 4xx, not a broken stream.
    auto run = std::make_shared<RequestService::StreamRun>(svc_.stream(r));
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider("application/x-ndjson", [this, run](size_t, httplib::DataSink& sink) {
      try {
        (*run)([&](const json& frame) {
          const std::string line = text(frame) + "\n";
          return sink.is_writable() && sink.write(line.data(), line.size());
        });
      } catch (const std::exception& e) {  // after the 200: the error is the stream's last line
        const std::string line = text({{"error", store_.public_text(e.what())}}) + "\n";
        sink.write(line.data(), line.size());
      }
      *run = nullptr;  // releases the model now, not when the connection closes
      sink.done();
      return true;
    });
  }

  Options opt_;
  RequestService& svc_;
  service::ResourceStore& store_;
  httplib::Server http_;
};

constexpr const char* kFooter = R"(
Examples:
  segmux serve --model pkg/ --allow-dir videos/            # then open http://127.0.0.1:8080/
  curl -s localhost:8080/api/request -d '{"type":"start_session","resource_path":"clip.mp4"}'
Endpoints: POST /api/request (official requests; propagate_in_video streams NDJSON), POST /api/upload,
GET /healthz, GET /metrics, GET / (the web page). Details: docs/serve.md)";

int run_serve(int argc, char** argv) {
  CLI::App app{"Serve the official SAM 3.1 request API over HTTP, with a web page to segment videos.", "segmux serve"};
  app.footer(kFooter);
  Options opt;
  pipeline::ModelSource src;
  const char* env_token = std::getenv("SEGMUX_SERVE_TOKEN");
  if (env_token) opt.token = env_token;
  app.add_option("--host", opt.host, "address to listen on (default 127.0.0.1; others need --token)");
  app.add_option("--port", opt.port, "port (default 8080; 0 = any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  auto* w = app.add_option("--weights", src.weights, "SAM 3.1 checkpoint, compiled on first use");
  app.add_option("--config", src.config, "model config JSON (default: full-size SAM 3.1)")->needs(w);
  app.add_option("--vocab", src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  app.add_option("--model", src.model_dir, "deployment package or folder of compiled candidates")->excludes(w);
  app.add_option("--cache-dir", src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  app.add_option("--engine", src.engine, "smx (default) or ort")->check(CLI::IsMember({"smx", "ort"}));
  app.add_option("--allow-dir", opt.allow_dir,
                 "folder whose videos start_session may open (default: none, uploads only)");
  app.add_option("--max-sessions", opt.limits.max_sessions, "concurrent sessions (default 4)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--max-body-bytes", opt.max_body_bytes, "largest request body or upload (default 256 MiB)")
      ->check(CLI::Range(int64_t(1024), int64_t(1) << 40));
  app.add_option("--max-frames", opt.limits.max_frames, "longest video in frames (default 5000)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--max-pixels", opt.limits.max_pixels, "largest frame, width x height (default 3840x2160)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 32));
  app.add_option("--session-timeout", opt.limits.session_timeout_s,
                 "seconds a session may stay idle before it is closed (default 1200, as officially)")
      ->check(CLI::Range(1.0, 1e7));
  app.add_option("--busy-wait", opt.limits.busy_wait_s,
                 "seconds a request waits while the model serves another before 503 (default 30)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--token", opt.token, "bearer token required on /api/* and /metrics (or $SEGMUX_SERVE_TOKEN)");
  add_threads_option(app, src.num_threads, "CPU threads of the model");
  add_precision_option(app, src.precision,
                       "fp32 or bf16: how a --weights checkpoint is compiled (bf16: MatMul/Gemm/Conv weights in bf16; "
                       "its difference from fp32 on the fixtures is in docs/track.md)");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(!src.weights.empty() || !src.model_dir.empty(),
                     "no model: give --model DIR or --weights CHECKPOINT");
  check_precision_use(app, src);
  SEGMUX_USAGE_CHECK(is_loopback(opt.host) || !opt.token.empty(), "--host ", opt.host,
                     " is not a loopback address: anyone who reaches it could read the --allow-dir videos and use "
                     "the machine, so it needs --token (clients send Authorization: Bearer TOKEN)");
  auto log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };

  // Signals go to one thread that stops the server (handlers cannot call into it safely).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  pipeline::OpenedModel model = pipeline::open_model(src, log);
  log("model: " + model.description);
  pipeline::ControlConfig ccfg = pipeline::default_control_config();
  ccfg.multiplex_count = model.config.multiplex_count;
  ccfg.bucket_capacity = model.config.multiplex_count;
  ccfg.max_num_objects = model.config.max_num_objects;
  ccfg.num_maskmem = model.config.num_maskmem;
  ccfg.max_obj_ptrs_in_encoder = model.config.max_obj_ptrs_in_encoder;

  service::ResourceStore store(opt.allow_dir, opt.max_body_bytes);
  RequestService svc(*model.backend, ccfg, opt.limits, store);
  Server server(opt, svc, store);
  server.routes();
  const int port = server.bind();
  std::printf("segmux serve: listening on http://%s:%d/\n",
              opt.host.find(':') != std::string::npos ? ("[" + opt.host + "]").c_str() : opt.host.c_str(), port);
  std::fflush(stdout);

  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    while (!stopping) {
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) {
        log("segmux serve: stopping");
        server.stop();
        return;
      }
    }
  });
  std::mutex expiry_mu;
  std::condition_variable expiry_cv;
  std::thread expiry([&] {
    const auto period = std::chrono::duration<double>(std::min(5.0, opt.limits.session_timeout_s / 4));
    std::unique_lock<std::mutex> lock(expiry_mu);
    while (!expiry_cv.wait_for(lock, period, [&] { return stopping.load(); }))
      if (int n = svc.expire_idle()) log("segmux serve: closed " + std::to_string(n) + " idle session(s)");
  });
  server.listen();
  stopping = true;
  expiry_cv.notify_all();
  expiry.join();
  signals.join();
  svc.close_all();
  return 0;
}

CommandRegistration reg("serve", "serve the official request API over HTTP, with a web page (docs/serve.md)",
                        run_serve);

}  // namespace
}  // namespace segmux::apps
