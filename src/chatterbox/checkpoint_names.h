// The one table that maps the official Chatterbox checkpoint keys (t3_*.safetensors, s3gen.pt /
// s3gen.safetensors, ve.pt / ve.safetensors, conds.pt) to talkbox GGUF tensor names
// (docs/gguf-format.md, "Chatterbox"). Loaders ask for tensors by official key through
// chatterbox_gguf_name() so that the converter and the loaders can never disagree.
#pragma once

#include <string>

namespace talkbox {

// Which released file (state dict) a key comes from; the same key means different things in
// different files (e.g. `proj.weight` in ve.* vs. T3).
enum class ChatterboxFile {
    T3,            // t3_mtl23ls_v2.safetensors / t3_cfg.safetensors / t3_turbo_v1.safetensors → "t3."
    S3Gen,         // s3gen.pt / s3gen.safetensors → "flow.", "hift.", "s3tok.", "campp."
    VoiceEncoder,  // ve.pt / ve.safetensors → "ve."
    Conds,         // conds.pt (keys "t3.<field>" / "gen.<field>") → "voice."
};

const char* chatterbox_file_name(ChatterboxFile file);

// The GGUF name of an official key; empty when the key is not part of that file's layout or is
// dropped (see chatterbox_key_dropped). Every result is at most 63 bytes.
std::string chatterbox_gguf_name(ChatterboxFile file, const std::string& key);

// GPT-2 Conv1D weights (Turbo T3 `tfmr.h.<i>.{attn.c_attn,attn.c_proj,mlp.c_fc,mlp.c_proj}.weight`),
// stored [in, out] by PyTorch: the GGUF holds them transposed to the [out, in] of every other
// linear layer (ggml ne = [in, out]), so loaders read them like nn.Linear weights.
bool chatterbox_key_transposed(ChatterboxFile file, const std::string& key);

// Keys the official state dicts carry that no inference code reads and the GGUF omits:
// BatchNorm `num_batches_tracked` counters (training only); T3's backbone token table
// (`tfmr.embed_tokens` / GPT-2 `tfmr.wte`: T3 feeds embeddings it builds) and `text_head`
// (training loss only).
bool chatterbox_key_dropped(ChatterboxFile file, const std::string& key);

}  // namespace talkbox
