#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "copenssl_shim.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bytes_free(pw_bytes *b)
{
    if (b->data != NULL) {
        OPENSSL_cleanse(b->data, b->length);
        free(b->data);
    }
    b->data = NULL;
    b->length = 0;
}

static int bn_param(const EVP_PKEY *pkey, const char *name, size_t pad_to, pw_bytes *out)
{
    BIGNUM *bn = NULL;
    if (!EVP_PKEY_get_bn_param(pkey, name, &bn)) return 0;
    size_t n = (size_t)BN_num_bytes(bn);
    size_t len = n > pad_to ? n : pad_to;
    if (len == 0) len = 1;
    out->data = malloc(len);
    if (out->data == NULL) { BN_clear_free(bn); return 0; }
    out->length = len;
    BN_bn2binpad(bn, out->data, (int)len);
    BN_clear_free(bn);
    return 1;
}

static int extract(EVP_PKEY *pkey, pw_private_key *out)
{
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_EC: {
        out->kind = PW_KEY_EC;
        size_t name_len = 0;
        if (!EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, out->curve, sizeof out->curve, &name_len))
            return PW_PARSE_UNSUPPORTED_KEY;
        int bits = EVP_PKEY_get_bits(pkey);
        return bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, (size_t)(bits + 7) / 8, &out->ec_private) ? PW_PARSE_OK : PW_PARSE_INTERNAL;
    }
    case EVP_PKEY_RSA: {
        out->kind = PW_KEY_RSA;
        int ok = bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, 0, &out->rsa_n)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, 0, &out->rsa_e)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_D, 0, &out->rsa_d)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_FACTOR1, 0, &out->rsa_p)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_FACTOR2, 0, &out->rsa_q)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1, 0, &out->rsa_dp)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2, 0, &out->rsa_dq)
            && bn_param(pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, 0, &out->rsa_qinv);
        return ok ? PW_PARSE_OK : PW_PARSE_INTERNAL;
    }
    default:
        return PW_PARSE_UNSUPPORTED_KEY;
    }
}

int pw_parse_private_key(const uint8_t *data, size_t length, pw_private_key *out)
{
    memset(out, 0, sizeof *out);
    /* OpenSSL takes int and long lengths: refuse what would not fit instead of truncating it. */
    if (length > INT_MAX) return PW_PARSE_UNREADABLE;
    ERR_clear_error();
    BIO *bio = BIO_new_mem_buf(data, (int)length);
    if (bio == NULL) return PW_PARSE_INTERNAL;
    /* PEM_read_bio_PrivateKey skips blocks of other types, such as a leading EC PARAMETERS. */
    EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
    BIO_free(bio);
    if (pkey == NULL) {
        const unsigned char *p = data;
        pkey = d2i_AutoPrivateKey(NULL, &p, (long)length);
    }
    if (pkey == NULL) return PW_PARSE_UNREADABLE;
    int result = extract(pkey, out);
    EVP_PKEY_free(pkey);
    if (result != PW_PARSE_OK) pw_private_key_free(out);
    return result;
}

static pthread_once_t providers_once = PTHREAD_ONCE_INIT;

static void load_providers(void)
{
    /* Legacy PKCS#12 files use RC2-40 or 3DES, which OpenSSL 3 keeps in the legacy provider. */
    OSSL_PROVIDER_load(NULL, "legacy");
    OSSL_PROVIDER_load(NULL, "default");
}

