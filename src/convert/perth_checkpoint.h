// Converts the Perth implicit watermarker's checkpoint (resemble-ai/Perth,
// perth/perth_net/pretrained/implicit/perth_net_250000.pth.tar: torch.save({"model": state_dict,
// "step": N})) into the small GGUF the runtime's watermark/perth.h loads: architecture "perth", the
// released hyper-parameters as keys, the 28 convs as F32 tensors under the state dict's names.
#pragma once

#include <string>

namespace talkbox {

// The released checkpoint: this path of github.com/resemble-ai/Perth at this commit, whose tree
// names this git blob (the SHA-1 of "blob <size>\0" and the bytes).
constexpr const char* kPerthRepository = "resemble-ai/Perth";
constexpr const char* kPerthCommit = "f369a01967960ac4fdf5f0741935756f8ae54e12";
constexpr const char* kPerthPath = "perth/perth_net/pretrained/implicit/perth_net_250000.pth.tar";
constexpr const char* kPerthBlob = "22fbc47e03a4df700425819e9b5a1f81304f3a60";

struct PerthConversion {
    int hidden_size = 0;  // read from the weights' shapes (256 in the release)
    long long step = 0;
};

// Reads `checkpoint` strictly (convert/torch_checkpoint.h) and writes `gguf_path` atomically;
// `source` (may be empty) is recorded as general.source.url. Throws Error naming the checkpoint
// and the tensor when a tensor is missing, misshapen or not float.
PerthConversion convert_perth_checkpoint(const std::string& checkpoint, const std::string& gguf_path,
                                         const std::string& source = "");

}  // namespace talkbox
