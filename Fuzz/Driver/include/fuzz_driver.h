#ifndef FUZZ_DRIVER_H
#define FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/* One fuzz input: return 0 (libFuzzer reserves other values). */
typedef int (*pw_fuzz_one_input)(const uint8_t *data, size_t size);

/*
 * Runs libFuzzer's driver (LLVMFuzzerRunDriver, in the runtime -sanitize=fuzzer links) on the
 * command line with `one` as the input function. The Swift harnesses call it from their own
 * entry point: SwiftPM links an executable's `main` to `<Module>_main`, which a module built
 * with -parse-as-library never defines, so libFuzzer's own `main` cannot be used
 * (swiftlang/swift#75800).
 */
int pw_fuzz_run(int argc, char **argv, pw_fuzz_one_input one);

#endif
