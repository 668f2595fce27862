#include "convert/torch_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <variant>

#include "talkbox/error.h"

namespace talkbox {

namespace {

// ---------------------------------------------------------------- ZIP (stored entries only)

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) { return static_cast<uint32_t>(rd16(p)) | (static_cast<uint32_t>(rd16(p + 2)) << 16); }
uint64_t rd64(const uint8_t* p) { return static_cast<uint64_t>(rd32(p)) | (static_cast<uint64_t>(rd32(p + 4)) << 32); }

struct ZipEntry {
    const uint8_t* data;
    size_t size;
};

class ZipReader {
public:
    ZipReader(const uint8_t* data, size_t size, const std::string& label) : d_(data), n_(size), label_(label) { read(); }
    const std::map<std::string, ZipEntry>& entries() const { return entries_; }
    const std::vector<std::string>& order() const { return order_; }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::Format, label_ + ": not a valid PyTorch zip checkpoint: " + what);
    }
    void need(uint64_t offset, uint64_t len, const std::string& what) const {
        if (offset > n_ || len > n_ - offset) {
            fail(what + " at byte " + std::to_string(offset) + " runs past the end of the file (" + std::to_string(n_) +
                 " bytes; truncated?)");
        }
    }

    void read() {
        if (n_ < 22) fail("file is too short for a ZIP archive (" + std::to_string(n_) + " bytes)");
        // End of central directory: the last record with its signature (a comment may follow).
        size_t eocd = std::numeric_limits<size_t>::max();
        const size_t lowest = n_ - 22 > 65535 ? n_ - 22 - 65535 : 0;
        for (size_t pos = n_ - 22 + 1; pos-- > lowest;) {
            if (rd32(d_ + pos) == 0x06054b50) {
                eocd = pos;
                break;
            }
        }
        if (eocd == std::numeric_limits<size_t>::max()) fail("no end-of-central-directory record (truncated file?)");
        uint64_t count = rd16(d_ + eocd + 10);
        uint64_t cd_size = rd32(d_ + eocd + 12);
        uint64_t cd_offset = rd32(d_ + eocd + 16);
        if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
            if (eocd < 20 || rd32(d_ + eocd - 20) != 0x07064b50) fail("ZIP64 end-of-central-directory locator missing");
            const uint64_t z64 = rd64(d_ + eocd - 20 + 8);
            need(z64, 56, "ZIP64 end-of-central-directory record");
            if (rd32(d_ + z64) != 0x06064b50) fail("bad ZIP64 end-of-central-directory signature");
            count = rd64(d_ + z64 + 32);
            cd_size = rd64(d_ + z64 + 40);
            cd_offset = rd64(d_ + z64 + 48);
        }
        need(cd_offset, cd_size, "central directory");
        if (count > cd_size / 46) {
            fail("a central directory of " + std::to_string(cd_size) + " bytes cannot hold " + std::to_string(count) +
                 " entries of 46 bytes or more");
        }
        const uint64_t cd_end = cd_offset + cd_size;
        // Where each entry's local header and data lie: entries must not share bytes, nor reach
        // into the central directory.
        struct Span {
            uint64_t begin, end;
            std::string name;
        };
        std::vector<Span> spans;
        uint64_t pos = cd_offset;
        for (uint64_t i = 0; i < count; ++i) {
            if (pos + 46 > cd_end) fail("central directory entry " + std::to_string(i) + " runs past the central directory");
            const uint8_t* c = d_ + pos;
            if (rd32(c) != 0x02014b50) fail("bad central directory signature at byte " + std::to_string(pos));
            const uint16_t method = rd16(c + 10);
            uint64_t comp = rd32(c + 20), uncomp = rd32(c + 24);
            const uint16_t name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
            uint64_t local = rd32(c + 42);
            if (pos + 46 + name_len + extra_len + comment_len > cd_end) {
                fail("central directory entry " + std::to_string(i) + " runs past the central directory");
            }
            const std::string name(reinterpret_cast<const char*>(c + 46), name_len);
            // ZIP64 extended information: 8-byte values for each saturated field, in this order.
            const uint8_t* e = c + 46 + name_len;
            for (size_t k = 0; k + 4 <= extra_len;) {
                const uint16_t id = rd16(e + k), len = rd16(e + k + 2);
                if (k + 4 + len > extra_len) fail("extra field of '" + name + "' runs past its entry");
                if (id == 0x0001) {
                    size_t q = k + 4;
                    auto take = [&](uint64_t& v) {
                        if (v != 0xFFFFFFFF) return;
                        if (q + 8 > k + 4 + len) fail("ZIP64 extra field of '" + name + "' is too short");
                        v = rd64(e + q);
                        q += 8;
                    };
                    take(uncomp);
                    take(comp);
                    take(local);
                }
                k += 4 + len;
            }
            if (method != 0) {
                fail("entry '" + name + "' is compressed (method " + std::to_string(method) +
                     "); torch.save writes stored entries only");
            }
            if (comp != uncomp) fail("stored entry '" + name + "' has different compressed and uncompressed sizes");
            need(local, 30, "local header of '" + name + "'");
            if (rd32(d_ + local) != 0x04034b50) fail("bad local header signature for '" + name + "'");
            const uint64_t data = local + 30 + rd16(d_ + local + 26) + rd16(d_ + local + 28);
            need(data, uncomp, "data of '" + name + "'");
            if (data + uncomp > cd_offset) fail("data of '" + name + "' reaches into the central directory");
            spans.push_back({local, data + uncomp, name});
            if (!entries_.emplace(name, ZipEntry{d_ + data, static_cast<size_t>(uncomp)}).second) {
                fail("entry '" + name + "' appears twice");
            }
            order_.push_back(name);
            pos += 46 + static_cast<uint64_t>(name_len) + extra_len + comment_len;
        }
        if (entries_.empty()) fail("the archive is empty");
        std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
        for (size_t i = 1; i < spans.size(); ++i) {
            if (spans[i].begin < spans[i - 1].end) {
                fail("entries '" + spans[i - 1].name + "' (bytes " + std::to_string(spans[i - 1].begin) + " to " +
                     std::to_string(spans[i - 1].end) + ") and '" + spans[i].name + "' (from byte " +
                     std::to_string(spans[i].begin) + ") overlap");
            }
        }
    }

    const uint8_t* d_;
    size_t n_;
    std::string label_;
    std::map<std::string, ZipEntry> entries_;
    std::vector<std::string> order_;
};

