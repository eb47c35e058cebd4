/*
 * The raw PKCS#11 figures `make bench` sets Paywarden's beside: ECDH P-256 derives straight on a
 * module, with no Paywarden code, for any module (SoftHSM, NSS softokn, a vendor's) and its
 * C_Initialize arguments.
 *
 *   raw_pkcs11_bench MODULE LABEL PIN_FILE OPERATION SECONDS THREADS   (PKCS11_INIT_RESERVED in
 *   the environment is passed as pReserved)
 *
 * OPERATION: ecdh      C_DeriveKey (CKD_NULL into a sensitive 32-byte secret) + C_DestroyObject
 *            ecdh-kdf  the same + Apple's KDF in the HSM: C_DigestInit(SHA-256), C_DigestUpdate
 *                      (counter), C_DigestKey(Z), C_DigestUpdate(otherInfo), C_DigestFinal
 * Prints "OPERATION threads=T => R ops/s wall". Each thread has its own session; the private key
 * and the peers' points are session objects made once, so every module is measured alike.
 */
#include <p11-kit/pkcs11.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PEERS 16

static CK_FUNCTION_LIST_PTR p11;
static CK_SLOT_ID slot;
static CK_OBJECT_HANDLE private_key;
static CK_BYTE peers[PEERS][65];
static int with_kdf;
static double deadline;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(const char *what, CK_RV rv)
{
    if (rv == CKR_OK) return;
    fprintf(stderr, "%s: 0x%lx\n", what, (unsigned long)rv);
    exit(1);
}

static void *worker(void *count_out)
{
    CK_SESSION_HANDLE session;
    check("C_OpenSession", p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session));
    CK_OBJECT_CLASS class = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_ULONG length = 32;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE secret[] = {
        {CKA_CLASS, &class, sizeof class}, {CKA_KEY_TYPE, &type, sizeof type}, {CKA_VALUE_LEN, &length, sizeof length},
        {CKA_TOKEN, &no, 1},           {CKA_SENSITIVE, &yes, 1},        {CKA_EXTRACTABLE, &no, 1},
    };
    CK_BYTE counter[4] = {0, 0, 0, 1}, other_info[70], digest[32];
    memset(other_info, 7, sizeof other_info);
    CK_MECHANISM sha256 = {CKM_SHA256, NULL, 0};
    long count = 0;
    while (now_s() < deadline) {
        CK_ECDH1_DERIVE_PARAMS params = {CKD_NULL, 0, NULL, 65, peers[count % PEERS]};
        CK_MECHANISM ecdh = {CKM_ECDH1_DERIVE, &params, sizeof params};
        CK_OBJECT_HANDLE z;
        check("C_DeriveKey", p11->C_DeriveKey(session, &ecdh, private_key, secret, 6, &z));
        if (with_kdf) {
            CK_ULONG size = sizeof digest;
            check("C_DigestInit", p11->C_DigestInit(session, &sha256));
            check("C_DigestUpdate", p11->C_DigestUpdate(session, counter, sizeof counter));
            check("C_DigestKey", p11->C_DigestKey(session, z));
            check("C_DigestUpdate", p11->C_DigestUpdate(session, other_info, sizeof other_info));
            check("C_DigestFinal", p11->C_DigestFinal(session, digest, &size));
        }
        check("C_DestroyObject", p11->C_DestroyObject(session, z));
        count++;
    }
    p11->C_CloseSession(session);
    *(long *)count_out = count;
    return NULL;
}

static void generate_ec(CK_SESSION_HANDLE session, CK_OBJECT_HANDLE *public_key, CK_OBJECT_HANDLE *private_out)
{
    CK_BYTE p256[] = {0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07};
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE public_template[] = {{CKA_TOKEN, &no, 1}, {CKA_EC_PARAMS, p256, sizeof p256}};
    CK_ATTRIBUTE private_template[] = {
        {CKA_TOKEN, &no, 1}, {CKA_PRIVATE, &yes, 1}, {CKA_SENSITIVE, &yes, 1}, {CKA_EXTRACTABLE, &no, 1}, {CKA_DERIVE, &yes, 1},
    };
    CK_MECHANISM generation = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    check("C_GenerateKeyPair",
          p11->C_GenerateKeyPair(session, &generation, public_template, 2, private_template, 5, public_key, private_out));
}

