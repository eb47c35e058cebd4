#ifndef SHIM_FUZZING_H
#define SHIM_FUZZING_H

#include <stddef.h>
#include <stdint.h>

/*
 * The key-file shim's fuzzing body: the input as a PEM or DER private key, as a PKCS#12 file
 * under a password and under the empty password, and as the output of a raw RSA decryption
 * whose OAEP padding is removed. Every result is released; a sanitizer report or a crash is the
 * only failure. Test-only: the libFuzzer entry (Fuzz/Harnesses/key-file) and FuzzCorpusTests.
 * Returns how many of the parsers accepted the input, so a replay can tell seeds from noise.
 */
int pw_fuzz_key_file(const uint8_t *data, size_t size);

#endif
