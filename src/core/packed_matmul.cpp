#include "core/packed_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/packed_kernels.h"
#include "ggml-backend.h"
#include "talkbox/error.h"

namespace talkbox::packed {

using kernels::InputBlock;
using kernels::KernelSet;
using kernels::kBlock;
using kernels::kCols;
using kernels::kQ4kNibbles;
using kernels::kQ4kPanelBytes;
using kernels::kQ4kRowBytes;
using kernels::kQ4kScales;
using kernels::kSuper;
using kernels::kGroups;
using kernels::kPanelBlockBytes;
using kernels::kRowBlockBytes;

static_assert(kernels::kRows == kPanelRows);

namespace {

bool cpu_runs(const KernelSet& set) {
#if defined(__x86_64__)
    if (&set == &kernels::kAvx512) {
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    }
    const bool avx2 = cpu_has_avx2_fma() && cpu_has_f16c();
    if (&set == &kernels::kAvxVnni) return avx2 && cpu_has_avx_vnni();
    if (&set == &kernels::kAvx2) return avx2;
#endif
    (void)set;
    return false;
}

// The best set this CPU runs, or the one TALKBOX_KERNELS names ("avx512", "avxvnni", "avx2"; "ggml": none,
// ggml's own products), for comparing them on one machine.
const KernelSet* choose() {
    const std::vector<const KernelSet*> sets = runnable_kernel_sets();
    const char* wanted = std::getenv("TALKBOX_KERNELS");
    if (!wanted || !*wanted) return sets.empty() ? nullptr : sets.front();
    if (std::strcmp(wanted, "ggml") == 0) return nullptr;
    for (const KernelSet* set : sets) {
        if (std::strcmp(wanted, set->name) == 0) return set;
    }
    std::string names;
    for (const KernelSet* set : sets) names += std::string(set->name) + ", ";
    throw Error(ErrorKind::InvalidArgument, std::string("TALKBOX_KERNELS=") + wanted + ": this CPU runs " + names + "or ggml");
}

// Columns are taken kPassColumnBlocks column blocks (a pass) at a time: each panel is multiplied
// by every column block of the pass while it stays in cache, so a prefill of N columns reads the
// weights from memory about N / (kPassColumnBlocks · kCols) times rather than N / kCols times (the
// 0.6B talker's ~33-position prefill read its 440 MB five times). A pass's quantised columns, up to
// ~270 KB for k = 3072, stay in L2 beside the panel.
constexpr int64_t kPassColumnBlocks = 8;

// The work is (pass, panel) pairs, pass major, split evenly and contiguously between the threads:
// a decode step or a prefill of up to one pass splits the panels, longer products mostly whole
// passes. A thread quantises each pass it touches once (a pass shared by two threads is quantised
// by both). Every output is the same kernel call on the same quantised block whatever the split,
// so the results do not depend on the thread count.
void packed_mul_mat(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const KernelSet& set = *static_cast<const KernelSet*>(userdata);
    const ggml_tensor* w = dst->src[0];
    const ggml_tensor* x = dst->src[1];
    const int64_t k = w->ne[0], rows = w->ne[1], ne1 = x->ne[1], columns = ne1 * x->ne[2], blocks = k / kBlock;
    const int64_t panels = rows / kPanelRows, column_blocks = (columns + kCols - 1) / kCols;
    const int64_t passes = (column_blocks + kPassColumnBlocks - 1) / kPassColumnBlocks;
    const int64_t units = panels * passes, u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    if (u0 == u1) return;
    thread_local std::vector<InputBlock> xs;
    const auto pass_blocks = static_cast<size_t>(blocks * kPassColumnBlocks);
    if (xs.size() < pass_blocks) xs.resize(pass_blocks);
    const auto* base = static_cast<const uint8_t*>(w->data);
    const kernels::PanelProduct product = w->type == GGML_TYPE_Q4_K ? set.q4_k : set.q8_0;
    const size_t panel_bytes = ggml_row_size(w->type, k) * kPanelRows;
    const auto width = [&](int64_t cb) { return static_cast<int>(std::min<int64_t>(kCols, columns - cb * kCols)); };
    int64_t quantised = -1;
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t pass = u / panels, p = u % panels;
        const int64_t cb0 = pass * kPassColumnBlocks, cb1 = std::min(column_blocks, cb0 + kPassColumnBlocks);
        if (pass != quantised) {
            for (int64_t cb = cb0; cb < cb1; ++cb) {
                const float* in[kCols];
                for (int c = 0; c < width(cb); ++c) {
                    const int64_t col = cb * kCols + c;
                    in[c] = reinterpret_cast<const float*>(static_cast<const char*>(x->data) + (col % ne1) * x->nb[1] +
                                                           (col / ne1) * x->nb[2]);
                }
                set.quantise(in, width(cb), blocks, xs.data() + (cb - cb0) * blocks);
            }
            quantised = pass;
        }
        for (int64_t cb = cb0; cb < cb1; ++cb) {
            float* out[kCols];
            for (int c = 0; c < width(cb); ++c) {
                out[c] = reinterpret_cast<float*>(static_cast<char*>(dst->data) + (cb * kCols + c) * dst->nb[1]) + p * kPanelRows;
            }
            product(base + static_cast<size_t>(p) * panel_bytes, k, xs.data() + (cb - cb0) * blocks, width(cb), out);
        }
    }
}

}  // namespace

