// libFuzzer target: a Qwen3-TTS snapshot's configuration as `talkbox convert` reads it — the JSON
// file reader, the hyper-parameter copy into GGUF metadata, then the model's own validation and the
// tensor layout it implies — must reject, never crash, hang or overflow the stack on deep nesting.
// One input serves as config.json, generation_config.json and speech_tokenizer/config.json at once
// (their keys do not overlap), so that one seed reaches all three readers.
#include <memory>

#include "qwen3tts/convert/hparams_meta.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"
#include "temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = talkbox::fuzz::temp_file(data, size, ".json");
    if (path.empty()) return 0;
    try {
        const nlohmann::json doc = talkbox::read_json_file(path);
        const std::unique_ptr<gguf_context, void (*)(gguf_context*)> ctx(gguf_init_empty(), gguf_free);
        talkbox::write_hparams_metadata(ctx.get(), {doc, doc, doc, true});
        const auto hparams = talkbox::qwen3tts::Hparams::from_gguf(talkbox::GgufMeta(ctx.get(), path));
        talkbox::qwen3tts::expected_tensors(hparams);
    } catch (const talkbox::Error&) {
    }
    return 0;
}