int pw_parse_pkcs12(const uint8_t *data, size_t length, const char *password, pw_private_key *out)
{
    memset(out, 0, sizeof *out);
    if (length > INT_MAX) return PW_PARSE_UNREADABLE;
    pthread_once(&providers_once, load_providers);
    ERR_clear_error();
    const unsigned char *p = data;
    PKCS12 *p12 = d2i_PKCS12(NULL, &p, (long)length);
    if (p12 == NULL) return PW_PARSE_UNREADABLE;
    /* An empty password has two encodings: "" (the BMPString 00 00) and none at all, which
     * macOS's Keychain Access writes. PKCS12_parse tries both, but only when the MAC it finds
     * was made with one of them; check it the same way, then decrypt with the one that matched. */
    const char *matched = password;
    if (PKCS12_mac_present(p12) && !PKCS12_verify_mac(p12, password, -1)) {
        if (password != NULL && password[0] == '\0' && PKCS12_verify_mac(p12, NULL, 0)) {
            matched = NULL;
        } else {
            PKCS12_free(p12);
            return PW_PARSE_BAD_PASSWORD;
        }
    }
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;
    int ok = PKCS12_parse(p12, matched, &pkey, &cert, NULL);
    PKCS12_free(p12);
    if (!ok || pkey == NULL) {
        X509_free(cert);
        EVP_PKEY_free(pkey);
        return ok ? PW_PARSE_UNREADABLE : PW_PARSE_BAD_PASSWORD;
    }
    int result = extract(pkey, out);
    EVP_PKEY_free(pkey);
    if (result == PW_PARSE_OK && cert != NULL) {
        /* Two passes (size, then encode): the second must succeed and produce exactly the size
         * the first announced, or the certificate is dropped rather than half-written. */
        int len = i2d_X509(cert, NULL);
        if (len > 0 && (out->certificate.data = malloc((size_t)len)) != NULL) {
            unsigned char *q = out->certificate.data;
            int written = i2d_X509(cert, &q);
            if (written == len) {
                out->certificate.length = (size_t)len;
            } else {
                free(out->certificate.data);
                out->certificate.data = NULL;
                result = PW_PARSE_INTERNAL;
            }
        }
    }
    X509_free(cert);
    if (result != PW_PARSE_OK) pw_private_key_free(out);
    return result;
}

void pw_private_key_free(pw_private_key *key)
{
    bytes_free(&key->ec_private);
    bytes_free(&key->rsa_n);
    bytes_free(&key->rsa_e);
    bytes_free(&key->rsa_d);
    bytes_free(&key->rsa_p);
    bytes_free(&key->rsa_q);
    bytes_free(&key->rsa_dp);
    bytes_free(&key->rsa_dq);
    bytes_free(&key->rsa_qinv);
    bytes_free(&key->certificate);
    key->kind = PW_KEY_UNKNOWN;
}

int pw_oaep_sha256_decode(const uint8_t *encoded, size_t encoded_length, size_t modulus_length,
                          uint8_t *out, size_t out_capacity)
{
    /* The whole encoded block, leading zero included; OpenSSL checks that byte in constant time. */
    if (encoded_length == 0 || encoded_length > modulus_length) return -1;
    if (modulus_length > INT_MAX || out_capacity > INT_MAX) return -1;
    return RSA_padding_check_PKCS1_OAEP_mgf1(out, (int)out_capacity, encoded, (int)encoded_length,
                                             (int)modulus_length, NULL, 0, EVP_sha256(), EVP_sha256());
}

int pw_aes256_wrap_pad(const uint8_t *kek, const uint8_t *in, size_t in_length, uint8_t *out, size_t out_capacity)
{
    if (in_length == 0 || in_length > 4096 || out_capacity < ((in_length + 7) / 8) * 8 + 8) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int length = 0, final_length = 0;
    /* The wrap modes refuse to run unless the context explicitly allows them. */
    EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_wrap_pad(), NULL, kek, NULL)
        && EVP_EncryptUpdate(ctx, out, &length, in, (int)in_length)
        && EVP_EncryptFinal_ex(ctx, out + length, &final_length);
    EVP_CIPHER_CTX_free(ctx);
    return ok ? length + final_length : -1;
}

void pw_last_error(char *out, size_t out_length)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0) { snprintf(out, out_length, "no OpenSSL error recorded"); return; }
    ERR_error_string_n(e, out, out_length);
}
