#include "apps/serve_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace segmux::apps {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A listening TCP socket without SO_REUSEPORT (SO_REUSEADDR only lets a restart reuse a port in TIME_WAIT).
int listen_socket(const std::string& host, int port, int& bound_port, const char* what) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string service = std::to_string(port);
  const std::string name = host == "localhost" ? "127.0.0.1" : host;
  if (int rc = ::getaddrinfo(name.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw Error(std::string(what) + ": '" + host + "' is not an address of this machine: " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  const int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) throw Error(std::string(what) + ": socket: " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EADDRINUSE)
      throw Error(std::string(what) + ": port " + std::to_string(port) + " on " + host +
                  " is in use by another process (another segmux serve?); choose another --port");
    throw Error(std::string(what) + ": cannot listen on " + host + ":" + std::to_string(port) + ": " +
                std::strerror(err));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

std::string address_of(const sockaddr_storage& a, int& port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    port = ntohs(in6->sin6_port);
  } else {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    port = ntohs(in->sin_port);
  }
  return buf;
}

// One buffered request for httplib, answered on the socket. The worker owns the socket meanwhile.
class BufferedStream : public httplib::Stream {
 public:
  BufferedStream(int fd, std::string request, double write_timeout_s)
      : fd_(fd), in_(std::move(request)), write_timeout_ms_(int(write_timeout_s * 1000)) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, write_timeout_ms_) == 1 && (p.revents & (POLLERR | POLLHUP)) == 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return ssize_t(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += size_t(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{fd_, POLLOUT, 0};
        if (::poll(&p, 1, write_timeout_ms_) != 1 || (p.revents & (POLLERR | POLLHUP))) return -1;
      } else {
        return -1;
      }
    }
    return ssize_t(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = address_of(a, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = address_of(a, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::string in_;
  size_t pos_ = 0;
  int write_timeout_ms_;
};

struct Refusal {
  int status;
  std::string message;
};

}  // namespace

struct HttpGate::Conn {
  int fd = -1;
  std::string in;           // received, not yet consumed
  Clock::time_point since;  // when it became ready for its current request
  bool started = false;     // a byte of the current request arrived
  bool busy = false;        // a worker has it
  bool head_done = false;
  std::string head;  // request line and headers to forward (without framing headers)
  bool chunked = false;
  int64_t content_length = 0;
  std::string body;      // a chunked body, decoded so far
  int64_t reserved = 0;  // bytes counted against max_buffered_bytes
  // After a refusal: the rest of the request is read and dropped for a while (bounded), so that the
  // client, still sending, gets to read the answer instead of a connection reset.
  bool lingering = false;
  int64_t discard_left = 0;
  Clock::time_point linger_until;

  void reset(Clock::time_point now) {
    since = now;
    started = !in.empty();
    head_done = chunked = false;
    head.clear();
    body.clear();
    content_length = 0;
  }
};

class HttpGate::Loop {
 public:
  Loop(HttpGate& gate, GateLimits limits, GateProbes probes)
      : gate_(gate), limits_(limits), probes_(std::move(probes)), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    SEGMUX_CHECK(wake_ >= 0, "serve: eventfd: ", std::strerror(errno));
    fit_connections_to_fd_limit();
  }
  ~Loop() {
    for (int fd : {listen_fd_, agent_fd_, wake_})
      if (fd >= 0) ::close(fd);
  }

  int listen_fd_ = -1, agent_fd_ = -1;
  std::atomic<bool> api_open_{false}, stop_{false};

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof(one));
  }

  bool serve(double grace_s) {
    for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { work(); });
    while (!stop_) poll_once();
    // Stopping: no new connections, idle ones closed; requests in progress get grace_s.
    for (int* fd : {&listen_fd_, &agent_fd_})
      if (*fd >= 0) ::close(std::exchange(*fd, -1));
    const auto deadline = Clock::now() + seconds(grace_s);
    bool finished = true;
    {
      std::unique_lock<std::mutex> lock(mu_);
      gate_.in_flight_ -= int(queue_.size());
      queue_.clear();  // queued, never started: their connections are closed below
      done_cv_.wait_until(lock, deadline, [&] { return running_ == 0; });
      finished = running_ == 0;
      shutdown_ = true;
    }
    work_cv_.notify_all();
    gate_.svr_sock_ = INVALID_SOCKET;  // httplib ends a streaming answer at its next chunk
    for (auto& [fd, c] : conns_)
      if (c->busy && !finished) ::shutdown(fd, SHUT_RDWR);  // unblocks a worker writing to it
    if (!finished) {
      for (auto& t : workers_) t.detach();  // the caller exits the process; a stuck model call cannot be joined
      return false;
    }
    for (auto& t : workers_) t.join();
    for (auto& [fd, c] : conns_) ::close(fd);
    conns_.clear();
    return true;
  }

 private:
  struct Job {
    Conn* conn;
    std::string request;
  };

  HttpGate& gate_;
  GateLimits limits_;
  GateProbes probes_;
  int wake_;
  std::map<int, std::unique_ptr<Conn>> conns_;  // the loop thread's
  std::atomic<int64_t> buffered_{0};
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> queue_;
  std::vector<std::pair<Conn*, bool>> finished_;  // (connection, keep it open), for the loop
  int running_ = 0;
  bool shutdown_ = false;

  // Every connection is a file descriptor: raise the soft limit as far as needed (and allowed), and
  // never accept more than it leaves room for (else accept fails with EMFILE while the listening
  // socket stays readable, and the loop spins).
  void fit_connections_to_fd_limit() {
    constexpr rlim_t kReserve = 256;  // model files, logs, uploads, the workers' own files
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    const rlim_t want = rlim_t(limits_.max_connections) + kReserve;
    if (rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &rl);
      ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want)
      limits_.max_connections = int(std::max<rlim_t>(8, rl.rlim_cur - std::min(rl.rlim_cur, kReserve)));
  }

  void poll_once() {
    std::vector<pollfd> fds{{wake_, POLLIN, 0}};
    if (listen_fd_ >= 0) fds.push_back({listen_fd_, POLLIN, 0});
    if (agent_fd_ >= 0) fds.push_back({agent_fd_, POLLIN, 0});
    for (auto& [fd, c] : conns_)
      if (!c->busy) fds.push_back({fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == wake_) {
        uint64_t n;
        [[maybe_unused]] ssize_t r = ::read(wake_, &n, sizeof(n));
        take_finished();
      } else if (p.fd == listen_fd_) {
        accept_all();
      } else if (p.fd == agent_fd_) {
        answer_agent();
      } else if (auto it = conns_.find(p.fd); it != conns_.end() && !it->second->busy) {
        receive(*it->second);
      }
    }
    expire();
  }

  void close_conn(Conn& c) {
    release(c);
    const int fd = c.fd;
    ::close(fd);
    conns_.erase(fd);
  }
  void release(Conn& c) {
    buffered_ -= c.reserved;
    c.reserved = 0;
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (int(conns_.size()) >= limits_.max_connections && !evict_one()) {
        send_refusal(fd, {503, "the server has " + std::to_string(conns_.size()) + " connections open; retry"});
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->reset(Clock::now());
      conns_[fd] = std::move(c);
    }
  }
  // Drops the connection that has waited longest for its request (slow clients go first).
  bool evict_one() {
    Conn* oldest = nullptr;
    for (auto& [fd, c] : conns_)
      if (!c->busy && (!oldest || c->since < oldest->since)) oldest = c.get();
    if (!oldest) return false;
    close_conn(*oldest);
    return true;
  }

  void answer_agent() {
    const int fd = ::accept4(agent_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const std::string line = probes_.agent() + "\n";
    [[maybe_unused]] ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    ::close(fd);
  }

  void expire() {
    const auto now = Clock::now();
    std::vector<Conn*> late;
    for (auto& [fd, c] : conns_) {
      if (c->busy) continue;
      if (c->lingering) {
        if (now > c->linger_until) late.push_back(c.get());
        continue;
      }
      const double waited = std::chrono::duration<double>(now - c->since).count();
      if (!c->started ? waited > limits_.idle_timeout_s
                      : (!c->head_done && waited > limits_.header_timeout_s) || waited > limits_.request_timeout_s)
        late.push_back(c.get());
    }
    for (Conn* c : late) {
      if (c->lingering) {
        close_conn(*c);
        continue;
      }
      if (c->started)
        refuse(*c, {408, std::string("the request did not arrive in time (") +
                             (c->head_done ? "--request-timeout " + std::to_string(int(limits_.request_timeout_s))
                                           : "headers within " + std::to_string(int(limits_.header_timeout_s))) +
                             " s)"});
      else
        close_conn(*c);
    }
  }

  // Answers a refusal, then drains what the client still sends (at most kLingerS seconds and
  // max_body_bytes bytes) before closing.
  static constexpr double kLingerS = 2;
  void refuse(Conn& c, const Refusal& r) {
    send_refusal(c.fd, r);
    ::shutdown(c.fd, SHUT_WR);
    release(c);
    c.in.clear();
    c.body.clear();
    c.lingering = true;
    c.discard_left = limits_.max_body_bytes;
    c.linger_until = Clock::now() + seconds(kLingerS);
  }

  void receive(Conn& c) {
    char buf[65536];
    if (c.lingering) {
      ssize_t n = 0;
      while (c.discard_left > 0 && (n = ::recv(c.fd, buf, sizeof(buf), 0)) > 0) c.discard_left -= n;
      if (c.discard_left <= 0 || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) close_conn(c);
      return;
    }
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (!c.started) {
          c.started = true;
          c.since = Clock::now();
        }
        c.in.append(buf, size_t(n));
        if (c.in.size() > limits_.max_header_bytes + (c.head_done ? size_t(limits_.max_body_bytes) + 65536 : 0)) break;
        if (size_t(n) < sizeof(buf)) break;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      close_conn(c);  // the client closed (or failed) between requests
      return;
    }
    advance(c);
  }

  // Parses what has arrived; dispatches a complete request or refuses a bad one.
  void advance(Conn& c) {
    try {
      if (!c.head_done && !parse_head(c)) return;
      if (probe(c)) return;
      if (!body_complete(c)) return;
      dispatch(c);
    } catch (const Refusal& r) {
      refuse(c, r);
    }
  }

  bool parse_head(Conn& c) {
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c.in.size() > limits_.max_header_bytes)
        throw Refusal{431, "the request headers exceed " + std::to_string(limits_.max_header_bytes) +
                               " bytes (--max-header-bytes)"};
      return false;
    }
    if (end + 4 > limits_.max_header_bytes)
      throw Refusal{431, "the request headers exceed " + std::to_string(limits_.max_header_bytes) +
                             " bytes (--max-header-bytes)"};
    const std::string head = c.in.substr(0, end + 2);
    c.in.erase(0, end + 4);
    size_t pos = head.find("\r\n");
    c.head = head.substr(0, pos + 2);
    if (c.head.find(' ') == std::string::npos) throw Refusal{400, "malformed request line"};
    int64_t length = -1;
    bool chunked = false, expect_continue = false;
    while ((pos += 2) < head.size()) {
      const size_t eol = head.find("\r\n", pos);
      const std::string line = head.substr(pos, eol - pos);
      pos = eol;
      const size_t colon = line.find(':');
      if (colon == std::string::npos || colon == 0 || line[0] == ' ' || line[0] == '\t')
        throw Refusal{400, "malformed header line '" + line.substr(0, 64) + "'"};
      const std::string key = lower(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (key == "content-length") {
        if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos ||
            (length >= 0 && std::stoll(value) != length))
          throw Refusal{400, "invalid Content-Length '" + value.substr(0, 32) + "'"};
        length = std::stoll(value);
      } else if (key == "transfer-encoding") {
        if (lower(value) != "chunked")
          throw Refusal{501, "Transfer-Encoding '" + value.substr(0, 32) + "' is not supported"};
        chunked = true;
      } else if (key == "expect") {
        expect_continue = lower(value) == "100-continue";
      } else {
        c.head += line + "\r\n";
      }
    }
    if (chunked && length >= 0) throw Refusal{400, "both Content-Length and Transfer-Encoding: chunked"};
    if (length > limits_.max_body_bytes) throw too_large(std::to_string(length));
    c.head_done = true;
    c.chunked = chunked;
    c.content_length = std::max<int64_t>(length, 0);
    if (!chunked) reserve(c, c.content_length);
    if (expect_continue && (chunked || c.content_length > 0) && c.in.empty()) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] ssize_t n = ::send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
    }
    return true;
  }

  Refusal too_large(const std::string& size) const {
    return Refusal{413, "the request body has " + size + " bytes (--max-body-bytes " +
                            std::to_string(limits_.max_body_bytes) + ")"};
  }

  void reserve(Conn& c, int64_t bytes) {
    if (buffered_ + bytes > limits_.max_buffered_bytes)
      throw Refusal{503, "the server holds too many request bodies at once; retry"};
    buffered_ += bytes;
    c.reserved += bytes;
  }

  // GET /healthz and /readyz, answered here so that no worker is needed.
  bool probe(Conn& c) {
    const size_t sp = c.head.find(' ');
    if (c.head.compare(0, sp, "GET") != 0) return false;
    const size_t end = c.head.find_first_of(" ?", sp + 1);
    const std::string path = c.head.substr(sp + 1, end - sp - 1);
    if ((path != "/healthz" && path != "/readyz") || c.chunked || c.content_length > 0) return false;
    const auto [status, body] = path == "/healthz" ? probes_.healthz() : probes_.readyz();
    const std::string out = "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Service Unavailable") +
                            "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: " +
                            std::to_string(body.size() + 1) + "\r\n\r\n" + body + "\n";
    if (::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) {
      close_conn(c);
      return true;
    }
    release(c);
    c.reset(Clock::now());
    if (c.started) advance(c);  // pipelined
    return true;
  }

  bool body_complete(Conn& c) {
    if (!c.chunked) return int64_t(c.in.size()) >= c.content_length;
    for (;;) {  // chunk-size line, data, CRLF; a zero size, then trailers up to an empty line
      const size_t eol = c.in.find("\r\n");
      if (eol == std::string::npos) {
        if (c.in.size() > 1024) throw Refusal{400, "malformed chunked body (a chunk-size line over 1 KiB)"};
        return false;
      }
      if (c.content_length < 0) {  // in the trailers
        if (eol == 0) {
          c.in.erase(0, 2);
          return true;
        }
        c.in.erase(0, eol + 2);
        continue;
      }
      const std::string size_text = c.in.substr(0, std::min(eol, c.in.find(';')));
      size_t used = 0;
      uint64_t size = 0;
      try {
        size = std::stoull(size_text, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != trim(size_text).size() || size_text.size() > 16)
        throw Refusal{400, "malformed chunked body (chunk size '" + size_text.substr(0, 32) + "')"};
      if (size > uint64_t(limits_.max_body_bytes - int64_t(c.body.size())))
        throw too_large("more than " + std::to_string(c.body.size() + size));
      if (size == 0) {
        c.in.erase(0, eol + 2);
        c.content_length = -1;
        continue;
      }
      if (c.in.size() < eol + 2 + size + 2) return false;
      if (c.in.compare(eol + 2 + size, 2, "\r\n") != 0)
        throw Refusal{400, "malformed chunked body (no CRLF after a chunk)"};
      reserve(c, int64_t(size));
      c.body.append(c.in, eol + 2, size);
      c.in.erase(0, eol + 2 + size + 2);
    }
  }

  void dispatch(Conn& c) {
    if (!api_open_) throw Refusal{503, "the model is loading; retry"};
    const size_t length = c.chunked ? c.body.size() : size_t(c.content_length);
    std::string request = std::move(c.head);
    request += "Content-Length: " + std::to_string(length) + "\r\n\r\n";
    request.reserve(request.size() + length);  // one copy of the body (an upload may be large)
    if (c.chunked) {
      request += c.body;
      c.body = std::string();
    } else {
      request.append(c.in, 0, length);
      c.in.erase(0, length);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (int(queue_.size()) >= limits_.max_queued)
      throw Refusal{503, "the server has " + std::to_string(queue_.size()) + " requests waiting; retry"};
    c.busy = true;
    ++gate_.in_flight_;
    queue_.push_back({&c, std::move(request)});
    work_cv_.notify_one();
  }

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return shutdown_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
      }
      BufferedStream stream(job.conn->fd, std::move(job.request), limits_.write_timeout_s);
      bool closed = false;
      const bool ok = gate_.process_request(stream, stop_.load(), closed, nullptr);
      {
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        finished_.push_back({job.conn, ok && !closed});
      }
      --gate_.in_flight_;
      done_cv_.notify_all();
      wake();
    }
  }

  void take_finished() {
    std::vector<std::pair<Conn*, bool>> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done.swap(finished_);
    }
    for (auto [c, keep] : done) {
      c->busy = false;
      release(*c);
      if (!keep || stop_) {
        close_conn(*c);
        continue;
      }
      c->reset(Clock::now());
      if (c->started) advance(*c);  // a pipelined request is waiting already
    }
  }

  void send_refusal(int fd, const Refusal& r) {
    static const std::map<int, const char*> kReasons = {
        {400, "Bad Request"},       {408, "Request Timeout"},
        {413, "Payload Too Large"}, {431, "Request Header Fields Too Large"},
        {501, "Not Implemented"},   {503, "Service Unavailable"}};
    std::string body = "{\"error\":\"";
    for (char ch : r.message) body += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    body += "\",\"status\":" + std::to_string(r.status) + "}\n";
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + kReasons.at(r.status) +
                      "\r\nContent-Type: application/json\r\nConnection: close\r\n";
    if (r.status == 503) out += "Retry-After: " + std::to_string(limits_.retry_after_s) + "\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    [[maybe_unused]] ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }
};

