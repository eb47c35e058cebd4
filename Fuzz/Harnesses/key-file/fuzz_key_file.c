/* libFuzzer target `key-file`: the OpenSSL shim's key-file parsers (scripts/fuzz.sh builds it
 * with clang -fsanitize=fuzzer,address, the shim instrumented with it). */
#include "shim_fuzzing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_fuzz_key_file(data, size);
    return 0;
}
