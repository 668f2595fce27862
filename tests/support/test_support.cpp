#include "support/test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

#include "talkbox/convert.h"

namespace fs = std::filesystem;

namespace talkbox::testing {

std::string fixtures_dir() {
    const char* env = std::getenv("TALKBOX_FIXTURES");
    const std::string dir = env && *env ? env : TALKBOX_DEFAULT_FIXTURES;
    if (!fs::is_directory(dir + "/qwen3tts")) {
        throw std::runtime_error("fixtures not found at '" + dir + "' (set TALKBOX_FIXTURES)");
    }
    return dir;
}

std::string qwen_fixture(const std::string& name) {
    const std::string p = fixtures_dir() + "/qwen3tts/" + name;
    if (!fs::exists(p)) throw std::runtime_error("missing fixture '" + p + "'");
    return p;
}

std::string chatterbox_fixture(const std::string& name) {
    const std::string p = fixtures_dir() + "/chatterbox/" + name;
    if (!fs::exists(p)) throw std::runtime_error("missing fixture '" + p + "'");
    return p;
}

std::string converted_chatterbox(const std::string& variant, const std::string& type) {
    static TempDir dir;
    static std::map<std::string, std::string> done;
    const std::string key = "chatterbox-" + variant + "-" + type;
    auto it = done.find(key);
    if (it != done.end()) return it->second;
    ConvertOptions opt;
    opt.snapshot_dir = chatterbox_fixture("tiny-multilingual");
    opt.output_path = dir.file(key + ".gguf");
    opt.type = parse_weight_type(type);
    opt.variant = variant;
    convert_snapshot(opt);
    return done[key] = opt.output_path;
}

const std::vector<std::string>& qwen_checkpoints() {
    static const std::vector<std::string> names = {"tiny-0.6B-Base", "tiny-0.6B-CustomVoice", "tiny-1.7B-Base",
                                                   "tiny-1.7B-CustomVoice", "tiny-1.7B-VoiceDesign"};
    return names;
}

std::string converted_fixture(const std::string& name, const std::string& type) {
    static TempDir dir;
    static std::map<std::string, std::string> done;
    const std::string key = name + "-" + type;
    auto it = done.find(key);
    if (it != done.end()) return it->second;
    const std::string path = dir.file(key + ".gguf");
    convert_snapshot({qwen_fixture(name), path, parse_weight_type(type), nullptr});
    return done[key] = path;
}

TempDir::TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "talkbox-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::vector<uint8_t> make_safetensors_with_header(const std::string& header, size_t data_bytes) {
    std::vector<uint8_t> out(8);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + data_bytes, 0);
    return out;
}

std::vector<uint8_t> make_safetensors(const std::vector<RawTensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    size_t offset = 0;
    for (const auto& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    while (text.size() % 8) text += ' ';
    std::vector<uint8_t> out = make_safetensors_with_header(text, 0);
    for (const auto& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

void write_text(const std::string& path, const std::string& text) {
    write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void copy_tree(const std::string& from, const std::string& to) {
    fs::copy(from, to, fs::copy_options::recursive);
    for (auto& e : fs::recursive_directory_iterator(to)) {
        fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    }
    fs::permissions(to, fs::perms::owner_write, fs::perm_options::add);
}

NpyArray load_npy(const std::string& path) {
    const std::string bytes = read_text(path);
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not a .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    size_t header_len = 0, header_start = 0;
    if (major == 1) {
        header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        header_start = 10;
    } else {
        header_len = 0;
        for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
        header_start = 12;
    }
    const std::string header = bytes.substr(header_start, header_len);
    if (header.find("'descr': '<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos) {
        throw std::runtime_error(path + ": expected little-endian float32 in C order, header " + header);
    }
    NpyArray a;
    const size_t open = header.find("'shape': (");
    const size_t close = header.find(')', open);
    std::stringstream dims(header.substr(open + 10, close - open - 10));
    std::string item;
    while (std::getline(dims, item, ',')) {
        if (item.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoll(item));
    }
    size_t n = 1;
    for (int64_t d : a.shape) n *= static_cast<size_t>(d);
    const size_t data_start = header_start + header_len;
    if (bytes.size() != data_start + n * 4) throw std::runtime_error(path + ": data size does not match shape");
    a.data.resize(n);
    std::memcpy(a.data.data(), bytes.data() + data_start, n * 4);
    return a;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) {
        throw std::runtime_error("size mismatch: " + std::to_string(a.size()) + " vs " + std::to_string(b.size()));
    }
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

float max_abs(const std::vector<float>& a) {
    float m = 0;
    for (float v : a) m = std::max(m, std::fabs(v));
    return m;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) throw std::runtime_error("cosine of vectors of different sizes");
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return ab / std::sqrt(aa * bb);
}

CommandResult run_talkbox(const std::string& args, const std::string& cwd) { return run_program(TALKBOX_BINARY, args, cwd); }

CommandResult run_program(const std::string& binary, const std::string& args, const std::string& cwd) {
    TempDir tmp;
    const std::string cmd = (cwd.empty() ? std::string() : "cd '" + cwd + "' && ") + binary + " " + args + " >" + tmp.file("out") + " 2>" + tmp.file("err") +
                            " </dev/null";
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(tmp.file("out"));
    r.err = read_text(tmp.file("err"));
    return r;
}

}  // namespace talkbox::testing
