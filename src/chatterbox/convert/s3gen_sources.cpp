// TensorSources for running S3Gen without converting (tests and benchmarks): the official
// checkpoint's safetensors read directly, and tensors held in memory, optionally quantised as
// `talkbox convert --type` would store them. They live with the converter because they read its
// formats and follow its storage policy; the runtime reads only converted GGUF files.
#include "chatterbox/convert/s3gen_sources.h"

#include "chatterbox/checkpoint_names.h"
#include "convert/safetensors.h"
#include "convert/weight_type.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

class SafetensorsSource : public TensorSource {
public:
    explicit SafetensorsSource(const std::string& path) : file_(path) {}
    const std::string& label() const override { return file_.path(); }
    bool has(const std::string& key) const override { return file_.find(key) != nullptr; }
    HostTensor get(const std::string& key) const override {
        const SafetensorsTensor* t = file_.find(key);
        if (!t) throw Error(ErrorKind::NotFound, "'" + file_.path() + "': missing tensor '" + key + "'");
        HostTensor h;
        h.shape = t->shape;
        h.data.resize(static_cast<size_t>(t->element_count()));
        safetensors_to_f32(*t, h.data.data());
        return h;
    }

private:
    SafetensorsFile file_;
};

class MemorySource : public TensorSource {
public:
    MemorySource(std::map<std::string, HostTensor> t, std::string label) : tensors_(std::move(t)), label_(std::move(label)) {}
    const std::string& label() const override { return label_; }
    bool has(const std::string& key) const override { return tensors_.count(key) != 0; }
    HostTensor get(const std::string& key) const override {
        const auto it = tensors_.find(key);
        if (it == tensors_.end()) throw Error(ErrorKind::NotFound, "'" + label_ + "': missing tensor '" + key + "'");
        return it->second;
    }
    bool stored(const std::string& key, StoredTensor* out) const override {
        const auto it = stored_.find(key);
        if (it == stored_.end()) return false;
        out->type = it->second.type;
        out->ne = it->second.ne;
        out->data = it->second.bytes.data();
        out->nbytes = it->second.bytes.size();
        return true;
    }

    // Quantises what the converter would store as `type`; keeps the dequantised values for get().
    void quantise(WeightType type) {
        for (auto& [key, t] : tensors_) {
            const std::string name = chatterbox_gguf_name(ChatterboxFile::S3Gen, key);
            if (name.empty()) continue;
            const std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());
            const ggml_type st = storage_type(name, ne, type);
            if (st == GGML_TYPE_F32) continue;
            const int64_t row = ne[0], rows = static_cast<int64_t>(t.data.size()) / row;
            Stored q{st, ne, std::vector<uint8_t>(ggml_row_size(st, row) * static_cast<size_t>(rows))};
            ggml_quantize_chunk(st, t.data.data(), q.bytes.data(), 0, rows, row, nullptr);
            ggml_get_type_traits(st)->to_float(q.bytes.data(), t.data.data(), static_cast<int64_t>(t.data.size()));
            stored_[key] = std::move(q);
        }
    }

private:
    struct Stored {
        ggml_type type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> bytes;
    };
    std::map<std::string, HostTensor> tensors_;
    std::map<std::string, Stored> stored_;
    std::string label_;
};

}  // namespace

std::unique_ptr<TensorSource> safetensors_source(const std::string& path) {
    return std::make_unique<SafetensorsSource>(path);
}

std::unique_ptr<TensorSource> memory_source(std::map<std::string, HostTensor> tensors, const std::string& label) {
    return std::make_unique<MemorySource>(std::move(tensors), label);
}

std::unique_ptr<TensorSource> memory_source(std::map<std::string, HostTensor> tensors, const std::string& label,
                                            WeightType type) {
    auto src = std::make_unique<MemorySource>(std::move(tensors), label);
    src->quantise(type);
    return src;
}

}  // namespace talkbox::chatterbox
