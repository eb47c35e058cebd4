#include "shim_fuzzing.h"

#include "copenssl_shim.h"

int pw_fuzz_key_file(const uint8_t *data, size_t size)
{
    int accepted = 0;
    pw_private_key key;
    if (pw_parse_private_key(data, size, &key) == PW_PARSE_OK) accepted++;
    pw_private_key_free(&key);
    /* "fuzz" is the seeds' password; "" also takes the NULL-password form macOS writes. */
    if (pw_parse_pkcs12(data, size, "fuzz", &key) == PW_PARSE_OK) accepted++;
    pw_private_key_free(&key);
    if (pw_parse_pkcs12(data, size, "", &key) == PW_PARSE_OK) accepted++;
    pw_private_key_free(&key);
    /* As if the input were a 2048-bit RSA decryption's output, and as long as its modulus. */
    uint8_t message[512];
    if (size <= sizeof message) {
        if (pw_oaep_sha256_decode(data, size, 256, message, sizeof message) >= 0) accepted++;
        if (pw_oaep_sha256_decode(data, size, size, message, sizeof message) >= 0) accepted++;
    }
    return accepted;
}
