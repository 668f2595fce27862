#include "hub/sha256.h"

#include <openssl/evp.h>

#include "talkbox/error.h"

namespace talkbox::hub {

Digest::Digest(Kind kind) : name_(kind == Kind::Sha1 ? "SHA-1" : "SHA-256"), ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, kind == Kind::Sha1 ? EVP_sha1() : EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(ctx_);
        throw Error(ErrorKind::Internal, std::string("cannot initialise ") + name_ + " (libcrypto)");
    }
}

Digest::~Digest() { EVP_MD_CTX_free(ctx_); }

void Digest::update(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_, data, size) != 1) throw Error(ErrorKind::Internal, std::string(name_) + " update failed (libcrypto)");
}

std::string Digest::hex_digest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx_, digest, &n) != 1) throw Error(ErrorKind::Internal, std::string(name_) + " final failed (libcrypto)");
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

std::string git_blob_header(uint64_t size) { return "blob " + std::to_string(size) + std::string(1, '\0'); }

}  // namespace talkbox::hub
