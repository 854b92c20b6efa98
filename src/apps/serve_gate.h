// The front of `segmux serve`: one event-loop thread owns every connection and reads each request
// (head and body) completely, within a deadline and size limits, before a worker sees it; workers then
// run cpp-httplib's routing on the buffered request and write the answer. So a slow or hostile client
// holds a buffer and a socket, never a worker; /healthz and /readyz are answered by the loop itself;
// pipelined requests are answered in order; a chunked body is counted against the limit as it arrives.
// It also answers HAProxy's agent-check protocol on a second port. docs/serve.md.
#pragma once
#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace segmux::apps {

struct GateLimits {
  size_t max_header_bytes = 64 * 1024;              // request line and headers together
  int64_t max_body_bytes = int64_t(256) << 20;      // one body (a chunked one is decoded and counted)
  int64_t max_buffered_bytes = int64_t(512) << 20;  // bodies held at once over all connections
  double header_timeout_s = 10;                     // the head must arrive within this, from its first byte
  double request_timeout_s = 60;                    // head and body of one request, from its first byte
  double idle_timeout_s = 30;                       // a kept-alive connection without a new request is closed after it
  double write_timeout_s = 30;                      // an answer that makes no progress for this long is abandoned
  int max_connections = 512;                        // beyond it the connection idle the longest is dropped
  int workers = 8;                                  // requests run at once (a propagation holds one while it streams)
  int max_queued = 64;                              // complete requests waiting for a worker; beyond it 503
  int retry_after_s = 5;                            // Retry-After of the gate's own 503
};

// What the loop answers without a worker: (status, JSON body) of GET /healthz and /readyz, and the
// agent-check line ("up 40%").
struct GateProbes {
  std::function<std::pair<int, std::string>()> healthz, readyz;
  std::function<std::string()> agent;
};

class HttpGate : public httplib::Server {
 public:
  HttpGate(GateLimits limits, GateProbes probes);
  ~HttpGate() override;
  HttpGate(const HttpGate&) = delete;
  HttpGate& operator=(const HttpGate&) = delete;

  // Listens on host:port (0: any free port) without SO_REUSEPORT: a port in use is an Error naming it.
  // Returns the port.
  int listen_on(const std::string& host, int port);
  int listen_agent(const std::string& host, int port);
  // Until open_api(), every request but the probes gets 503 "loading" (routes are registered meanwhile).
  void open_api();
  // Runs the loop until stop(); then waits up to grace_s for the requests in progress (their sockets are
  // shut down after it). Returns whether they all finished.
  bool serve(double grace_s);
  void stop();
  int in_flight() const { return in_flight_.load(); }  // requests queued or running

 private:
  struct Conn;
  class Loop;
  std::unique_ptr<Loop> loop_;
  std::atomic<int> in_flight_{0};
  friend class Loop;
};

}  // namespace segmux::apps
