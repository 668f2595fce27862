// Converts a Qwen3-TTS snapshot: open it, map and check every tensor against the layout the
// hyper-parameters imply, then stream header + tensor data into one GGUF file.
#include "qwen3tts/convert/converter.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "convert/gguf_writer.h"
#include "qwen3tts/convert/hparams_meta.h"
#include "convert/safetensors.h"
#include "qwen3tts/checkpoint_names.h"
#include "convert/tokenizer_meta.h"
#include "convert/weight_type.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;

namespace talkbox::qwen3tts {

namespace {

struct SourceTensor {
    const SafetensorsTensor* tensor;
    std::string file;
};

// All tensors of a snapshot, keyed by GGUF name; owns the mapped safetensors files.
class SnapshotTensors {
public:
    void add_file(const std::string& path) {
        files_.push_back(std::make_unique<SafetensorsFile>(path));
        for (const auto& t : files_.back()->tensors()) add(t, path);
    }

    // Sharded weights: the index names, for every tensor, the shard that holds it.
    void add_sharded(const std::string& dir, const std::string& index_path) {
        const auto index = read_json_file(index_path);
        const auto& map = json_member(index, "weight_map", index_path);
        if (!map.is_object() || map.empty()) throw Error(ErrorKind::Format, index_path + ": weight_map must be a non-empty object");
        std::map<std::string, std::set<std::string>> by_shard;
        for (auto it = map.begin(); it != map.end(); ++it) {
            if (!it.value().is_string()) throw Error(ErrorKind::Format, index_path + ": shard of '" + it.key() + "' is not a string");
            const std::string shard = it.value().get<std::string>();
            if (shard.empty() || shard.find('/') != std::string::npos || shard.find("..") != std::string::npos) {
                throw Error(ErrorKind::Format, index_path + ": shard name '" + shard + "' must be a plain file name");
            }
            by_shard[shard].insert(it.key());
        }
        for (const auto& [shard, names] : by_shard) {
            const std::string path = dir + "/" + shard;
            files_.push_back(std::make_unique<SafetensorsFile>(path));
            for (const auto& name : names) {
                if (!files_.back()->find(name)) {
                    throw Error(ErrorKind::Format, index_path + ": tensor '" + name + "' is not in " + shard);
                }
            }
            for (const auto& t : files_.back()->tensors()) {
                if (!names.count(t.name)) {
                    throw Error(ErrorKind::Format, path + ": tensor '" + t.name + "' is not listed in " + index_path);
                }
                add(t, path);
            }
        }
    }

