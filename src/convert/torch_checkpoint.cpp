#include "convert/torch_checkpoint.h"

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
        uint64_t pos = cd_offset;
        for (uint64_t i = 0; i < count; ++i) {
            need(pos, 46, "central directory entry " + std::to_string(i));
            const uint8_t* c = d_ + pos;
            if (rd32(c) != 0x02014b50) fail("bad central directory signature at byte " + std::to_string(pos));
            const uint16_t method = rd16(c + 10);
            uint64_t comp = rd32(c + 20), uncomp = rd32(c + 24);
            const uint16_t name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
            uint64_t local = rd32(c + 42);
            need(pos + 46, static_cast<uint64_t>(name_len) + extra_len + comment_len, "central directory entry name");
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
            if (!entries_.emplace(name, ZipEntry{d_ + data, static_cast<size_t>(uncomp)}).second) {
                fail("entry '" + name + "' appears twice");
            }
            order_.push_back(name);
            pos += 46 + static_cast<uint64_t>(name_len) + extra_len + comment_len;
        }
        if (entries_.empty()) fail("the archive is empty");
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

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Global {
    std::string module, name;
};
struct Storage {
    SafetensorsDtype dtype;
    const uint8_t* data;
    size_t bytes;
    std::string key;
};
struct TensorRef {
    SafetensorsDtype dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;  // contiguous copy (or empty when `view` is set)
    const uint8_t* view = nullptr;
    size_t nbytes = 0;
};
struct None {};
struct Mark {};
struct List {
    std::vector<ValuePtr> items;
};
struct Tuple {
    std::vector<ValuePtr> items;
};
struct Dict {
    std::vector<std::pair<ValuePtr, ValuePtr>> items;
};

struct Value {
    std::variant<None, Mark, bool, int64_t, double, std::string, Global, Storage, TensorRef, List, Tuple, Dict> v;
};

template <class T>
ValuePtr make(T x) {
    auto p = std::make_shared<Value>();
    p->v = std::move(x);
    return p;
}

const char* kind(const ValuePtr& p) {
    static const char* names[] = {"None", "mark", "bool", "int", "float", "str", "global", "storage", "tensor",
                                  "list", "tuple", "dict"};
    return names[p->v.index()];
}

class Unpickler {
public:
    Unpickler(const uint8_t* data, size_t size, const std::string& where,
              std::function<const ZipEntry*(const std::string&)> storage_entry)
        : d_(data), n_(size), where_(where), storage_entry_(std::move(storage_entry)) {}

    ~Unpickler() {
        // Containers reachable twice (through the memo) may form cycles: empty them all.
        for (auto& [k, v] : memo_) clear(v);
        for (auto& v : stack_) clear(v);
    }

