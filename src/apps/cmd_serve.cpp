// segmux serve: the official SAM 3.1 request API over HTTP (cpp-httplib), with the web page at /.
// The request handling is service/service.h (no HTTP there); this file maps routes onto it, checks
// the bearer token, streams propagate_in_video as NDJSON and runs the idle-session expiry. docs/serve.md.
#include <signal.h>

#include <httplib.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <thread>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/precision_option.h"
#include "apps/serve_gate.h"
#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/predictor/control_config.h"
#include "service/service.h"
#include "service/web_assets.h"
#include "verify/sam31/fixture_config.h"

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
  // Scale-out and availability (docs/serve.md "Behind a load balancer").
  std::string replica_id;
  int agent_port = -1;  // -1: no agent-check port
  double drain_timeout_s = 10;
  GateLimits gate;
};

// The session a request names travels in this header too, so that a balancer can route by it.
constexpr const char* kSessionHeader = "X-Segmux-Session";
constexpr const char* kUploadHeader = "X-Segmux-Upload";
constexpr double kStopGraceS = 10;  // after the drain: requests still running get this long

class Server {
 public:
  Server(const Options& opt, RequestService& svc, service::ResourceStore& store, HttpGate& http)
      : opt_(opt), svc_(svc), store_(store), http_(http) {}

  void routes() {
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
        send_upload(res, store_.add_upload(f.filename, f.content));
      } else {
        const std::string name = req.has_param("filename") ? req.get_param_value("filename") : "";
        if (name.empty()) throw ServiceError(400, "upload: a raw body needs ?filename=NAME.mp4 (or send multipart)");
        send_upload(res, store_.add_upload(name, req.body));
      }
    });
    guarded_post("/api/request", [this](const httplib::Request& req, httplib::Response& res) { request(req, res); });
  }

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
      if ((res.status == 429 || res.status == 503) && !res.has_header("Retry-After"))
        res.set_header("Retry-After", std::to_string(opt_.gate.retry_after_s));
    };
  }
  // Names the request's session in the answer's X-Segmux-Session (only a well-formed id: no header injection).
  static void echo_session(const json& j, httplib::Response& res) {
    if (!j.is_object() || !j.contains("session_id") || !j.at("session_id").is_string()) return;
    const std::string id = j.at("session_id").get<std::string>();
    const bool plain = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
    if (plain) res.set_header(kSessionHeader, id);
  }
  static void send_upload(httplib::Response& res, const json& upload) {
    res.set_header(kUploadHeader, upload.at("upload_id").get<std::string>());
    send_json(res, 200, upload);
  }
  // The X-Segmux-Session header stands for a missing "session_id"; both given must agree.
  static void session_from_header(const httplib::Request& req, json& r) {
    const std::string sid = req.get_header_value(kSessionHeader);
    if (sid.empty() || !r.is_object()) return;
    if (!r.contains("session_id") || r.at("session_id").is_null())
      r["session_id"] = sid;
    else if (r.at("session_id") != sid)
      throw ServiceError(
          400, std::string("the ") + kSessionHeader + " header '" + sid + "' and the request's session_id differ");
  }
  void guarded_get(const char* path, Handler h) { http_.Get(path, guarded(std::move(h))); }
  void guarded_post(const char* path, Handler h) { http_.Post(path, guarded(std::move(h))); }

  void request(const httplib::Request& req, httplib::Response& res) {
    json r = RequestService::parse_body(req.body);
    session_from_header(req, r);
    echo_session(r, res);
    if (!RequestService::is_stream(r)) {
      json answer = svc_.handle(r);
      echo_session(answer, res);  // start_session's new id
      return send_json(res, 200, answer);
    }
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
  HttpGate& http_;
};

constexpr const char* kFooter = R"(
Examples:
  segmux serve --model pkg/ --allow-dir videos/            # then open http://127.0.0.1:8080/
  curl -s localhost:8080/api/request -d '{"type":"start_session","resource_path":"clip.mp4"}'
Endpoints: POST /api/request (official requests; propagate_in_video streams NDJSON), POST /api/upload,
GET /healthz, GET /metrics, GET / (the web page). Details: docs/serve.md)";

