#include "convert/family_converter.h"

#include <filesystem>

namespace talkbox {

FileSet folder_files(const std::string& dir, const std::string& what) {
    return {[dir](const std::string& name) { return std::filesystem::is_regular_file(dir + "/" + name); },
            [dir](const std::string& name) { return dir + "/" + name; }, what};
}

}  // namespace talkbox
