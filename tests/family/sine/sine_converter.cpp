#include <filesystem>
#include <memory>

#include "convert/gguf_writer.h"
#include "core/json_file.h"
#include "family/sine/sine_family.h"
#include "talkbox/error.h"

namespace talkbox::sine {

namespace {

bool recognises(const FileSet& files) { return files.has("sine.json"); }

CheckpointFiles files(const FileSet& set, const std::string& variant, const std::string& checkpoint) {
    if (!variant.empty() || !checkpoint.empty()) throw Error(ErrorKind::InvalidArgument, "a sine checkpoint has one model: drop --variant and --checkpoint");
    if (!set.has("sine.json")) throw Error(ErrorKind::NotFound, set.what + " is missing sine.json");
    return {{"sine.json"}, false, "", true};
}

ConvertSummary convert(const ConvertOptions& options) {
    const std::string config = options.snapshot_dir + "/sine.json";
    const nlohmann::json j = read_json_file(config);
    const nlohmann::json& a = json_member(j, "amplitude", config);
    if (!a.is_number() || !(a.get<double>() > 0 && a.get<double>() <= 1)) {
        throw Error(ErrorKind::Format, config + ": amplitude must be a number in (0, 1], got " + json_excerpt(a));
    }
    const float amplitude = a.get<float>();
    std::unique_ptr<gguf_context, GgufContextDeleter> gguf(gguf_init_empty());
    gguf_set_val_str(gguf.get(), "general.architecture", kArchitecture);
    if (j.contains("sample_rate")) {
        const nlohmann::json& rate = j["sample_rate"];
        if (!rate.is_number_integer() || rate.get<int64_t>() < 8000 || rate.get<int64_t>() > 48000) {
            throw Error(ErrorKind::Format, config + ": sample_rate must be an integer from 8000 to 48000, got " + json_excerpt(rate));
        }
        gguf_set_val_u32(gguf.get(), "sine.sample_rate", rate.get<uint32_t>());
    }
    const std::string name =
        options.name.empty() ? std::filesystem::path(options.snapshot_dir).lexically_normal().filename().string() : options.name;
    gguf_set_val_str(gguf.get(), "general.name", name.c_str());
    const std::vector<PlannedTensor> plan = {{"sine.amplitude", GGML_TYPE_F32, {1}, [amplitude](std::vector<uint8_t>& out) {
                                                  const auto* bytes = reinterpret_cast<const uint8_t*>(&amplitude);
                                                  out.assign(bytes, bytes + sizeof amplitude);
                                              }}};
    ConvertSummary summary;
    summary.file_bytes = write_gguf_file(gguf.get(), plan, options.output_path, options.progress);
    summary.tensor_count = plan.size();
    summary.family = "Sine";
    summary.variant = "tone";
    return summary;
}

}  // namespace

const FamilyConverter& converter() {
    static const FamilyConverter c{"Sine", "sine.json", recognises, files, convert};
    return c;
}

}  // namespace talkbox::sine