void add_scale_out_options(CLI::App& app, Options& opt) {
  app.add_option("--replica-id", opt.replica_id,
                 "name of this replica in session and upload ids (REPLICA.<uuid4>), for a load balancer")
      ->check([](const std::string& v) {
        const bool ok = !v.empty() && v.size() <= 24 && std::all_of(v.begin(), v.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        });
        return ok ? std::string() : "must be 1-24 letters, digits, '_' or '-'";
      });
  app.add_option("--agent-port", opt.agent_port,
                 "port answering HAProxy's agent-check with the free session slots (\"up 40%\"; default: none)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--drain-timeout", opt.drain_timeout_s,
                 "on SIGTERM: seconds the open sessions may go on (no new ones) before the server stops (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--request-timeout", opt.gate.request_timeout_s,
                 "seconds a client may take to send one request, headers and body (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--header-timeout", opt.gate.header_timeout_s,
                 "seconds a client may take to send a request's headers (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--max-header-bytes", opt.gate.max_header_bytes,
                 "largest request line and headers together (default 65536)")
      ->check(CLI::Range(size_t(1024), size_t(16) << 20));
  app.add_option("--max-connections", opt.gate.max_connections,
                 "open connections; beyond it the one idle longest is dropped (default 512)")
      ->check(CLI::Range(8, 100000));
  app.add_option("--retry-after", opt.gate.retry_after_s, "Retry-After seconds of 429 and 503 answers (default 5)")
      ->check(CLI::Range(0, 3600));
}

// What the gate answers itself: /healthz (alive), /readyz (model loaded and not draining) and the
// agent-check line (free session slots as a weight; 0% while loading, draining or full).
GateProbes probes(std::atomic<RequestService*>& live) {
  GateProbes p;
  p.healthz = [] { return std::make_pair(200, std::string(R"({"status":"ok"})")); };
  p.readyz = [&live] {
    RequestService* svc = live.load();
    if (!svc) return std::make_pair(503, std::string(R"({"status":"loading"})"));
    if (svc->draining()) return std::make_pair(503, std::string(R"({"status":"draining"})"));
    return std::make_pair(200, std::string(R"({"status":"ready"})"));
  };
  p.agent = [&live] {
    RequestService* svc = live.load();
    if (!svc || svc->draining()) return std::string("up 0%");
    const json m = svc->metrics();
    const int max = m.at("max_sessions").get<int>(), free = std::max(0, max - m.at("sessions").get<int>());
    const int percent = free == 0 ? 0 : std::max(1, free * 100 / max);
    return "up " + std::to_string(percent) + "%";
  };
  return p;
}

// The signal thread's state: how many stop signals came, and whether one was SIGINT.
class StopSignals {
 public:
  using Log = std::function<void(const std::string&)>;
  void watch(const sigset_t& set, std::atomic<RequestService*>& live, HttpGate& gate, const Log& log) {
    const timespec tick{0, 200 * 1000 * 1000};
    while (!finished_) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig <= 0) continue;
      if (!live.load()) {  // still loading the model: nothing to drain
        log("segmux serve: stopping (the model was still loading)");
        gate.stop();
        std::fflush(stderr);
        std::_Exit(0);
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
      sigint_ |= sig == SIGINT;
      cv_.notify_all();
    }
  }
  // Returns when the server should stop: after SIGINT or a second signal at once; after a SIGTERM
  // once no session is open and no request runs, or after drain_s.
  void wait_and_drain(RequestService& svc, HttpGate& gate, double drain_s, const Log& log) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return count_ > 0; });
    if (sigint_) return;
    log("segmux serve: draining: no new sessions; stopping when the open ones are closed (at most " +
        std::to_string(int(drain_s)) + " s, --drain-timeout)");
    svc.set_draining(true);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(drain_s);
    while (count_ == 1 && !(svc.open_sessions() == 0 && gate.in_flight() == 0) &&
           std::chrono::steady_clock::now() < deadline)
      cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  void finish() { finished_ = true; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  bool sigint_ = false;
  std::atomic<bool> finished_{false};
};

