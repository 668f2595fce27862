// Incremental SHA-256 and SHA-1, used to check downloads against what the hub lists: LFS files by
// their sha256, files stored in git by their git blob id (SHA-1). Backed by OpenSSL's libcrypto
// rather than our own code: it uses the CPU's SHA extensions (`openssl speed -evp sha256`:
// 1.1 GB/s on the development machine), which matters for multi-gigabyte checkpoints, and libcurl
// loads it anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct evp_md_ctx_st;

namespace talkbox::hub {

class Digest {
public:
    enum class Kind { Sha1, Sha256 };
    explicit Digest(Kind kind);  // throws Error (Internal) when libcrypto cannot allocate a context
    ~Digest();
    Digest(const Digest&) = delete;
    Digest& operator=(const Digest&) = delete;

    void update(const void* data, size_t size);
    std::string hex_digest();  // lower-case hex; call once, after the last update()

private:
    const char* name_;
    evp_md_ctx_st* ctx_;
};

// What git hashes before a file's bytes to name it: "blob <size>\0" (the blob id is the SHA-1 of
// this header followed by the content).
std::string git_blob_header(uint64_t size);

}  // namespace talkbox::hub
