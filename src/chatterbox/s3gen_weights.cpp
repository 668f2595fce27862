#include "chatterbox/s3gen_weights.h"

#include <cmath>
#include <cstring>

#include "chatterbox/checkpoint_names.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

class GgufSource : public TensorSource {
public:
    explicit GgufSource(const GgufFile& file) : file_(file) {
        const std::string arch = file.meta().has_key("general.architecture") ? file.meta().get_string("general.architecture") : "";
        if (arch != "chatterbox") {
            throw Error(ErrorKind::Format, "'" + file.path() + "' is not a Chatterbox model (general.architecture '" + arch + "')");
        }
    }
    const std::string& label() const override { return file_.path(); }
    bool has(const std::string& key) const override {
        const std::string name = chatterbox_gguf_name(ChatterboxFile::S3Gen, key);
        return !name.empty() && file_.has_tensor(name);
    }
    HostTensor get(const std::string& key) const override {
        const GgufTensorInfo& t = info(key);
        HostTensor h;
        h.shape.assign(t.shape.rbegin(), t.shape.rend());
        int64_t n = 1;
        for (int64_t d : t.shape) n *= d;
        h.data.resize(static_cast<size_t>(n));
        if (t.type == GGML_TYPE_F32) {
            std::memcpy(h.data.data(), t.data, static_cast<size_t>(n) * sizeof(float));
        } else {
            const auto* traits = ggml_get_type_traits(t.type);
            if (!traits->to_float) {
                throw Error(ErrorKind::Unsupported, "'" + file_.path() + "': tensor '" + t.name + "' has type " +
                                                        ggml_type_name(t.type) + ", which cannot be read as floats");
            }
            traits->to_float(t.data, h.data.data(), n);
        }
        return h;
    }
    bool stored(const std::string& key, StoredTensor* out) const override {
        const GgufTensorInfo& t = info(key);
        if (t.type == GGML_TYPE_F32) return false;
        out->type = t.type;
        out->ne = t.shape;
        out->data = t.data;
        out->nbytes = t.nbytes;
        return true;
    }

private:
    const GgufTensorInfo& info(const std::string& key) const {
        const std::string name = chatterbox_gguf_name(ChatterboxFile::S3Gen, key);
        if (name.empty() || !file_.has_tensor(name)) {
            throw Error(ErrorKind::NotFound, "'" + file_.path() + "': missing tensor '" + (name.empty() ? key : name) +
                                                 "' (S3Gen '" + key + "')");
        }
        return file_.tensor(name);
    }
    const GgufFile& file_;
};

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

std::unique_ptr<TensorSource> gguf_source(const GgufFile& file) { return std::make_unique<GgufSource>(file); }

HostTensor module_weight(const TensorSource& src, const std::string& prefix) {
    if (src.has(prefix + ".weight")) return src.get(prefix + ".weight");
    std::string gk = prefix + ".parametrizations.weight.original0", vk = prefix + ".parametrizations.weight.original1";
    if (!src.has(gk) && src.has(prefix + ".weight_g")) {
        gk = prefix + ".weight_g";
        vk = prefix + ".weight_v";
    }
    if (!src.has(gk)) {
        throw Error(ErrorKind::NotFound, "'" + src.label() + "': missing tensor '" + prefix + ".weight' (nor its weight-norm parts '" +
                                             gk + "' / '" + vk + "')");
    }
    const HostTensor g = src.get(gk);
    HostTensor v = src.get(vk);
    if (v.shape.empty() || numel(g.shape) != v.shape[0]) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': weight norm of '" + prefix + "': g " + shape_str(g.shape) +
                                           " does not match v " + shape_str(v.shape));
    }
    const int64_t rows = v.shape[0], per = numel(v.shape) / rows;
    for (int64_t r = 0; r < rows; ++r) {
        float* row = v.data.data() + r * per;
        double ss = 0;
        for (int64_t i = 0; i < per; ++i) ss += static_cast<double>(row[i]) * row[i];
        const float scale = static_cast<float>(g.data[static_cast<size_t>(r)] / std::sqrt(ss));
        for (int64_t i = 0; i < per; ++i) row[i] *= scale;
    }
    return v;
}

}  // namespace talkbox::chatterbox