std::vector<const KernelSet*> runnable_kernel_sets() {
    std::vector<const KernelSet*> sets;
#if defined(__x86_64__)
    for (const KernelSet* set : {&kernels::kAvx512, &kernels::kAvxVnni, &kernels::kAvx2}) {
        if (cpu_runs(*set)) sets.push_back(set);
    }
#endif
    return sets;
}

const KernelSet* kernel_set() {
    static const KernelSet* const chosen = choose();
    return chosen;
}

bool available() { return kernel_set() != nullptr; }

bool packs(ggml_type type) { return available() && (type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_K); }

bool can_pack(const ggml_tensor* w) {
    return packs(w->type) && can_pack_layout(w);
}

bool can_pack_layout(const ggml_tensor* w) {
    return (w->type == GGML_TYPE_Q8_0 || w->type == GGML_TYPE_Q4_K) && ggml_is_contiguous(w) && w->ne[2] == 1 && w->ne[3] == 1 &&
           w->ne[1] % kPanelRows == 0 && w->buffer && ggml_backend_buffer_is_host(w->buffer);
}

namespace {

// One panel's 16 rows (copied aside) → the Q8_0 panel layout, each weight stored as q + offset.
void pack_q8_panel(const uint8_t* rows, size_t row_bytes, int64_t blocks, uint8_t offset, uint8_t* panel) {
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* out = panel + static_cast<size_t>(b) * kPanelBlockBytes;
        for (int64_t r = 0; r < kPanelRows; ++r) {
            const uint8_t* block = rows + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(b) * kRowBlockBytes;
            std::memcpy(out + r * 2, block, 2);
            for (int64_t i = 0; i < kBlock; ++i) {
                out[kPanelRows * 2 + (i / 4) * 64 + r * 4 + i % 4] = static_cast<uint8_t>(block[2 + i] + offset);
            }
        }
    }
}

// One panel's 16 rows (copied aside) → the Q4_K panel layout.
void pack_q4k_panel(const uint8_t* rows, size_t row_bytes, int64_t supers, uint8_t* panel) {
    for (int64_t s = 0; s < supers; ++s) {
        uint8_t* out = panel + static_cast<size_t>(s) * kQ4kPanelBytes;
        for (int64_t r = 0; r < kPanelRows; ++r) {
            const uint8_t* block = rows + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(s) * kQ4kRowBytes;
            std::memcpy(out + r * 2, block, 2);                   // d
            std::memcpy(out + 2 * kPanelRows + r * 2, block + 2, 2);  // dmin
            for (int i = 0; i < 12; ++i) out[kQ4kScales + i * kPanelRows + r] = block[4 + i];
            const uint8_t* qs = block + 16;
            for (int pair = 0; pair < 4; ++pair) {
                for (int64_t i = 0; i < kBlock; ++i) {
                    out[kQ4kNibbles + (pair * kGroups + i / 4) * 64 + r * 4 + i % 4] = qs[pair * kBlock + i];
                }
            }
        }
    }
}

}  // namespace

void pack(ggml_tensor* w) {
    if (!available()) throw Error(ErrorKind::Internal, std::string("cannot pack weight '") + w->name + "': no panel kernels on this CPU");
    pack(w, *kernel_set());
}

void pack(ggml_tensor* w, const KernelSet& set) {
    if (!can_pack_layout(w)) throw Error(ErrorKind::Internal, std::string("cannot pack weight '") + w->name + "' into panels");
    const size_t row_bytes = ggml_row_size(w->type, w->ne[0]);
    std::vector<uint8_t> rows(row_bytes * kPanelRows);
    auto* data = static_cast<uint8_t*>(w->data);
    for (int64_t p = 0; p < w->ne[1] / kPanelRows; ++p) {
        uint8_t* panel = data + static_cast<size_t>(p) * rows.size();  // the panel replaces its own 16 rows
        std::memcpy(rows.data(), panel, rows.size());
        if (w->type == GGML_TYPE_Q4_K) {
            pack_q4k_panel(rows.data(), row_bytes, w->ne[0] / kSuper, panel);
        } else {
            pack_q8_panel(rows.data(), row_bytes, w->ne[0] / kBlock, set.q8_offset, panel);
        }
    }
}

ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x) {
    if (!available()) throw Error(ErrorKind::Internal, std::string("packed weight '") + w->name + "' but no panel kernels on this CPU");
    return mul_mat(ctx, w, x, *kernel_set());
}

ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, const KernelSet& set) {
    if (x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->ne[3] != 1 || x->nb[0] != sizeof(float)) {
        throw Error(ErrorKind::Internal, std::string("packed product of '") + w->name + "' needs F32 [K, N(, B)] input columns");
    }
    ggml_tensor* args[2] = {w, x};
    // ggml passes userdata through untouched; the set is a constant of the program.
    return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], x->ne[2], 1, args, 2, packed_mul_mat, GGML_N_TASKS_MAX,
                          const_cast<KernelSet*>(&set));
}

}  // namespace talkbox::packed
