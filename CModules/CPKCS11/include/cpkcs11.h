#ifndef CPKCS11_H
#define CPKCS11_H

/*
 * The PKCS#11 C core: loads a module by path and exposes what Swift cannot import from
 * p11-kit's v2.40 pkcs11.h (casted macros, v3.0 constants). No policy lives here.
 */
#include <p11-kit/pkcs11.h>
#include <stddef.h>

/* PKCS#11 v3.0 key derivation functions, absent from the v2.40 header. */
#define CPKCS11_CKD_SHA256_KDF_SP800 0x00000010UL

/* Macros defined with casts in pkcs11.h, which Swift does not import. */
static const CK_ULONG CPKCS11_UNAVAILABLE_INFORMATION = CK_UNAVAILABLE_INFORMATION;
static const CK_FLAGS CPKCS11_CKF_OS_LOCKING_OK = CKF_OS_LOCKING_OK;
static const CK_FLAGS CPKCS11_CKF_SERIAL_SESSION = CKF_SERIAL_SESSION;
static const CK_FLAGS CPKCS11_CKF_RW_SESSION = CKF_RW_SESSION;
static const CK_FLAGS CPKCS11_CKF_TOKEN_INITIALIZED = CKF_TOKEN_INITIALIZED;
static const CK_FLAGS CPKCS11_CKF_USER_PIN_INITIALIZED = CKF_USER_PIN_INITIALIZED;

/* An opened module: the dlopen handle and its function list. */
typedef struct cpkcs11_module {
    void *library;
    CK_FUNCTION_LIST_PTR functions;
} cpkcs11_module;

/*
 * Opens the shared object at `path` and fetches its function list.
 * Returns 0 on success; otherwise 1 (cannot open), 2 (no C_GetFunctionList) or
 * 3 (C_GetFunctionList failed), with a reason from the loader in `reason`.
 */
int cpkcs11_load(const char *path, cpkcs11_module *out, char *reason, size_t reason_len);

/* Closes a module opened by cpkcs11_load. The caller must have called C_Finalize. */
void cpkcs11_unload(cpkcs11_module *module);

/*
 * C_Initialize with CKF_OS_LOCKING_OK, so the module locks its own state across threads, and
 * `reserved` (NULL, or a module-specific string such as NSS softokn's configdir=…) as pReserved.
 */
CK_RV cpkcs11_initialize(CK_FUNCTION_LIST_PTR functions, const char *reserved);

#endif