// Takes the port, loads the model, serves until a stop signal (see StopSignals), then stops in bounded time.
int serve(Options& opt, const pipeline::ModelSource& src) {
  auto log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  opt.gate.max_body_bytes = opt.max_body_bytes;
  opt.gate.max_buffered_bytes = std::max(opt.gate.max_buffered_bytes, 2 * opt.max_body_bytes);
  opt.gate.workers = opt.limits.max_sessions * 2 + 6;

  // Signals go to one thread (handlers cannot call into the server safely): the first SIGTERM drains,
  // SIGINT or a second signal stops at once; while the model loads, any of them exits.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The port is taken before the model loads: a busy port fails at once, and /healthz answers (and
  // /readyz says "loading") meanwhile.
  std::atomic<RequestService*> live{nullptr};
  HttpGate gate(opt.gate, probes(live));
  const int port = gate.listen_on(opt.host, opt.port);
  if (opt.agent_port >= 0) {  // on stdout before "listening": --agent-port 0 picks a free port
    std::printf("segmux serve: agent-check on port %d\n", gate.listen_agent(opt.host, opt.agent_port));
    std::fflush(stdout);
  }
  bool all_finished = true;
  std::thread gate_thread([&] { all_finished = gate.serve(kStopGraceS); });
  StopSignals stop;
  std::thread signals([&] { stop.watch(stop_signals, live, gate, log); });
  struct JoinOnError {  // a model that fails to load (an Error) must not leave the threads running
    HttpGate& gate;
    StopSignals& stop;
    std::thread &a, &b;
    ~JoinOnError() {
      gate.stop();
      stop.finish();
      for (std::thread* t : {&a, &b})
        if (t->joinable()) t->join();
    }
  } join_on_error{gate, stop, gate_thread, signals};

  pipeline::OpenedModel model = pipeline::open_model(src, log);
  log("model: " + model.description);
  const pipeline::ControlConfig ccfg = pipeline::control_config_for(model.config);

  service::ResourceStore store(opt.allow_dir, opt.max_body_bytes, 32, opt.replica_id);
  RequestService svc(*model.model, ccfg, opt.limits, store);
  svc.set_replica_id(opt.replica_id);
  Server server(opt, svc, store, gate);
  server.routes();
  gate.open_api();
  live = &svc;
  std::printf("segmux serve: listening on http://%s:%d/\n",
              opt.host.find(':') != std::string::npos ? ("[" + opt.host + "]").c_str() : opt.host.c_str(), port);
  std::fflush(stdout);

  std::mutex expiry_mu;
  std::condition_variable expiry_cv;
  std::atomic<bool> stopping{false};
  std::thread expiry([&] {
    const auto period = std::chrono::duration<double>(std::min(5.0, opt.limits.session_timeout_s / 4));
    std::unique_lock<std::mutex> lock(expiry_mu);
    while (!expiry_cv.wait_for(lock, period, [&] { return stopping.load(); }))
      if (int n = svc.expire_idle()) log("segmux serve: closed " + std::to_string(n) + " idle session(s)");
  });
  stop.wait_and_drain(svc, gate, opt.drain_timeout_s, log);
  log("segmux serve: stopping");
  svc.cancel_all();  // a running propagation ends after its frame
  gate.stop();
  gate_thread.join();
  stopping = true;
  expiry_cv.notify_all();
  expiry.join();
  stop.finish();
  signals.join();
  if (!all_finished) {  // a model call that outlived the grace cannot be interrupted: leave without it
    log("segmux serve: requests still running after " + std::to_string(int(kStopGraceS)) + " s; exiting without them");
    store.remove_now();
    std::fflush(stderr);
    std::_Exit(0);
  }
  svc.close_all();
  return 0;
}

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
  src.read_config = verify::load_model_or_fixture_config;  // a fixture's config.json too
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
  add_scale_out_options(app, opt);
  add_threads_option(app, src.num_threads, "CPU threads of the model");
  add_precision_option(app, src.precision, kCheckpointPrecisionHelp);
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(!src.weights.empty() || !src.model_dir.empty(),
                     "no model: give --model DIR or --weights CHECKPOINT");
  check_precision_use(app, src);
  SEGMUX_USAGE_CHECK(is_loopback(opt.host) || !opt.token.empty(), "--host ", opt.host,
                     " is not a loopback address: anyone who reaches it could read the --allow-dir videos and use "
                     "the machine, so it needs --token (clients send Authorization: Bearer TOKEN)");
  return serve(opt, src);
}

CommandRegistration reg("serve", "serve the official request API over HTTP, with a web page (docs/serve.md)",
                        run_serve);

}  // namespace
}  // namespace segmux::apps