// ---------------------------------------------------------------- pickle subset

struct StorageType {
    const char* name;
    SafetensorsDtype dtype;
};
constexpr StorageType kStorages[] = {
    {"FloatStorage", SafetensorsDtype::F32},   {"DoubleStorage", SafetensorsDtype::F64},
    {"HalfStorage", SafetensorsDtype::F16},    {"BFloat16Storage", SafetensorsDtype::BF16},
    {"LongStorage", SafetensorsDtype::I64},    {"IntStorage", SafetensorsDtype::I32},
    {"ShortStorage", SafetensorsDtype::I16},   {"CharStorage", SafetensorsDtype::I8},
    {"ByteStorage", SafetensorsDtype::U8},     {"BoolStorage", SafetensorsDtype::BOOL},
};

// Every value the pickle builds lives in one flat arena and refers to others by index: shared
// (memo) references and cycles cost nothing to hold, and teardown never recurses however deep the
// nesting.
using Ref = uint32_t;

struct Global {
    std::string module, name;
};
struct Storage {
    SafetensorsDtype dtype;
    const uint8_t* data;
    size_t bytes;
    std::string key;
};
// A tensor's view of its storage; non-contiguous ones are copied out when the result is built.
struct TensorRef {
    SafetensorsDtype dtype;
    std::vector<int64_t> shape, stride;
    const uint8_t* data;  // the storage at the tensor's offset
    size_t nbytes;
    bool contiguous;
};
struct None {};
struct Mark {};
struct List {
    std::vector<Ref> items;
};
struct Tuple {
    std::vector<Ref> items;
};
struct Dict {
    std::vector<std::pair<Ref, Ref>> items;
};

struct Value {
    std::variant<None, Mark, bool, int64_t, double, std::string, Global, Storage, TensorRef, List, Tuple, Dict> v;
};

const char* kind(const Value& x) {
    static const char* names[] = {"None", "mark", "bool", "int", "float", "str", "global", "storage", "tensor",
                                  "list", "tuple", "dict"};
    return names[x.v.index()];
}