HttpGate::HttpGate(GateLimits limits, GateProbes probes)
    : loop_(std::make_unique<Loop>(*this, limits, std::move(probes))) {
  set_payload_max_length(size_t(limits.max_body_bytes));
  // Only advertised (Keep-Alive: timeout=, max=): the loop closes idle connections itself.
  set_keep_alive_timeout(time_t(limits.idle_timeout_s));
  set_keep_alive_max_count(1000);
}

HttpGate::~HttpGate() {
  svr_sock_ = INVALID_SOCKET;  // the sockets are the loop's, closed by it
}

int HttpGate::listen_on(const std::string& host, int port) {
  int bound = 0;
  loop_->listen_fd_ = listen_socket(host, port, bound, "segmux serve");
  svr_sock_ = loop_->listen_fd_;  // httplib streams an answer while this is valid
  return bound;
}

int HttpGate::listen_agent(const std::string& host, int port) {
  int bound = 0;
  loop_->agent_fd_ = listen_socket(host, port, bound, "segmux serve --agent-port");
  return bound;
}

void HttpGate::open_api() { loop_->api_open_ = true; }

bool HttpGate::serve(double grace_s) { return loop_->serve(grace_s); }

void HttpGate::stop() {
  loop_->stop_ = true;
  loop_->wake();
}

}  // namespace segmux::apps
