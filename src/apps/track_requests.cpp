#include "apps/track_requests.h"

#include "core/error.h"
#include "io/json_limits.h"

namespace segmux::apps {

namespace {

using nlohmann::json;

constexpr size_t kMaxRequests = 100000;
constexpr size_t kMaxRequestsFileBytes = size_t(16) << 20;

}  // namespace

std::vector<TrackRequest> read_track_requests(const std::string& path, int num_frames) {
  const std::string what = "--requests " + path;
  json doc = parse_untrusted_json(read_untrusted_text_file(path, kMaxRequestsFileBytes), what);
  if (doc.is_object() && doc.contains("requests")) doc = doc.at("requests");
  if (!doc.is_array())
    fail(what, ": expected an array of requests (or {\"requests\": [...]}), got ", describe_json(doc));
  if (doc.empty()) fail(what, ": no requests");
  if (doc.size() > kMaxRequests) fail(what, ": ", doc.size(), " requests (at most ", kMaxRequests, ")");
  std::vector<TrackRequest> out;
  bool have_prompt = false;
  for (size_t i = 0; i < doc.size(); ++i) {
    try {
      out.push_back(service::parse_official_request(doc[i], "request " + std::to_string(i), num_frames, have_prompt));
    } catch (const Error& e) {
      fail(what, ": ", e.what());
    }
  }
  return out;
}

void run_track_requests(pipeline::VideoSession& session, const std::vector<TrackRequest>& requests,
                        const std::function<void(const pipeline::FrameOutput&)>& emit) {
  for (const TrackRequest& q : requests)
    service::run_official_request(session, q, [&](const pipeline::FrameOutput& out) {
      emit(out);
      return true;
    });
}

}  // namespace segmux::apps