class Unpickler {
public:
    Unpickler(const uint8_t* data, size_t size, const std::string& where,
              std::function<const ZipEntry*(const std::string&)> storage_entry)
        : d_(data), n_(size), where_(where), storage_entry_(std::move(storage_entry)) {}

    const Value& operator[](Ref r) const { return arena_[r]; }

    Ref run() {
        for (;;) {
            if (pos_ >= n_) fail("ends without STOP");
            const size_t at = pos_;
            const uint8_t op = d_[pos_++];
            switch (op) {
                case 0x80: {  // PROTO
                    const uint8_t v = byte();
                    if (v < 2 || v > 5) fail_at(at, "unsupported pickle protocol " + std::to_string(v));
                    break;
                }
                case 0x95: take(8); break;  // FRAME (protocol 4): a length hint
                case '}': push(make(Dict{})); break;
                case ']': push(make(List{})); break;
                case ')': push(make(Tuple{})); break;
                case '(': push(make(Mark{})); break;
                case 't': push(make(Tuple{pop_mark()})); break;
                case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
                    const size_t k = op - 0x84;
                    if (stack_.size() < k) fail_at(at, "stack underflow");
                    Tuple t;
                    t.items.assign(stack_.end() - static_cast<long>(k), stack_.end());
                    stack_.resize(stack_.size() - k);
                    for (const Ref x : t.items) no_mark(x, at);
                    push(make(std::move(t)));
                    break;
                }
                case 'X': {  // BINUNICODE
                    const uint32_t len = rd32(take(4));
                    push(make(std::string(reinterpret_cast<const char*>(take(len)), len)));
                    break;
                }
                case 0x8c: {  // SHORT_BINUNICODE
                    const uint8_t len = byte();
                    push(make(std::string(reinterpret_cast<const char*>(take(len)), len)));
                    break;
                }
                case 'J': push(make(static_cast<int64_t>(static_cast<int32_t>(rd32(take(4)))))); break;  // BININT
                case 'K': push(make(static_cast<int64_t>(byte()))); break;                                 // BININT1
                case 'M': push(make(static_cast<int64_t>(rd16(take(2))))); break;                          // BININT2
                case 0x8a: {  // LONG1
                    const uint8_t len = byte();
                    if (len > 8) fail_at(at, "integer of " + std::to_string(len) + " bytes is too large");
                    const uint8_t* p = take(len);
                    uint64_t u = 0;
                    for (size_t i = 0; i < len; ++i) u |= static_cast<uint64_t>(p[i]) << (8 * i);
                    if (len > 0 && len < 8 && (p[len - 1] & 0x80)) u |= ~uint64_t{0} << (8 * len);  // sign-extend
                    push(make(static_cast<int64_t>(u)));
                    break;
                }
                case 'G': {  // BINFLOAT, big-endian double
                    const uint8_t* p = take(8);
                    uint64_t u = 0;
                    for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
                    double x;
                    std::memcpy(&x, &u, 8);
                    push(make(x));
                    break;
                }
                case 0x88: push(make(true)); break;   // NEWTRUE
                case 0x89: push(make(false)); break;  // NEWFALSE
                case 'N': push(make(None{})); break;
                case 'c': {  // GLOBAL "module\nname\n"
                    const std::string module = line(at), name = line(at);
                    push(make(check_global(module, name, at)));
                    break;
                }
                case 0x93: {  // STACK_GLOBAL
                    const Ref name = pop(at), module = pop(at);
                    const auto* m = std::get_if<std::string>(&arena_[module].v);
                    const auto* n = std::get_if<std::string>(&arena_[name].v);
                    if (!m || !n) fail_at(at, "STACK_GLOBAL needs two strings");
                    push(make(check_global(*m, *n, at)));
                    break;
                }
                case 'R': {  // REDUCE
                    const Ref args = pop(at), callable = pop(at);
                    push(reduce(callable, args, at));
                    break;
                }
                case 'b': {  // BUILD: only an OrderedDict's attribute dict (state_dict `_metadata`), ignored
                    const Value& state = arena_[pop(at)];
                    const Value& obj = arena_[top(at)];
                    if (!std::holds_alternative<Dict>(obj.v) || !std::holds_alternative<Dict>(state.v)) {
                        fail_at(at, std::string("BUILD of a ") + kind(obj) + " with a " + kind(state) +
                                        " state is not supported (only dict attributes of an OrderedDict)");
                    }
                    break;
                }
                case 'Q': {  // BINPERSID
                    const Ref pid = pop(at);
                    push(persistent_load(pid, at));
                    break;
                }
                case 'q': memo_put(byte(), at); break;         // BINPUT
                case 'r': memo_put(rd32(take(4)), at); break;  // LONG_BINPUT
                case 0x94: memo_put(static_cast<uint32_t>(memo_.size()), at); break;  // MEMOIZE
                case 'h': push(memo_get(byte(), at)); break;           // BINGET
                case 'j': push(memo_get(rd32(take(4)), at)); break;    // LONG_BINGET
                case 's': {  // SETITEM
                    const Ref v = pop(at), k = pop(at);
                    dict_at(top(at), at).items.emplace_back(k, v);
                    break;
                }
                case 'u': {  // SETITEMS
                    auto items = pop_mark();
                    if (items.size() % 2) fail_at(at, "SETITEMS with an odd number of items");
                    Dict& dict = dict_at(top(at), at);
                    for (size_t i = 0; i < items.size(); i += 2) dict.items.emplace_back(items[i], items[i + 1]);
                    break;
                }
                case 'a': {  // APPEND
                    const Ref v = pop(at);
                    list_at(top(at), at).items.push_back(v);
                    break;
                }
                case 'e': {  // APPENDS
                    auto items = pop_mark();
                    auto& list = list_at(top(at), at);
                    list.items.insert(list.items.end(), items.begin(), items.end());
                    break;
                }
                case '.': {  // STOP
                    const Ref result = pop(at);
                    if (!stack_.empty()) fail_at(at, "STOP with " + std::to_string(stack_.size()) + " values left on the stack");
                    return result;
                }
                default: {
                    char hex[8];
                    std::snprintf(hex, sizeof(hex), "0x%02x", op);
                    fail_at(at, std::string("unsupported pickle opcode ") + hex);
                }
            }
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::Format, where_ + ": " + what);
    }
    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        throw Error(ErrorKind::Format, where_ + " byte " + std::to_string(at) + ": " + what);
    }

    const uint8_t* take(size_t len) {
        if (len > n_ - pos_) fail("truncated pickle (needs " + std::to_string(len) + " bytes at byte " + std::to_string(pos_) + ")");
        const uint8_t* p = d_ + pos_;
        pos_ += len;
        return p;
    }
    uint8_t byte() { return *take(1); }
    std::string line(size_t at) {
        const size_t start = pos_;
        while (pos_ < n_ && d_[pos_] != '\n') ++pos_;
        if (pos_ >= n_) fail_at(at, "truncated GLOBAL");
        return std::string(reinterpret_cast<const char*>(d_ + start), pos_++ - start);
    }

    // Every opcode adds at most one value; the cap bounds the arena's memory (about 90 bytes a value)
    // whatever the pickle's size (real checkpoints build some tens per tensor).
    template <class T>
    Ref make(T x) {
        if (arena_.size() >= kMaxValues) fail("the pickle builds more than " + std::to_string(kMaxValues) + " values");
        arena_.push_back(Value{std::move(x)});
        return static_cast<Ref>(arena_.size() - 1);
    }
    void push(Ref v) {
        if (stack_.size() >= kMaxStack) fail("pickle stack deeper than " + std::to_string(kMaxStack));
        stack_.push_back(v);
    }
    void no_mark(Ref v, size_t at) const {
        if (std::holds_alternative<Mark>(arena_[v].v)) fail_at(at, "unexpected MARK");
    }
    Ref pop(size_t at) {
        if (stack_.empty()) fail_at(at, "stack underflow");
        const Ref v = stack_.back();
        stack_.pop_back();
        no_mark(v, at);
        return v;
    }
    Ref top(size_t at) const {
        if (stack_.empty()) fail_at(at, "stack underflow");
        no_mark(stack_.back(), at);
        return stack_.back();
    }
    std::vector<Ref> pop_mark() {
        for (size_t i = stack_.size(); i-- > 0;) {
            if (std::holds_alternative<Mark>(arena_[stack_[i]].v)) {
                std::vector<Ref> items(stack_.begin() + static_cast<long>(i) + 1, stack_.end());
                stack_.resize(i);
                return items;
            }
        }
        fail("no MARK on the stack (at byte " + std::to_string(pos_ - 1) + ")");
    }
    Dict& dict_at(Ref v, size_t at) {
        auto* d = std::get_if<Dict>(&arena_[v].v);
        if (!d) fail_at(at, std::string("setting an item of a ") + kind(arena_[v]) + " (only dicts)");
        return *d;
    }
    List& list_at(Ref v, size_t at) {
        auto* l = std::get_if<List>(&arena_[v].v);
        if (!l) fail_at(at, std::string("appending to a ") + kind(arena_[v]) + " (only lists)");
        return *l;
    }
    void memo_put(uint32_t key, size_t at) {
        if (memo_.size() >= kMaxMemo && !memo_.count(key)) fail_at(at, "more than " + std::to_string(kMaxMemo) + " memo entries");
        memo_[key] = top(at);
    }
    Ref memo_get(uint32_t key, size_t at) {
        const auto it = memo_.find(key);
        if (it == memo_.end()) fail_at(at, "memo key " + std::to_string(key) + " was never stored");
        return it->second;
    }

    Global check_global(const std::string& module, const std::string& name, size_t at) {
        const bool ok = (module == "collections" && name == "OrderedDict") ||
                        (module == "torch._utils" && name == "_rebuild_tensor_v2") ||
                        (module == "torch" && storage_dtype(name) != nullptr);
        if (!ok) {
            fail_at(at, "refusing global '" + module + "." + name +
                            "' (only tensors, dicts, lists, numbers and strings may be loaded)");
        }
        return {module, name};
    }
    static const SafetensorsDtype* storage_dtype(const std::string& name) {
        for (const auto& s : kStorages)
            if (name == s.name) return &s.dtype;
        return nullptr;
    }

    int64_t as_int(Ref v, bool& ok) const {
        if (const auto* i = std::get_if<int64_t>(&arena_[v].v)) return *i;
        ok = false;
        return 0;
    }
    std::vector<int64_t> int_tuple(Ref v, const std::string& what, size_t at) const {
        const auto* t = std::get_if<Tuple>(&arena_[v].v);
        if (!t) fail_at(at, what + " is a " + kind(arena_[v]) + ", expected a tuple of integers");
        std::vector<int64_t> out;
        for (const Ref x : t->items) {
            bool ok = true;
            out.push_back(as_int(x, ok));
            if (!ok) fail_at(at, what + " holds a " + kind(arena_[x]) + ", expected integers");
        }
        return out;
    }

    Ref persistent_load(Ref pid, size_t at) {
        const auto* t = std::get_if<Tuple>(&arena_[pid].v);
        if (!t || t->items.size() != 5) fail_at(at, "persistent id is not a 5-tuple ('storage', type, key, location, numel)");
        const auto* tag = std::get_if<std::string>(&arena_[t->items[0]].v);
        const auto* type = std::get_if<Global>(&arena_[t->items[1]].v);
        const auto* key = std::get_if<std::string>(&arena_[t->items[2]].v);
        bool ok = true;
        const int64_t numel = as_int(t->items[4], ok);
        if (!tag || *tag != "storage" || !type || !key || !ok || numel < 0) {
            fail_at(at, "malformed storage persistent id");
        }
        const SafetensorsDtype* dtype = type->module == "torch" ? storage_dtype(type->name) : nullptr;
        if (!dtype) fail_at(at, "persistent id names '" + type->module + "." + type->name + "', not a storage type");
        const ZipEntry* entry = storage_entry_(*key);
        if (!entry) fail_at(at, "storage '" + *key + "' has no data entry in the archive");
        const size_t elem = safetensors_dtype_size(*dtype);
        if (static_cast<uint64_t>(numel) > entry->size / elem) {
            fail_at(at, "storage '" + *key + "' claims " + std::to_string(numel) + " elements but its entry holds " +
                            std::to_string(entry->size) + " bytes");
        }
        return make(Storage{*dtype, entry->data, static_cast<size_t>(numel) * elem, *key});
    }

    Ref reduce(Ref callable, Ref args, size_t at) {
        const auto* g = std::get_if<Global>(&arena_[callable].v);
        const auto* a = std::get_if<Tuple>(&arena_[args].v);
        if (!g) fail_at(at, std::string("REDUCE of a ") + kind(arena_[callable]) + " (only allowed globals can be called)");
        if (!a) fail_at(at, std::string("REDUCE arguments are a ") + kind(arena_[args]) + ", expected a tuple");
        if (g->module == "collections") {
            if (!a->items.empty()) fail_at(at, "OrderedDict(...) with arguments is not supported");
            return make(Dict{});
        }
        if (g->module == "torch._utils") return make(rebuild_tensor(*a, at));
        fail_at(at, "'" + g->module + "." + g->name + "' cannot be called");
    }

    TensorRef rebuild_tensor(const Tuple& a, size_t at) const {
        // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
        if (a.items.size() != 6 && a.items.size() != 7) fail_at(at, "_rebuild_tensor_v2 expects 6 or 7 arguments");
        const auto* s = std::get_if<Storage>(&arena_[a.items[0]].v);
        if (!s) fail_at(at, std::string("_rebuild_tensor_v2 storage is a ") + kind(arena_[a.items[0]]));
        bool ok = true;
        const int64_t offset = as_int(a.items[1], ok);
        if (!ok || offset < 0) fail_at(at, "tensor storage offset must be a non-negative integer");
        const auto shape = int_tuple(a.items[2], "tensor size", at);
        const auto stride = int_tuple(a.items[3], "tensor stride", at);
        if (shape.size() != stride.size()) fail_at(at, "tensor size and stride have different lengths");
        if (shape.size() > 8) fail_at(at, "tensor has more than 8 dimensions");
        const auto* hooks = std::get_if<Dict>(&arena_[a.items[5]].v);
        if (!hooks || !hooks->items.empty()) fail_at(at, "tensor with backward hooks is not supported");

        const size_t elem = safetensors_dtype_size(s->dtype);
        const uint64_t storage_numel = s->bytes / elem;
        uint64_t numel = 1, last = static_cast<uint64_t>(offset);
        bool contiguous = true;
        uint64_t expect = 1;
        for (size_t i = shape.size(); i-- > 0;) {
            if (shape[i] < 0 || stride[i] < 0) fail_at(at, "tensor size/stride must not be negative");
            if (shape[i] == 0) numel = 0;
            if (numel && static_cast<uint64_t>(shape[i]) > (uint64_t{1} << 40) / numel) fail_at(at, "tensor is too large");
            if (numel) numel *= static_cast<uint64_t>(shape[i]);
            if (shape[i] != 1 && static_cast<uint64_t>(stride[i]) != expect) contiguous = false;
            expect *= static_cast<uint64_t>(shape[i]);
        }
        if (numel) {
            for (size_t i = 0; i < shape.size(); ++i) {
                const uint64_t span = static_cast<uint64_t>(shape[i] - 1) * static_cast<uint64_t>(stride[i]);
                if (stride[i] != 0 && span / static_cast<uint64_t>(stride[i]) != static_cast<uint64_t>(shape[i] - 1)) {
                    fail_at(at, "tensor strides overflow");
                }
                last += span;
                if (last > (uint64_t{1} << 50)) fail_at(at, "tensor strides overflow");
            }
            if (last >= storage_numel) {
                fail_at(at, "tensor reaches element " + std::to_string(last) + " of storage '" + s->key + "', which holds " +
                                std::to_string(storage_numel));
            }
        }
        // Non-overlapping elements never outnumber their storage; more means an expanded view
        // (stride 0), which would have to be materialised.
        if (!contiguous && numel > storage_numel) {
            fail_at(at, "tensor of " + std::to_string(numel) + " elements views only " + std::to_string(storage_numel) +
                            " stored elements (an expanded view); save it with .contiguous()");
        }
        const size_t nbytes = static_cast<size_t>(numel) * elem;
        return TensorRef{s->dtype, shape, stride, s->data + static_cast<size_t>(offset) * elem, nbytes,
                         contiguous || numel == 0};
    }

    static constexpr size_t kMaxStack = 1 << 20;
    static constexpr size_t kMaxMemo = 1 << 20;
    static constexpr size_t kMaxValues = 1 << 20;

    const uint8_t* d_;
    size_t n_;
    size_t pos_ = 0;
    std::string where_;
    std::function<const ZipEntry*(const std::string&)> storage_entry_;
    std::vector<Value> arena_;
    std::vector<Ref> stack_;
    std::map<uint32_t, Ref> memo_;
};

