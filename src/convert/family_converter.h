// What a model family's conversion gives `talkbox convert` and `talkbox pull`. Each family
// implements it in its folder's convert/ subfolder (part of the tools library, never of the
// runtime); checkpoints/converters.cpp lists them, one line per family.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "talkbox/convert.h"

namespace talkbox {

// The files of a folder, or of a hub repository before anything is downloaded, as far as choosing
// what to read goes: `pull` downloads exactly what the family's convert then reads.
struct FileSet {
    std::function<bool(const std::string& name)> has;          // a file of that relative name is there
    std::function<std::string(const std::string& name)> path;  // how messages name it
    std::string what;                                          // the subject of "... is missing X"
    std::function<std::vector<std::string>()> names;           // every file at the top level (no folders)
};
// The files of a folder, named by their path; `what` as in FileSet ("snapshot", "Chatterbox folder").
FileSet folder_files(const std::string& dir, const std::string& what);

// What converting one checkpoint reads, relative to its folder, in download order.
struct CheckpointFiles {
    std::vector<std::string> files;
    bool expand_index = false;    // files[0] is a safetensors index: the shards it names follow
    std::string variant;          // what the files convert to (ConvertOptions::variant); "" where a repository holds one model
    bool default_variant = true;  // the variant the checkpoint converts to when none is asked for
    // A checkpoint other than the variant's default (ConvertOptions::checkpoint), named for the
    // model cache ("v3": pulled as ORG/NAME@<variant>_v3); "" for the default.
    std::string checkpoint_name;
    // Files the checkpoint's loader takes from another repository, which `pull` fetches into the
    // same snapshot: a Chatterbox language pack's voice encoder and built-in voice come from
    // ResembleAI/chatterbox. Empty where the repository holds everything.
    std::string companion_repo;
    std::vector<std::string> companion_files;
};

struct FamilyConverter {
    const char* family;       // for people: "Qwen3-TTS"
    const char* looks_like;   // what recognises() looks for, for the message when no family does
    // True when `files` hold this family's released checkpoint (the first family that says so converts it).
    bool (*recognises)(const FileSet& files);
    // The files converting reads for `variant` and `checkpoint` (ConvertOptions; empty: the
    // default). Throws Error (NotFound) naming the first missing file, (InvalidArgument) for a
    // variant or checkpoint choice this family or checkpoint does not have.
    CheckpointFiles (*files)(const FileSet& files, const std::string& variant, const std::string& checkpoint);
    // Throws Error naming the offending file, tensor or key; never leaves a partial output.
    ConvertSummary (*convert)(const ConvertOptions& options);
};

}  // namespace talkbox
