#include "text/japanese_reader.h"

#include <mecab.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "talkbox/error.h"
#include "text/unicode.h"

#ifndef TALKBOX_MECAB_DICDIR
#error "TALKBOX_MECAB_DICDIR must name the default IPAdic folder (src/CMakeLists.txt sets it)"
#endif

namespace talkbox {

namespace {

// IPAdic's features: 品詞,細分類1,細分類2,細分類3,活用型,活用形,原形,読み,発音 (words the dictionary
// lacks have the first seven only). Kanji entries quote no commas, so a plain split is enough.
std::vector<std::string> split_features(const char* feature) {
    std::vector<std::string> fields(1);
    for (const char* p = feature; *p; ++p) {
        if (*p == ',') {
            fields.emplace_back();
        } else {
            fields.back() += *p;
        }
    }
    return fields;
}

constexpr size_t kReadingField = 7;

bool is_katakana_word(const std::string& s) {
    if (s.empty()) return false;
    for (char32_t c : decode_utf8(s)) {
        if (c < 0x30A1 || c > 0x30FC) return false;
    }
    return true;
}

std::string install_hint() {
    return "install IPAdic in UTF-8 (Debian: apt install mecab-ipadic-utf8) or set TALKBOX_MECAB_DICDIR to its folder";
}

}  // namespace

struct JapaneseReader::Impl {
    std::unique_ptr<MeCab::Model> model;
    std::unique_ptr<MeCab::Tagger> tagger;
};

JapaneseReader::JapaneseReader(const std::string& dir) : impl_(std::make_unique<Impl>()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const char* file : {"sys.dic", "dicrc"}) {
        if (!fs::is_regular_file(fs::path(dir) / file, ec)) {
            throw Error(ErrorKind::NotFound, "Japanese kanji readings need MeCab's IPAdic dictionary, which is not in '" + dir +
                                                 "' (no " + file + "): " + install_hint());
        }
    }
    // The dictionary's own dicrc stands in for a mecabrc, so no /etc/mecabrc (or its dictionary
    // choice, a Debian alternative that may name JUMAN) is needed or read.
    const std::string rc = (fs::path(dir) / "dicrc").string();
    const char* argv[] = {"talkbox", "-r", rc.c_str(), "-d", dir.c_str()};
    impl_->model.reset(MeCab::createModel(5, const_cast<char**>(argv)));
    if (!impl_->model) {
        std::string why = MeCab::getLastError();
        while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
        throw Error(ErrorKind::Format, "MeCab cannot load the dictionary in '" + dir + "': " + why);
    }
    const MeCab::DictionaryInfo* info = impl_->model->dictionary_info();
    const std::string charset = info && info->charset ? info->charset : "";
    if (charset != "utf-8" && charset != "UTF-8" && charset != "utf8" && charset != "UTF8") {
        throw Error(ErrorKind::Format, "the MeCab dictionary in '" + dir + "' is in " + (charset.empty() ? "an unknown charset" : charset) +
                                           ", expected UTF-8: " + install_hint());
    }
    impl_->tagger.reset(impl_->model->createTagger());
    if (!impl_->tagger) throw Error(ErrorKind::Internal, std::string("MeCab cannot start: ") + MeCab::getLastError());
    // IPAdic keeps the katakana reading in feature field 8; other dictionaries (JUMAN, UniDic) do not.
    const auto probe = analyze("日本");
    if (probe.size() != 1 || !is_katakana_word(probe[0].reading)) {
        throw Error(ErrorKind::Format, "the MeCab dictionary in '" + dir +
                                           "' is not IPAdic (its 8th feature field is not a katakana reading): " + install_hint());
    }
}

JapaneseReader::~JapaneseReader() = default;

std::vector<Morpheme> JapaneseReader::analyze(const std::string& text) const {
    std::unique_ptr<MeCab::Lattice> lattice(impl_->model->createLattice());
    if (!lattice) throw Error(ErrorKind::Internal, std::string("MeCab cannot make a lattice: ") + MeCab::getLastError());
    lattice->set_sentence(text.data(), text.size());
    if (!impl_->tagger->parse(lattice.get())) {
        throw Error(ErrorKind::Internal, std::string("MeCab could not analyse the text: ") + lattice->what());
    }
    const char* base = lattice->sentence();
    std::vector<Morpheme> out;
    for (const MeCab::Node* n = lattice->bos_node(); n; n = n->next) {
        if (n->stat == MECAB_BOS_NODE || n->stat == MECAB_EOS_NODE) continue;
        Morpheme m;
        m.begin = static_cast<size_t>(n->surface - base);
        m.end = m.begin + n->length;
        if (m.end > text.size()) throw Error(ErrorKind::Internal, "MeCab returned a morpheme outside the text");
        const auto fields = split_features(n->feature);
        if (n->stat == MECAB_NOR_NODE && fields.size() > kReadingField && fields[kReadingField] != "*") {
            m.reading = fields[kReadingField];
        }
        out.push_back(std::move(m));
    }
    return out;
}

std::string JapaneseReader::dictionary_dir() {
    if (const char* env = std::getenv("TALKBOX_MECAB_DICDIR"); env && *env) return env;
    return TALKBOX_MECAB_DICDIR;
}

const JapaneseReader& JapaneseReader::shared() {
    static std::mutex mutex;
    static std::unique_ptr<JapaneseReader> reader;
    std::lock_guard<std::mutex> lock(mutex);
    if (!reader) reader = std::make_unique<JapaneseReader>(dictionary_dir());
    return *reader;
}

std::string katakana_to_hiragana(const std::string& utf8) {
    auto cps = decode_utf8(utf8);
    for (char32_t& c : cps) {
        if (c >= 0x30A1 && c <= 0x30F6) c -= 0x60;
    }
    return encode_utf8(cps, 0, cps.size());
}

}  // namespace talkbox
