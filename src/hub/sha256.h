// Incremental SHA-256, used to check downloads against the hub's LFS hashes. Backed by OpenSSL's
// libcrypto rather than our own code: it uses the CPU's SHA extensions (`openssl speed -evp sha256`:
// 1.1 GB/s on the development machine), which matters for multi-gigabyte checkpoints, and libcurl
// loads it anyway.
#pragma once

#include <cstddef>
#include <string>

struct evp_md_ctx_st;

namespace talkbox::hub {

class Sha256 {
public:
    Sha256();  // throws Error (Internal) when libcrypto cannot allocate a context
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, size_t size);
    std::string hex_digest();  // lower-case hex; call once, after the last update()

private:
    evp_md_ctx_st* ctx_;
};

}  // namespace talkbox::hub
