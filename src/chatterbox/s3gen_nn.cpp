#include "chatterbox/s3gen_nn.h"

#include "core/ops.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

std::vector<int64_t> reversed(const std::vector<int64_t>& s) { return {s.rbegin(), s.rend()}; }

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

std::vector<int64_t> S3GenLoader::check_shape(const std::string& key, const HostTensor& t,
                                              const std::vector<int64_t>& expected) const {
    if (t.shape != expected) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + key + "' has shape " + shape_str(t.shape) +
                                           ", expected " + shape_str(expected));
    }
    return t.shape;
}

ggml_tensor* S3GenLoader::raw(const std::string& key) {
    HostTensor t = src_.get(key);
    return buf_.add(key, reversed(t.shape), std::move(t.data));
}

Linear S3GenLoader::linear(const std::string& prefix, bool bias) {
    Linear l;
    StoredTensor st;
    if (src_.stored(prefix + ".weight", &st)) {  // a quantised / half matrix: multiplied as stored
        if (st.ne.size() != 2) {
            throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + prefix + ".weight' is not a matrix");
        }
        l.in = st.ne[0];
        l.out = st.ne[1];
        l.w = buf_.add_stored(prefix + ".weight", st.type, st.ne, st.data, st.nbytes);
    } else {
        HostTensor w = src_.get(prefix + ".weight");
        if (w.shape.size() == 1) w.shape.insert(w.shape.begin(), 1);  // a one-output layer stored without its leading 1
        if (w.shape.size() != 2) {
            throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + prefix + ".weight' has shape " +
                                               shape_str(w.shape) + ", expected a matrix");
        }
        l.out = w.shape[0];
        l.in = w.shape[1];
        l.w = buf_.add(prefix + ".weight", {l.in, l.out}, std::move(w.data));
    }
    if (bias) {
        HostTensor b = src_.get(prefix + ".bias");
        check_shape(prefix + ".bias", b, {l.out});
        l.b = buf_.add(prefix + ".bias", {l.out}, std::move(b.data));
    }
    return l;
}

Norm S3GenLoader::norm(const std::string& prefix) {
    Norm n;
    n.w = raw(prefix + ".weight");
    HostTensor b = src_.get(prefix + ".bias");
    check_shape(prefix + ".bias", b, {n.w->ne[0]});
    n.b = buf_.add(prefix + ".bias", {n.w->ne[0]}, std::move(b.data));
    return n;
}

Conv S3GenLoader::conv(const std::string& prefix, bool bias) {
    const HostTensor w = module_weight(src_, prefix);
    if (w.shape.size() != 3) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': conv '" + prefix + "' has weight shape " + shape_str(w.shape) +
                                           ", expected [out, in, kernel]");
    }
    Conv c;
    c.cout = w.shape[0];
    c.cin = w.shape[1];
    c.k = w.shape[2];
    c.direct = direct_ && conv_direct_supported(c.cin, c.cout, c.k, 1);
    c.w = buf_.add(prefix + ".weight", nn::conv_weight_shape(c), nn::conv_weight(w.data, c));
    if (bias) {
        HostTensor b = src_.get(prefix + ".bias");
        check_shape(prefix + ".bias", b, {c.cout});
        c.b = buf_.add(prefix + ".bias", {c.cout}, std::move(b.data));
    } else if (c.direct) {
        c.b = buf_.add(prefix + ".bias", {c.cout}, std::vector<float>(static_cast<size_t>(c.cout), 0.0f));
    }
    return c;
}

ConvTranspose S3GenLoader::conv_transpose(const std::string& prefix, int64_t stride, int64_t pad) {
    const HostTensor w = module_weight(src_, prefix);
    if (w.shape.size() != 3) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': transposed conv '" + prefix + "' has weight shape " +
                                           shape_str(w.shape) + ", expected [in, out, kernel]");
    }
    ConvTranspose c = nn::conv_transpose_shape(w.shape[0], w.shape[1], w.shape[2], stride, pad);
    const int64_t taps = c.kp / stride;
    c.direct = direct_ && conv_direct_supported(c.cin, c.cout * stride, taps, 1, 1, taps - 1);
    HostTensor b = src_.get(prefix + ".bias");
    check_shape(prefix + ".bias", b, {c.cout});
    c.w = buf_.add(prefix + ".weight", nn::conv_transpose_weight_shape(c), nn::conv_transpose_weight(w.data, c));
    c.b = buf_.add(prefix + ".bias", {c.direct ? c.cout * stride : c.cout}, nn::conv_transpose_bias(b.data, c));
    return c;
}

Snake S3GenLoader::snake(const std::string& alpha_key) {
    HostTensor a = src_.get(alpha_key);
    if (a.shape.size() != 1) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + alpha_key + "' has shape " + shape_str(a.shape) +
                                           ", expected a vector");
    }
    std::vector<float> inv = nn::snake_inverse(a.data);
    Snake s;
    const int64_t c = a.shape[0];
    s.scale = buf_.add(alpha_key, {c}, std::move(a.data));
    s.inv_beta = buf_.add(alpha_key + "^-1", {c}, std::move(inv));
    return s;
}

}  // namespace talkbox::chatterbox
