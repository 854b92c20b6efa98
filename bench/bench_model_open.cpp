// Start-up cost of a compiled model folder (issue 9: `track` with a cached model starts in <= 5 s):
// per compiled file, the CPU and wall seconds of reading it (checksums, graph, plan) and of creating
// its executor (kernels, weight prepacking), and the resident memory after each. CPU seconds are the
// comparable figure on a shared machine; the load average is printed with them.
// Usage: bench_model_open MODEL_DIR [THREADS] [noverify]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "models/sam31/candidates.h"
#include "runtime/offline_model.h"

namespace {

double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}
double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
std::string status_field(const std::string& key) {  // e.g. "VmRSS" from /proc/self/status, in MiB
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::to_string(std::stoll(line.substr(key.size() + 1)) / 1024);
  return "?";
}
std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace segmux;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_model_open MODEL_DIR [THREADS] [noverify]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int threads = argc > 2 ? std::stoi(argv[2]) : 2;
  LoadOptions lo;
  lo.verify_checksums = !(argc > 3 && std::string(argv[3]) == "noverify");
  std::printf("load average before: %s; checksums %s; %d threads\n", loadavg().c_str(),
              lo.verify_checksums ? "verified" : "not verified", threads);
  ExecutorOptions ex{threads, true};
  ex.shared_arena = std::make_shared<SharedArena>();
  std::vector<LoadedModel> models;
  const double c0 = cpu_s(), w0 = wall_s();
  double load_cpu = 0, exec_cpu = 0;
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    const std::string path = dir + "/" + f.file + ".smx";
    if (!std::ifstream(path).good()) continue;
    const double c1 = cpu_s(), w1 = wall_s();
    LoadedModel m;
    m.model = load_offline_model_file(path, lo);
    const double c2 = cpu_s(), w2 = wall_s();
    m.executor = std::make_unique<Executor>(m.model.graph, m.model.plan, ex);
    const double c3 = cpu_s(), w3 = wall_s();
    load_cpu += c2 - c1;
    exec_cpu += c3 - c2;
    std::printf("%-28s %6zu MiB  read: cpu %6.2f s wall %6.2f s | executor: cpu %6.2f s wall %6.2f s | RSS %s MiB\n",
                f.file.c_str(), m.model.file_bytes >> 20, c2 - c1, w2 - w1, c3 - c2, w3 - w2,
                status_field("VmRSS").c_str());
    models.push_back(std::move(m));
  }
  std::printf("total: cpu %.2f s (read %.2f, executors %.2f), wall %.2f s, RSS %s MiB (anon %s, file %s)\n",
              cpu_s() - c0, load_cpu, exec_cpu, wall_s() - w0, status_field("VmRSS").c_str(),
              status_field("RssAnon").c_str(), status_field("RssFile").c_str());
  std::printf("load average after: %s\n", loadavg().c_str());
  return 0;
}