    ValuePtr run() {
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
                    for (const auto& x : t.items) no_mark(x, at);
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
                    const ValuePtr name = pop(at), module = pop(at);
                    const auto* m = std::get_if<std::string>(&module->v);
                    const auto* n = std::get_if<std::string>(&name->v);
                    if (!m || !n) fail_at(at, "STACK_GLOBAL needs two strings");
                    push(make(check_global(*m, *n, at)));
                    break;
                }
                case 'R': {  // REDUCE
                    const ValuePtr args = pop(at), callable = pop(at);
                    push(reduce(callable, args, at));
                    break;
                }
                case 'b': {  // BUILD: only an OrderedDict's attribute dict (state_dict `_metadata`), ignored
                    const ValuePtr state = pop(at);
                    const ValuePtr& obj = top(at);
                    if (!std::holds_alternative<Dict>(obj->v) || !std::holds_alternative<Dict>(state->v)) {
                        fail_at(at, std::string("BUILD of a ") + kind(obj) + " with a " + kind(state) +
                                        " state is not supported (only dict attributes of an OrderedDict)");
                    }
                    break;
                }
                case 'Q': {  // BINPERSID
                    const ValuePtr pid = pop(at);
                    push(persistent_load(pid, at));
                    break;
                }
                case 'q': memo_put(byte(), at); break;         // BINPUT
                case 'r': memo_put(rd32(take(4)), at); break;  // LONG_BINPUT
                case 0x94: memo_put(static_cast<uint32_t>(memo_.size()), at); break;  // MEMOIZE
                case 'h': push(memo_get(byte(), at)); break;           // BINGET
                case 'j': push(memo_get(rd32(take(4)), at)); break;    // LONG_BINGET
                case 's': {  // SETITEM
                    const ValuePtr v = pop(at), k = pop(at);
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
                    const ValuePtr v = pop(at);
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
                    const ValuePtr result = pop(at);
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

    void push(ValuePtr v) {
        if (stack_.size() >= kMaxStack) fail("pickle stack deeper than " + std::to_string(kMaxStack));
        stack_.push_back(std::move(v));
    }
    void no_mark(const ValuePtr& v, size_t at) const {
        if (std::holds_alternative<Mark>(v->v)) fail_at(at, "unexpected MARK");
    }
    ValuePtr pop(size_t at) {
        if (stack_.empty()) fail_at(at, "stack underflow");
        ValuePtr v = std::move(stack_.back());
        stack_.pop_back();
        no_mark(v, at);
        return v;
    }
    const ValuePtr& top(size_t at) const {
        if (stack_.empty()) fail_at(at, "stack underflow");
        no_mark(stack_.back(), at);
        return stack_.back();
    }
    std::vector<ValuePtr> pop_mark() {
        for (size_t i = stack_.size(); i-- > 0;) {
            if (std::holds_alternative<Mark>(stack_[i]->v)) {
                std::vector<ValuePtr> items(stack_.begin() + static_cast<long>(i) + 1, stack_.end());
                stack_.resize(i);
                return items;
            }
        }
        fail("no MARK on the stack (at byte " + std::to_string(pos_ - 1) + ")");
    }
    Dict& dict_at(const ValuePtr& v, size_t at) {
        auto* d = std::get_if<Dict>(&v->v);
        if (!d) fail_at(at, std::string("setting an item of a ") + kind(v) + " (only dicts)");
        return *d;
    }
    List& list_at(const ValuePtr& v, size_t at) {
        auto* l = std::get_if<List>(&v->v);
        if (!l) fail_at(at, std::string("appending to a ") + kind(v) + " (only lists)");
        return *l;
    }
    void memo_put(uint32_t key, size_t at) {
        if (memo_.size() >= kMaxMemo && !memo_.count(key)) fail_at(at, "more than " + std::to_string(kMaxMemo) + " memo entries");
        memo_[key] = top(at);
    }
    ValuePtr memo_get(uint32_t key, size_t at) {
        const auto it = memo_.find(key);
        if (it == memo_.end()) fail_at(at, "memo key " + std::to_string(key) + " was never stored");
        return it->second;
    }
    static void clear(const ValuePtr& v) {
        if (auto* l = std::get_if<List>(&v->v)) l->items.clear();
        if (auto* t = std::get_if<Tuple>(&v->v)) t->items.clear();
        if (auto* d = std::get_if<Dict>(&v->v)) d->items.clear();
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

    static int64_t as_int(const ValuePtr& v, bool& ok) {
        if (const auto* i = std::get_if<int64_t>(&v->v)) return *i;
        ok = false;
        return 0;
    }
    std::vector<int64_t> int_tuple(const ValuePtr& v, const std::string& what, size_t at) {
        const auto* t = std::get_if<Tuple>(&v->v);
        if (!t) fail_at(at, what + " is a " + kind(v) + ", expected a tuple of integers");
        std::vector<int64_t> out;
        for (const auto& x : t->items) {
            bool ok = true;
            out.push_back(as_int(x, ok));
            if (!ok) fail_at(at, what + " holds a " + kind(x) + ", expected integers");
        }
        return out;
    }

    ValuePtr persistent_load(const ValuePtr& pid, size_t at) {
        const auto* t = std::get_if<Tuple>(&pid->v);
        if (!t || t->items.size() != 5) fail_at(at, "persistent id is not a 5-tuple ('storage', type, key, location, numel)");
        const auto* tag = std::get_if<std::string>(&t->items[0]->v);
        const auto* type = std::get_if<Global>(&t->items[1]->v);
        const auto* key = std::get_if<std::string>(&t->items[2]->v);
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

    ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args, size_t at) {
        const auto* g = std::get_if<Global>(&callable->v);
        const auto* a = std::get_if<Tuple>(&args->v);
        if (!g) fail_at(at, std::string("REDUCE of a ") + kind(callable) + " (only allowed globals can be called)");
        if (!a) fail_at(at, std::string("REDUCE arguments are a ") + kind(args) + ", expected a tuple");
        if (g->module == "collections") {
            if (!a->items.empty()) fail_at(at, "OrderedDict(...) with arguments is not supported");
            return make(Dict{});
        }
        if (g->module == "torch._utils") return rebuild_tensor(*a, at);
        fail_at(at, "'" + g->module + "." + g->name + "' cannot be called");
    }

    ValuePtr rebuild_tensor(const Tuple& a, size_t at) {
        // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
        if (a.items.size() != 6 && a.items.size() != 7) fail_at(at, "_rebuild_tensor_v2 expects 6 or 7 arguments");
        const auto* s = std::get_if<Storage>(&a.items[0]->v);
        if (!s) fail_at(at, std::string("_rebuild_tensor_v2 storage is a ") + kind(a.items[0]));
        bool ok = true;
        const int64_t offset = as_int(a.items[1], ok);
        if (!ok || offset < 0) fail_at(at, "tensor storage offset must be a non-negative integer");
        const auto shape = int_tuple(a.items[2], "tensor size", at);
        const auto stride = int_tuple(a.items[3], "tensor stride", at);
        if (shape.size() != stride.size()) fail_at(at, "tensor size and stride have different lengths");
        if (shape.size() > 8) fail_at(at, "tensor has more than 8 dimensions");
        const auto* hooks = std::get_if<Dict>(&a.items[5]->v);
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
        TensorRef t;
        t.dtype = s->dtype;
        t.shape = shape;
        t.nbytes = static_cast<size_t>(numel) * elem;
        if (contiguous || numel == 0) {
            t.view = s->data + static_cast<size_t>(offset) * elem;
        } else {
            t.bytes.resize(t.nbytes);
            std::vector<int64_t> idx(shape.size(), 0);
            for (uint64_t n = 0; n < numel; ++n) {
                uint64_t src = static_cast<uint64_t>(offset);
                for (size_t i = 0; i < shape.size(); ++i) src += static_cast<uint64_t>(idx[i] * stride[i]);
                std::memcpy(t.bytes.data() + n * elem, s->data + src * elem, elem);
                for (size_t i = shape.size(); i-- > 0;) {
                    if (++idx[i] < shape[i]) break;
                    idx[i] = 0;
                }
            }
        }
        return make(std::move(t));
    }

    static constexpr size_t kMaxStack = 1 << 20;
    static constexpr size_t kMaxMemo = 1 << 22;

    const uint8_t* d_;
    size_t n_;
    size_t pos_ = 0;
    std::string where_;
    std::function<const ZipEntry*(const std::string&)> storage_entry_;
    std::vector<ValuePtr> stack_;
    std::map<uint32_t, ValuePtr> memo_;
};

std::string number_text(double x) {
    std::ostringstream os;
    os.precision(17);
    os << x;
    return os.str();
}

struct FlattenState {
    std::vector<SafetensorsTensor>* tensors;
    std::vector<std::vector<uint8_t>>* owned;
    std::map<std::string, std::string>* values;
    std::map<std::string, size_t>* index;
    std::string label;
};

void add_tensor(FlattenState& st, const std::string& key, TensorRef& t) {
    SafetensorsTensor out;
    out.name = key;
    out.dtype = t.dtype;
    out.shape = t.shape;
    out.nbytes = t.nbytes;
    if (t.view) {
        out.data = t.view;
    } else {
        st.owned->push_back(t.bytes);  // a tensor may be reached twice (memo): copy, keep the source intact
        out.data = st.owned->back().data();
    }
    if (!st.index->emplace(key, st.tensors->size()).second) {
        throw Error(ErrorKind::Format, st.label + ": key '" + key + "' appears twice");
    }
    st.tensors->push_back(std::move(out));
}

void flatten(FlattenState& st, const ValuePtr& v, const std::string& key, int depth) {
    if (depth > 16) throw Error(ErrorKind::Format, st.label + ": objects nested deeper than 16 levels at '" + key + "'");
    auto child = [&](const std::string& k) { return key.empty() ? k : key + "." + k; };
    if (auto* d = std::get_if<Dict>(&v->v)) {
        for (auto& [k, x] : d->items) {
            std::string name;
            if (const auto* s = std::get_if<std::string>(&k->v)) name = *s;
            else if (const auto* i = std::get_if<int64_t>(&k->v)) name = std::to_string(*i);
            else throw Error(ErrorKind::Format, st.label + ": dict key of type " + kind(k) + " at '" + key + "'");
            flatten(st, x, child(name), depth + 1);
        }
        return;
    }
    if (key.empty()) throw Error(ErrorKind::Format, st.label + std::string(": the pickled object is a ") + kind(v) + ", expected a dict");
    if (auto* l = std::get_if<List>(&v->v)) {
        for (size_t i = 0; i < l->items.size(); ++i) flatten(st, l->items[i], child(std::to_string(i)), depth + 1);
    } else if (auto* t = std::get_if<Tuple>(&v->v)) {
        for (size_t i = 0; i < t->items.size(); ++i) flatten(st, t->items[i], child(std::to_string(i)), depth + 1);
    } else if (auto* tensor = std::get_if<TensorRef>(&v->v)) {
        add_tensor(st, key, *tensor);
    } else if (std::holds_alternative<None>(v->v)) {
        (*st.values)[key] = "None";
    } else if (const auto* b = std::get_if<bool>(&v->v)) {
        (*st.values)[key] = *b ? "True" : "False";
    } else if (const auto* i = std::get_if<int64_t>(&v->v)) {
        (*st.values)[key] = std::to_string(*i);
    } else if (const auto* x = std::get_if<double>(&v->v)) {
        (*st.values)[key] = number_text(*x);
    } else if (const auto* s = std::get_if<std::string>(&v->v)) {
        (*st.values)[key] = *s;
    } else {
        throw Error(ErrorKind::Format, st.label + ": value of type " + kind(v) + " at '" + key + "' is not supported");
    }
}

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

    // owned_ holds vectors: their heap buffers (what tensors point at) survive the outer vector's growth.
    {
        Unpickler up(pkl->data, pkl->size, label_ + ": " + stem + "data.pkl",
                     [&](const std::string& key) { return entry("data/" + key); });
        const ValuePtr root = up.run();
        FlattenState st{&tensors_, &owned_, &values_, &index_, label_};
        flatten(st, root, "", 0);
    }
}

}  // namespace talkbox