std::string number_text(double x) {
    std::ostringstream os;
    os.precision(17);
    os << x;
    return os.str();
}

// A key as messages show it: crafted keys may be megabytes long.
std::string shown(const std::string& key) { return key.size() <= 200 ? key : key.substr(0, 200) + "..."; }

struct Output {
    std::vector<SafetensorsTensor>& tensors;
    std::vector<std::vector<uint8_t>>& owned;
    std::map<std::string, std::string>& values;
    std::map<std::string, size_t>& index;
};

// Turns the pickled object into named tensors and values. Memo references let a few bytes of pickle
// name one object any number of times (a list of 100 references to a list of 100 references ...), so
// the walk is metered: it may visit kWalkPerByte values and key bytes per pickle byte (real
// checkpoints need about one), and copy out at most the archive's size of non-contiguous tensor
// data. Past either budget it stops, after work proportional to the input.
class Flattener {
public:
    Flattener(const Unpickler& up, Output out, const std::string& label, size_t pickle_bytes, size_t archive_bytes)
        : up_(up), out_(out), label_(label), walk_left_(kWalkPerByte * pickle_bytes + kWalkFloor),
          walk_budget_(walk_left_), copy_left_(archive_bytes), archive_bytes_(archive_bytes) {}

    void run(Ref root) { visit(root, "", 0); }

private:
    static constexpr size_t kWalkPerByte = 16;
    static constexpr size_t kWalkFloor = size_t{1} << 20;
    static constexpr int kMaxDepth = 16;

