# cmake -DINPUT=file -DOUTPUT=file.cpp -DNAMESPACE=ns -DFUNCTION=name -P embed_file.cmake
# Writes a C++ source whose function returns the file's bytes (as hex, so any content is safe).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
string(REGEX REPLACE "(([^,]*,){24})" "\\1\n" body "${body}")
math(EXPR bytes "${n} / 2")
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n#include <string_view>\n\nnamespace ${NAMESPACE} {\nnamespace {\nconst char kData[] = {\n${body}\n'\\0'};\n}  // namespace\nstd::string_view ${FUNCTION}() { return std::string_view(kData, ${bytes}); }\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
