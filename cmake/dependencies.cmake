# Debian -dev packages (installed by scripts/setup.sh).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
pkg_check_modules(SOXR REQUIRED IMPORTED_TARGET soxr)
# `speed` (audio/time_stretch.cpp): SoundTouch's tempo change; AAC (audio/aac_encoder.cpp): libavcodec's native encoder.
pkg_check_modules(SOUNDTOUCH REQUIRED IMPORTED_TARGET soundtouch)
pkg_check_modules(AVCODEC REQUIRED IMPORTED_TARGET libavcodec libavutil)
# SLEEF: the speaker mel's window cosine and log, bit for bit as torch's CPU kernels compute them.
pkg_check_modules(SLEEF REQUIRED IMPORTED_TARGET sleef)
# SSML input (text/ssml.cpp): expat, with no DOCTYPE and so no entities beyond XML's own.
pkg_check_modules(EXPAT REQUIRED IMPORTED_TARGET expat)
# The hub client (src/hub): libcurl, and libcrypto for SHA-256; its tests serve a fake hub with cpp-httplib.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# `serve --zeroconf` (server/zeroconf.cpp): announces the Wyoming port through the Avahi daemon.
pkg_check_modules(AVAHI_CLIENT REQUIRED IMPORTED_TARGET avahi-client)
# Japanese kanji readings (text/japanese_reader.cpp): MeCab, used under its BSD-3-Clause licence
# (Debian ships no pkg-config file for it). Its IPAdic dictionary is data read at run time from
# TALKBOX_MECAB_DICDIR (or the environment variable of that name), so a machine without it builds.
find_path(MECAB_INCLUDE_DIR mecab.h REQUIRED)
find_library(MECAB_LIBRARY mecab REQUIRED)
set(TALKBOX_MECAB_DICDIR "/var/lib/mecab/dic/ipadic-utf8" CACHE PATH
    "Default folder of the IPAdic (UTF-8) MeCab dictionary for Japanese kanji readings (Debian: mecab-ipadic-utf8)")