    [[noreturn]] void fail(const std::string& what) const { throw Error(ErrorKind::Format, label_ + ": " + what); }

    void charge(size_t cost, const std::string& key) {
        if (cost > walk_left_) {
            fail("the pickled object expands to more than " + std::to_string(walk_budget_) +
                 " values and key bytes (memo references fanning out?) at '" + shown(key) + "'");
        }
        walk_left_ -= cost;
    }

    void visit(Ref ref, const std::string& key, int depth) {
        if (depth > kMaxDepth) fail("objects nested deeper than " + std::to_string(kMaxDepth) + " levels at '" + shown(key) + "'");
        charge(1 + key.size(), key);
        const Value& v = up_[ref];
        auto child = [&](const std::string& k) { return key.empty() ? k : key + "." + k; };
        if (const auto* d = std::get_if<Dict>(&v.v)) {
            for (const auto& [k, x] : d->items) {
                std::string name;
                if (const auto* s = std::get_if<std::string>(&up_[k].v)) name = *s;
                else if (const auto* i = std::get_if<int64_t>(&up_[k].v)) name = std::to_string(*i);
                else fail(std::string("dict key of type ") + kind(up_[k]) + " at '" + shown(key) + "'");
                visit(x, child(name), depth + 1);
            }
            return;
        }
        if (key.empty()) fail(std::string("the pickled object is a ") + kind(v) + ", expected a dict");
        if (const auto* l = std::get_if<List>(&v.v)) {
            for (size_t i = 0; i < l->items.size(); ++i) visit(l->items[i], child(std::to_string(i)), depth + 1);
        } else if (const auto* t = std::get_if<Tuple>(&v.v)) {
            for (size_t i = 0; i < t->items.size(); ++i) visit(t->items[i], child(std::to_string(i)), depth + 1);
        } else if (const auto* tensor = std::get_if<TensorRef>(&v.v)) {
            add_tensor(ref, *tensor, key);
        } else if (std::holds_alternative<None>(v.v)) {
            out_.values[key] = "None";
        } else if (const auto* b = std::get_if<bool>(&v.v)) {
            out_.values[key] = *b ? "True" : "False";
        } else if (const auto* i = std::get_if<int64_t>(&v.v)) {
            out_.values[key] = std::to_string(*i);
        } else if (const auto* x = std::get_if<double>(&v.v)) {
            out_.values[key] = number_text(*x);
        } else if (const auto* s = std::get_if<std::string>(&v.v)) {
            charge(s->size(), key);
            out_.values[key] = *s;
        } else {
            fail(std::string("value of type ") + kind(v) + " at '" + shown(key) + "' is not supported");
        }
    }

