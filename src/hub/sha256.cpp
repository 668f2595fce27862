#include "hub/sha256.h"

#include <openssl/evp.h>

#include "talkbox/error.h"

namespace talkbox::hub {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(ctx_);
        throw Error(ErrorKind::Internal, "cannot initialise SHA-256 (libcrypto)");
    }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_, data, size) != 1) throw Error(ErrorKind::Internal, "SHA-256 update failed (libcrypto)");
}

std::string Sha256::hex_digest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx_, digest, &n) != 1) throw Error(ErrorKind::Internal, "SHA-256 final failed (libcrypto)");
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

}  // namespace talkbox::hub
