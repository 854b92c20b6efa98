// The files of the web page (src/service/web/), embedded into the binary at build time
// (cmake/embed_web.cmake).
#pragma once
#include <optional>
#include <string_view>

namespace segmux::service {

struct WebAsset {
  std::string_view name;  // "index.html"
  std::string_view data;
  std::string_view content_type;
};

std::optional<WebAsset> web_asset(std::string_view name);

}  // namespace segmux::service