    void add_tensor(Ref ref, const TensorRef& t, const std::string& key) {
        if (!out_.index.emplace(key, out_.tensors.size()).second) fail("key '" + shown(key) + "' appears twice");
        SafetensorsTensor out;
        out.name = key;
        out.dtype = t.dtype;
        out.shape = t.shape;
        out.nbytes = t.nbytes;
        out.data = t.contiguous ? t.data : copy_of(ref, t, key);
        out_.tensors.push_back(std::move(out));
    }

    // The row-major copy of a non-contiguous tensor, made once however often the memo names it.
    const uint8_t* copy_of(Ref ref, const TensorRef& t, const std::string& key) {
        const auto [it, fresh] = copies_.emplace(ref, nullptr);
        if (!fresh) return it->second;
        if (t.nbytes > copy_left_) {
            fail("non-contiguous tensors would copy out more than the archive's " + std::to_string(archive_bytes_) +
                 " bytes (views overlapping their storage many times?) at '" + shown(key) + "'");
        }
        copy_left_ -= t.nbytes;
        const size_t elem = safetensors_dtype_size(t.dtype);
        std::vector<uint8_t> bytes(t.nbytes);
        std::vector<int64_t> idx(t.shape.size(), 0);
        for (size_t n = 0; n < t.nbytes / elem; ++n) {
            uint64_t src = 0;
            for (size_t i = 0; i < t.shape.size(); ++i) src += static_cast<uint64_t>(idx[i] * t.stride[i]);
            std::memcpy(bytes.data() + n * elem, t.data + src * elem, elem);
            for (size_t i = t.shape.size(); i-- > 0;) {
                if (++idx[i] < t.shape[i]) break;
                idx[i] = 0;
            }
        }
        // owned holds vectors: their heap buffers survive the outer vector's growth.
        out_.owned.push_back(std::move(bytes));
        return it->second = out_.owned.back().data();
    }

