#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

/*
 * Thin shims over OpenSSL's libcrypto, used where it is the vetted tool: parsing the many
 * private-key container formats an operator may hold, constant-time OAEP decoding, and the
 * RFC 5649 reference for probing the HSM's key wrap.
 * No policy lives here; callers decide what is acceptable.
 */
#include <stddef.h>
#include <stdint.h>

typedef struct pw_bytes {
    uint8_t *data;
    size_t length;
} pw_bytes;

enum pw_key_kind { PW_KEY_UNKNOWN = 0, PW_KEY_EC = 1, PW_KEY_RSA = 2 };

/* The components of a parsed private key. Every buffer is big-endian and owned by the struct. */
typedef struct pw_private_key {
    int kind;
    char curve[32];         /* EC: OpenSSL's group name, e.g. "prime256v1" */
    pw_bytes ec_private;    /* EC: the private scalar, left-padded to the field size */
    pw_bytes rsa_n, rsa_e, rsa_d, rsa_p, rsa_q, rsa_dp, rsa_dq, rsa_qinv;
    pw_bytes certificate;   /* PKCS#12: the DER certificate matching the key, when present */
} pw_private_key;

enum pw_parse_result {
    PW_PARSE_OK = 0,
    PW_PARSE_UNREADABLE = 1,        /* not a private key in any supported format */
    PW_PARSE_BAD_PASSWORD = 2,      /* PKCS#12 MAC check failed */
    PW_PARSE_UNSUPPORTED_KEY = 3,   /* a key, but neither EC nor RSA */
    PW_PARSE_INTERNAL = 4
};

/* Parses PEM (PKCS#8, SEC1 with or without a leading EC PARAMETERS block, PKCS#1) or DER. */
int pw_parse_private_key(const uint8_t *data, size_t length, pw_private_key *out);

/* Parses PKCS#12, including legacy files encrypted with RC2 or 3DES. */
int pw_parse_pkcs12(const uint8_t *data, size_t length, const char *password, pw_private_key *out);

/* Wipes and frees every buffer of a parsed key. */
void pw_private_key_free(pw_private_key *key);

/*
 * Removes EME-OAEP padding (SHA-256, MGF1-SHA-256, empty label) from the output of a raw RSA
 * decryption, in constant time (OpenSSL's RSA_padding_check_PKCS1_OAEP_mgf1).
 * Returns the message length, or -1 when the padding is invalid.
 */
int pw_oaep_sha256_decode(const uint8_t *encoded, size_t encoded_length, size_t modulus_length,
                          uint8_t *out, size_t out_capacity);

/*
 * AES-256 key wrap with padding (RFC 5649) in software, as the reference the HSM's
 * CKM_AES_KEY_WRAP_PAD is checked against before it is trusted. `kek` is 32 bytes.
 * Returns the wrapped length (the input rounded up to 8 bytes, plus 8), or -1.
 */
int pw_aes256_wrap_pad(const uint8_t *kek, const uint8_t *in, size_t in_length, uint8_t *out, size_t out_capacity);

/* The text of OpenSSL's most recent error, for diagnostics that carry no key material. */
void pw_last_error(char *out, size_t out_length);

#endif
