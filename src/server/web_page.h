// The page served at GET / (web/index.html, embedded at build time by cmake/embed_file.cmake).
#pragma once

#include <string_view>

namespace talkbox::server {
std::string_view web_page_html();
}  // namespace talkbox::server