    const Unpickler& up_;
    Output out_;
    const std::string& label_;
    size_t walk_left_, walk_budget_, copy_left_, archive_bytes_;
    std::map<Ref, const uint8_t*> copies_;
};

}  // namespace

TorchCheckpoint::TorchCheckpoint(const std::string& path) : map_(std::make_unique<MappedFile>(path)), label_(path) {
    parse(map_->data(), map_->size());
}

TorchCheckpoint::TorchCheckpoint(const uint8_t* data, size_t size, const std::string& label) : label_(label) {
    parse(data, size);
}

TorchCheckpoint::~TorchCheckpoint() = default;

const SafetensorsTensor* TorchCheckpoint::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

void TorchCheckpoint::parse(const uint8_t* data, size_t size) {
    const ZipReader zip(data, size, label_);
    // Every entry lives under one top-level folder (`archive/`, or the file's stem).
    const std::string& first = zip.order().front();
    const size_t slash = first.find('/');
    if (slash == std::string::npos || slash == 0) {
        throw Error(ErrorKind::Format, label_ + ": not a PyTorch zip checkpoint: entry '" + first + "' is not inside a folder");
    }
    const std::string stem = first.substr(0, slash + 1);
    const auto entry = [&](const std::string& name) -> const ZipEntry* {
        const auto it = zip.entries().find(stem + name);
        return it == zip.entries().end() ? nullptr : &it->second;
    };
    const ZipEntry* pkl = entry("data.pkl");
    if (!pkl) throw Error(ErrorKind::Format, label_ + ": not a PyTorch zip checkpoint: no '" + stem + "data.pkl' entry");
    if (const ZipEntry* order = entry("byteorder")) {
        const std::string bo(reinterpret_cast<const char*>(order->data), order->size);
        if (bo != "little") {
            throw Error(ErrorKind::Unsupported, label_ + ": storages are stored in '" + bo + "' byte order (only little-endian is supported)");
        }
    }

    Unpickler up(pkl->data, pkl->size, label_ + ": " + stem + "data.pkl",
                 [&](const std::string& key) { return entry("data/" + key); });
    const Ref root = up.run();
    Flattener(up, {tensors_, owned_, values_, index_}, label_, pkl->size, size).run(root);
}

}  // namespace talkbox
