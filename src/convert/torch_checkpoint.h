// Strict reader for PyTorch `torch.save` zip checkpoints (.pt) of state dicts and plain dicts of
// tensors, without Python: an uncompressed ZIP whose `<stem>/data.pkl` is a pickle and whose
// `<stem>/data/<key>` entries are raw little-endian storages.
//
// The pickle interpreter accepts only the subset torch writes for such objects: dicts /
// OrderedDicts, lists, tuples, None, booleans, integers, floats, strings, and tensors rebuilt by
// `torch._utils._rebuild_tensor_v2` from typed storages. Any other global (class or function) is
// refused with an error naming it, so a checkpoint can never run code or build foreign objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "core/mapped_file.h"

namespace talkbox {

class TorchCheckpoint {
public:
    explicit TorchCheckpoint(const std::string& path);  // throws Error naming the first problem
    // Parses an in-memory image (the fuzzer and tests use this); `label` names it in errors.
    TorchCheckpoint(const uint8_t* data, size_t size, const std::string& label);
    ~TorchCheckpoint();

    const std::string& path() const { return label_; }
    // Every tensor of the pickled object, keyed by its path of dict keys / list indices joined by
    // "." (a state dict's own keys; conds.pt gives "t3.speaker_emb", ...), in pickle order. Data is
    // row-major contiguous in the logical shape: views and non-contiguous strides are copied out.
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* find(const std::string& name) const;
    // Non-tensor leaves, same keys: "None", "True"/"False", integers, floats, or the string itself.
    const std::map<std::string, std::string>& values() const { return values_; }

private:
    void parse(const uint8_t* data, size_t size);

    std::unique_ptr<MappedFile> map_;
    std::string label_;
    std::vector<SafetensorsTensor> tensors_;
    std::vector<std::vector<uint8_t>> owned_;  // copies of non-contiguous tensors
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> values_;
};

}  // namespace talkbox