    const std::map<std::string, SourceTensor>& by_gguf_name() const { return tensors_; }
    bool has_prefix(const std::string& prefix) const {
        for (const auto& [name, src] : tensors_)
            if (name.rfind(prefix, 0) == 0) return true;
        return false;
    }

private:
    void add(const SafetensorsTensor& t, const std::string& path) {
        const std::string name = gguf_tensor_name(t.name);
        if (name.empty()) {
            throw Error(ErrorKind::Format, path + ": unexpected tensor '" + t.name + "' (not part of a Qwen3-TTS 12Hz checkpoint)");
        }
        if (!tensors_.emplace(name, SourceTensor{&t, path}).second) {
            throw Error(ErrorKind::Format, path + ": tensor '" + t.name + "' appears more than once in the snapshot");
        }
    }

    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, SourceTensor> tensors_;
};

std::vector<int64_t> ggml_order(const std::vector<int64_t>& torch_shape) {
    if (torch_shape.empty()) return {1};  // a scalar is stored as one element
    return {torch_shape.rbegin(), torch_shape.rend()};
}

std::string require_file(const std::string& path, const std::string& what) {
    if (!fs::exists(path)) throw Error(ErrorKind::NotFound, "snapshot is missing " + what + ": '" + path + "' does not exist");
    return path;
}

// A repository holds one model (the variant is in its name): a variant or checkpoint choice is refused.
void refuse_choices(const std::string& variant, const std::string& checkpoint, const std::string& where) {
    if (variant.empty() && checkpoint.empty()) return;
    throw Error(ErrorKind::InvalidArgument, (variant.empty() ? "a checkpoint choice ('" + checkpoint + "')" : "--variant " + variant) +
                                                " does not apply: " + where +
                                                " is a Qwen3-TTS checkpoint (one model; its variant is in the repository name)");
}

const char* const kRequired[] = {"config.json", "generation_config.json", "vocab.json", "merges.txt",
                                  "tokenizer_config.json", "speech_tokenizer/config.json",
                                  "speech_tokenizer/model.safetensors", "speech_tokenizer/preprocessor_config.json"};

bool recognises(const FileSet& files) {
    return files.has("config.json") || files.has("model.safetensors") || files.has("model.safetensors.index.json");
}

CheckpointFiles checkpoint_files(const FileSet& files, const std::string& variant, const std::string& checkpoint) {
    refuse_choices(variant, checkpoint, files.what);
    CheckpointFiles plan;
    // The index goes first: the shards it names join the list once it is here.
    plan.expand_index = !files.has("model.safetensors");
    if (plan.expand_index) {
        if (!files.has("model.safetensors.index.json")) {
            throw Error(ErrorKind::NotFound, files.what + " has neither model.safetensors nor model.safetensors.index.json");
        }
        plan.files.push_back("model.safetensors.index.json");
    } else {
        plan.files.push_back("model.safetensors");
    }
    for (const char* f : kRequired) {
        if (!files.has(f)) throw Error(ErrorKind::NotFound, files.what + " has no " + f + ": is it a Qwen3-TTS checkpoint?");
        plan.files.push_back(f);
    }
    if (files.has("tokenizer.json")) plan.files.push_back("tokenizer.json");
    return plan;
}

ConvertSummary convert(const ConvertOptions& opt) {
    const std::string dir = opt.snapshot_dir;
    if (!fs::is_directory(dir)) throw Error(ErrorKind::NotFound, "snapshot folder '" + dir + "' does not exist");
    refuse_choices(opt.variant, opt.checkpoint, "'" + dir + "'");

    SnapshotConfigs configs;
    configs.model = read_json_file(require_file(dir + "/config.json", "config.json"));
    configs.generation = read_json_file(require_file(dir + "/generation_config.json", "generation_config.json"));
    configs.speech_tokenizer =
        read_json_file(require_file(dir + "/speech_tokenizer/config.json", "the speech tokenizer config"));

    SnapshotTensors sources;
    if (fs::exists(dir + "/model.safetensors")) {
        sources.add_file(dir + "/model.safetensors");
    } else if (fs::exists(dir + "/model.safetensors.index.json")) {
        sources.add_sharded(dir, dir + "/model.safetensors.index.json");
    } else {
        throw Error(ErrorKind::NotFound, "snapshot '" + dir + "' has neither model.safetensors nor model.safetensors.index.json");
    }
    sources.add_file(require_file(dir + "/speech_tokenizer/model.safetensors", "the speech tokenizer weights"));
    configs.has_speaker_encoder_weights = sources.has_prefix("spk_enc.");

    std::unique_ptr<gguf_context, GgufContextDeleter> gguf(gguf_init_empty());
    gguf_set_val_str(gguf.get(), "general.architecture", kArchitecture);
    const std::string name = opt.name.empty() ? fs::path(dir).lexically_normal().filename().string() : opt.name;
    gguf_set_val_str(gguf.get(), "general.name", name.c_str());
    if (!opt.source_url.empty()) gguf_set_val_str(gguf.get(), "general.source.url", opt.source_url.c_str());
    gguf_set_val_str(gguf.get(), "qwen3tts.weight_type", weight_type_name(opt.type));
    gguf_set_val_u32(gguf.get(), "general.quantization_version", GGML_QNT_VERSION);
    write_hparams_metadata(gguf.get(), configs);
    write_tokenizer_metadata(gguf.get(), dir);

    // Read back what we wrote with the loader's own reader: the layout check uses the same numbers.
    const auto hparams = Hparams::from_gguf(GgufMeta(gguf.get(), "'" + dir + "'"));
    const auto layout = expected_tensors(hparams);

    std::set<std::string> expected_names;
    for (const auto& spec : layout) expected_names.insert(spec.name);
    for (const auto& [name, src] : sources.by_gguf_name()) {
        if (!expected_names.count(name)) {
            throw Error(ErrorKind::Format, src.file + ": unexpected tensor '" + src.tensor->name +
                                               "' (not implied by the hyper-parameters in config.json)");
        }
    }

    std::vector<PlannedTensor> plan;
    auto scratch = std::make_shared<std::vector<float>>();
    for (const auto& spec : layout) {
        const auto it = sources.by_gguf_name().find(spec.name);
        if (it == sources.by_gguf_name().end()) {
            throw Error(ErrorKind::Format, "snapshot '" + dir + "' is missing the " + component_name(spec.component) +
                                               " tensor that becomes '" + spec.name + "'");
        }
        const SourceTensor& src = it->second;
        const auto shape = ggml_order(src.tensor->shape);
        if (shape != spec.shape) {
            std::vector<int64_t> torch_expected(spec.shape.rbegin(), spec.shape.rend());
            std::vector<int64_t> torch_actual(src.tensor->shape);
            throw Error(ErrorKind::Format, src.file + ": tensor '" + src.tensor->name + "' has shape " +
                                               shape_to_string(torch_actual) + ", expected " +
                                               shape_to_string(torch_expected) + " from config.json");
        }
        const ggml_type type = storage_type(spec.name, shape, opt.type);
        const SafetensorsTensor* tensor = src.tensor;
        const int64_t row = shape[0];
        plan.push_back({spec.name, type, shape, [tensor, type, row, scratch](std::vector<uint8_t>& out) {
                            encode_weights(*tensor, type, row, out, *scratch);
                        }});
    }

    const size_t written = write_gguf_file(gguf.get(), plan, opt.output_path, opt.progress);
    ConvertSummary summary;
    summary.tensor_count = plan.size();
    summary.file_bytes = written;
    summary.family = "Qwen3-TTS";
    summary.variant = variant_name(hparams.variant);
    summary.size = hparams.size;
    return summary;
}

}  // namespace

const FamilyConverter& converter() {
    static const FamilyConverter c{"Qwen3-TTS", "a Qwen3-TTS snapshot has config.json and model.safetensors (or its index)",
                                   recognises, checkpoint_files, convert};
    return c;
}

}  // namespace talkbox::qwen3tts