int main(int argc, char **argv)
{
    if (argc != 7 || (strcmp(argv[4], "ecdh") && strcmp(argv[4], "ecdh-kdf"))) {
        fprintf(stderr, "usage: raw_pkcs11_bench MODULE LABEL PIN_FILE ecdh|ecdh-kdf SECONDS THREADS\n");
        return 2;
    }
    with_kdf = strcmp(argv[4], "ecdh-kdf") == 0;
    double seconds = atof(argv[5]);
    int threads = atoi(argv[6]);
    if (threads < 1 || threads > 256 || seconds <= 0) return 2;
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    if (get == NULL) return 1;
    check("C_GetFunctionList", get(&p11));
    CK_C_INITIALIZE_ARGS arguments;
    memset(&arguments, 0, sizeof arguments);
    arguments.flags = CKF_OS_LOCKING_OK;
    arguments.pReserved = getenv("PKCS11_INIT_RESERVED");
    check("C_Initialize", p11->C_Initialize(&arguments));

    CK_SLOT_ID slots[16];
    CK_ULONG slot_count = 16;
    check("C_GetSlotList", p11->C_GetSlotList(CK_TRUE, slots, &slot_count));
    int found = 0;
    for (CK_ULONG i = 0; i < slot_count && !found; i++) {
        CK_TOKEN_INFO info;
        if (p11->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
        size_t length = strlen(argv[2]);
        if (length <= 32 && memcmp(info.label, argv[2], length) == 0 && (length == 32 || info.label[length] == ' ')) {
            slot = slots[i];
            found = 1;
        }
    }
    if (!found) {
        fprintf(stderr, "no token labelled %s\n", argv[2]);
        return 1;
    }
    char pin[256] = {0};
    FILE *file = fopen(argv[3], "r");
    if (file == NULL || fgets(pin, sizeof pin, file) == NULL) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
        return 1;
    }
    fclose(file);
    pin[strcspn(pin, "\r\n")] = 0;

    /* The login session stays open for the run: closing the last session logs the token out. */
    CK_SESSION_HANDLE anchor;
    check("C_OpenSession", p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &anchor));
    check("C_Login", p11->C_Login(anchor, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin)));
    CK_OBJECT_HANDLE public_key;
    generate_ec(anchor, &public_key, &private_key);
    for (int i = 0; i < PEERS; i++) {
        CK_OBJECT_HANDLE peer_public, peer_private;
        generate_ec(anchor, &peer_public, &peer_private);
        CK_BYTE point[80];
        CK_ATTRIBUTE attribute = {CKA_EC_POINT, point, sizeof point};
        check("C_GetAttributeValue", p11->C_GetAttributeValue(anchor, peer_public, &attribute, 1));
        if (attribute.ulValueLen != 67) {
            fprintf(stderr, "unexpected CKA_EC_POINT length %lu\n", (unsigned long)attribute.ulValueLen);
            return 1;
        }
        memcpy(peers[i], point + 2, 65); /* the DER OCTET STRING's content: the uncompressed point */
    }

    pthread_t workers[256];
    long counts[256];
    double start = now_s();
    deadline = start + seconds;
    for (int i = 0; i < threads; i++) pthread_create(&workers[i], NULL, worker, &counts[i]);
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(workers[i], NULL);
        total += counts[i];
    }
    double elapsed = now_s() - start;
    printf("%s threads=%d => %.0f ops/s wall\n", argv[4], threads, (double)total / elapsed);
    p11->C_CloseSession(anchor);
    p11->C_Finalize(NULL);
    return 0;
}
