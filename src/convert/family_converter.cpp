#include "convert/family_converter.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace talkbox {

FileSet folder_files(const std::string& dir, const std::string& what) {
    return {[dir](const std::string& name) { return std::filesystem::is_regular_file(dir + "/" + name); },
            [dir](const std::string& name) { return dir + "/" + name; }, what,
            [dir] {
                std::vector<std::string> names;
                std::error_code ec;
                for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
                    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
                }
                std::sort(names.begin(), names.end());
                return names;
            }};
}

}  // namespace talkbox
