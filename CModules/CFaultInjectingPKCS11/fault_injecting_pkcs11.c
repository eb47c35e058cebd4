/*
 * A PKCS#11 module for tests that forwards to a real one and injects faults on command.
 * What it does and how to drive it: include/fault_injecting_pkcs11.h.
 */
#define _GNU_SOURCE
#include "fault_injecting_pkcs11.h"

#include <p11-kit/pkcs11.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PWF_EXPORT __attribute__((visibility("default")))
#define PWF_DEFAULT_TARGET "/usr/lib/softhsm/libsofthsm2.so"

/* Every function of the v2.40 list but C_GetFunctionList, which is never faulted. */
#define PWF_FUNCTIONS(X)                                                                           \
    X(C_Initialize) X(C_Finalize) X(C_GetInfo) X(C_GetSlotList) X(C_GetSlotInfo) X(C_GetTokenInfo) \
    X(C_GetMechanismList) X(C_GetMechanismInfo) X(C_InitToken) X(C_InitPIN) X(C_SetPIN)            \
    X(C_OpenSession) X(C_CloseSession) X(C_CloseAllSessions) X(C_GetSessionInfo)                    \
    X(C_GetOperationState) X(C_SetOperationState) X(C_Login) X(C_Logout) X(C_CreateObject)          \
    X(C_CopyObject) X(C_DestroyObject) X(C_GetObjectSize) X(C_GetAttributeValue)                    \
    X(C_SetAttributeValue) X(C_FindObjectsInit) X(C_FindObjects) X(C_FindObjectsFinal)              \
    X(C_EncryptInit) X(C_Encrypt) X(C_EncryptUpdate) X(C_EncryptFinal) X(C_DecryptInit)            \
    X(C_Decrypt) X(C_DecryptUpdate) X(C_DecryptFinal) X(C_DigestInit) X(C_Digest)                  \
    X(C_DigestUpdate) X(C_DigestKey) X(C_DigestFinal) X(C_SignInit) X(C_Sign) X(C_SignUpdate)      \
    X(C_SignFinal) X(C_SignRecoverInit) X(C_SignRecover) X(C_VerifyInit) X(C_Verify)               \
    X(C_VerifyUpdate) X(C_VerifyFinal) X(C_VerifyRecoverInit) X(C_VerifyRecover)                   \
    X(C_DigestEncryptUpdate) X(C_DecryptDigestUpdate) X(C_SignEncryptUpdate)                        \
    X(C_DecryptVerifyUpdate) X(C_GenerateKey) X(C_GenerateKeyPair) X(C_WrapKey) X(C_UnwrapKey)     \
    X(C_DeriveKey) X(C_SeedRandom) X(C_GenerateRandom) X(C_GetFunctionStatus) X(C_CancelFunction)  \
    X(C_WaitForSlotEvent)

enum {
#define PWF_ENUM(name) PWF_##name,
    PWF_FUNCTIONS(PWF_ENUM)
#undef PWF_ENUM
    PWF_FUNCTION_COUNT,
    /* The entry of "*", consulted after the function's own. */
    PWF_ANY = PWF_FUNCTION_COUNT,
};

static const char *const pwf_names[PWF_FUNCTION_COUNT] = {
#define PWF_NAME(name) #name,
    PWF_FUNCTIONS(PWF_NAME)
#undef PWF_NAME
};

typedef struct {
    CK_RV error;
    int error_times;  /* 0: none; < 0: every call; > 0: that many more calls */
    int hang_times;   /* as error_times */
    unsigned long hang_timeout_ms;  /* 0: until released */
    unsigned long latency_us;
} pwf_fault;

/* Fault state, hangs and the in-flight count: pwf_lock, with pwf_changed signalled on release
 * and when the last in-flight call returns. */
static pthread_mutex_t pwf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pwf_changed;
static pwf_fault pwf_faults[PWF_FUNCTION_COUNT + 1];
static unsigned long pwf_release_epoch[PWF_FUNCTION_COUNT];
static long pwf_waiting[PWF_FUNCTION_COUNT];
static int pwf_removed;
static int pwf_removal_ends_sessions;
static long pwf_inflight;  /* calls inside the target now */
static _Atomic long pwf_call_counts[PWF_FUNCTION_COUNT];

/* Loading the target and its C_Initialize / C_Finalize, and closing sessions behind the caller. */
static pthread_mutex_t pwf_lifecycle = PTHREAD_MUTEX_INITIALIZER;
static CK_FUNCTION_LIST_PTR pwf_target;
static char pwf_target_path[4096];
static int pwf_private_copy = -1;  /* -1: from the environment */
static int pwf_initialized;
static int pwf_borrowed;  /* the shared target was initialised by another user: never finalise it */
static char pwf_error[8192];

/* The sessions opened through this module: pwf_session_lock, a leaf lock. */
typedef struct {
    CK_SESSION_HANDLE handle;
    CK_SLOT_ID slot;
} pwf_session;
static pthread_mutex_t pwf_session_lock = PTHREAD_MUTEX_INITIALIZER;
static pwf_session *pwf_sessions;
static size_t pwf_session_count, pwf_session_capacity;

/* PWFAULT_CONTROL: a file re-applied whenever it changes. */
static pthread_mutex_t pwf_control_lock = PTHREAD_MUTEX_INITIALIZER;
static char pwf_control_path[4096];
static struct stat pwf_control_seen;

static CK_FUNCTION_LIST pwf_function_list;

__attribute__((constructor)) static void pwf_setup(void)
{
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&pwf_changed, &attributes);
    pthread_condattr_destroy(&attributes);
    const char *control = getenv("PWFAULT_CONTROL");
    if (control != NULL) snprintf(pwf_control_path, sizeof pwf_control_path, "%s", control);
}

/* -1: unknown; PWF_ANY for "*" or NULL. */
static int pwf_index(const char *function)
{
    if (function == NULL || strcmp(function, "*") == 0) return PWF_ANY;
    for (int i = 0; i < PWF_FUNCTION_COUNT; i++) {
        if (strcmp(function, pwf_names[i]) == 0) return i;
    }
    return -1;
}

static void pwf_sleep_us(unsigned long microseconds)
{
    struct timespec remaining = {(time_t)(microseconds / 1000000), (long)(microseconds % 1000000) * 1000};
    while (nanosleep(&remaining, &remaining) != 0 && errno == EINTR) {
    }
}

/* ---- Sessions opened through this module ---- */

static void pwf_track_session(CK_SESSION_HANDLE handle, CK_SLOT_ID slot)
{
    pthread_mutex_lock(&pwf_session_lock);
    if (pwf_session_count == pwf_session_capacity) {
        size_t capacity = pwf_session_capacity ? pwf_session_capacity * 2 : 64;
        pwf_session *grown = realloc(pwf_sessions, capacity * sizeof *grown);
        if (grown == NULL) {
            /* Not tracked: a removal will not close it. Tests never come near this. */
            pthread_mutex_unlock(&pwf_session_lock);
            return;
        }
        pwf_sessions = grown;
        pwf_session_capacity = capacity;
    }
    pwf_sessions[pwf_session_count++] = (pwf_session){handle, slot};
    pthread_mutex_unlock(&pwf_session_lock);
}

/* Forgets `handle`, or every session in `slot` when all_in_slot. */
static void pwf_untrack_sessions(CK_SESSION_HANDLE handle, CK_SLOT_ID slot, int all_in_slot)
{
    pthread_mutex_lock(&pwf_session_lock);
    size_t kept = 0;
    for (size_t i = 0; i < pwf_session_count; i++) {
        int match = all_in_slot ? pwf_sessions[i].slot == slot : pwf_sessions[i].handle == handle;
        if (!match) pwf_sessions[kept++] = pwf_sessions[i];
    }
    pwf_session_count = kept;
    pthread_mutex_unlock(&pwf_session_lock);
}

static void pwf_forget_sessions(void)
{
    pthread_mutex_lock(&pwf_session_lock);
    pwf_session_count = 0;
    pthread_mutex_unlock(&pwf_session_lock);
}

/* Closes every tracked session in the target. The caller holds pwf_lifecycle and knows that no
 * call is inside the target (SoftHSM frees a session that another thread may still be using). */
static void pwf_close_tracked_sessions(void)
{
    pthread_mutex_lock(&pwf_session_lock);
    pwf_session *sessions = pwf_sessions;
    size_t count = pwf_session_count;
    pwf_sessions = NULL;
    pwf_session_count = pwf_session_capacity = 0;
    pthread_mutex_unlock(&pwf_session_lock);
    if (pwf_target != NULL && pwf_initialized) {
        for (size_t i = 0; i < count; i++) (void)pwf_target->C_CloseSession(sessions[i].handle);
    }
    free(sessions);
}

/* ---- The gate every call passes ---- */

static int pwf_survives_removal(int function)
{
    return function == PWF_C_Initialize || function == PWF_C_Finalize || function == PWF_C_GetInfo;
}

static void pwf_poll_control_file(void);

/*
 * Counts the call, blocks it while a hang holds it, sleeps the latency, and returns the fault
 * to report, or CKR_OK: the call then counts as in flight until pwf_done().
 */
static CK_RV pwf_gate(int function)
{
    atomic_fetch_add_explicit(&pwf_call_counts[function], 1, memory_order_relaxed);
    if (pwf_control_path[0] != '\0') pwf_poll_control_file();

    pthread_mutex_lock(&pwf_lock);
    pwf_fault *hang = NULL;
    if (pwf_faults[function].hang_times != 0) hang = &pwf_faults[function];
    else if (pwf_faults[PWF_ANY].hang_times != 0) hang = &pwf_faults[PWF_ANY];
    if (hang != NULL) {
        if (hang->hang_times > 0) hang->hang_times--;
        unsigned long epoch = pwf_release_epoch[function];
        struct timespec deadline;
        unsigned long timeout = hang->hang_timeout_ms;
        if (timeout != 0) {
            clock_gettime(CLOCK_MONOTONIC, &deadline);
            deadline.tv_sec += (time_t)(timeout / 1000);
            deadline.tv_nsec += (long)(timeout % 1000) * 1000000;
            if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec += 1;
                deadline.tv_nsec -= 1000000000;
            }
        }
        pwf_waiting[function]++;
        while (pwf_release_epoch[function] == epoch) {
            if (timeout == 0) {
                pthread_cond_wait(&pwf_changed, &pwf_lock);
            } else if (pthread_cond_timedwait(&pwf_changed, &pwf_lock, &deadline) == ETIMEDOUT) {
                break;
            }
        }
        pwf_waiting[function]--;
    }
    unsigned long latency = pwf_faults[function].latency_us;
    if (latency == 0) latency = pwf_faults[PWF_ANY].latency_us;
    pthread_mutex_unlock(&pwf_lock);

    if (latency != 0) pwf_sleep_us(latency);

    pthread_mutex_lock(&pwf_lock);
    CK_RV rv = CKR_OK;
    if (pwf_removed && !pwf_survives_removal(function)) {
        rv = CKR_DEVICE_REMOVED;
    } else {
        pwf_fault *error = NULL;
        if (pwf_faults[function].error_times != 0) error = &pwf_faults[function];
        else if (pwf_faults[PWF_ANY].error_times != 0) error = &pwf_faults[PWF_ANY];
        if (error != NULL) {
            rv = error->error;
            if (error->error_times > 0) error->error_times--;
        }
    }
    if (rv == CKR_OK) pwf_inflight++;
    pthread_mutex_unlock(&pwf_lock);
    return rv;
}

/* Ends an in-flight call (one pwf_gate let through, or one pwf_begin_cleanup allowed). */
static void pwf_done(void)
{
    pthread_mutex_lock(&pwf_lock);
    if (--pwf_inflight == 0) pthread_cond_broadcast(&pwf_changed);
    pthread_mutex_unlock(&pwf_lock);
}

/*
 * Whether an operation that a faulted call would have ended may still be ended in the target
 * (then in flight until pwf_done()). Not once a removal has closed the sessions: the handle may
 * name nothing, or by now someone else's session.
 */
static int pwf_begin_cleanup(CK_RV injected)
{
    if (injected == CKR_BUFFER_TOO_SMALL) return 0;  /* the one error that leaves it active */
    pthread_mutex_lock(&pwf_lock);
    int allowed = !(pwf_removed && pwf_removal_ends_sessions);
    if (allowed) pwf_inflight++;
    pthread_mutex_unlock(&pwf_lock);
    return allowed;
}

typedef CK_RV (*pwf_output_call)(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR);
typedef CK_RV (*pwf_final_call)(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG_PTR);

/* Runs a single-part call into a scratch buffer, which ends its operation, and wipes the result. */
static void pwf_end_with_call(pwf_output_call call, CK_SESSION_HANDLE session, CK_BYTE_PTR input, CK_ULONG length)
{
    CK_ULONG size = 0;
    if (call == NULL || call(session, input, length, NULL, &size) != CKR_OK) return;  /* an error ended it */
    CK_BYTE_PTR scratch = calloc(1, size ? size : 1);
    if (scratch == NULL) return;
    (void)call(session, input, length, scratch, &size);
    explicit_bzero(scratch, size);
    free(scratch);
}

/* Ends a multi-part operation through its final call into a scratch buffer. */
static void pwf_end_with_final(pwf_final_call final, CK_SESSION_HANDLE session)
{
    CK_ULONG size = 0;
    if (final == NULL || final(session, NULL, &size) != CKR_OK) return;
    CK_BYTE_PTR scratch = calloc(1, size ? size : 1);
    if (scratch == NULL) return;
    (void)final(session, scratch, &size);
    explicit_bzero(scratch, size);
    free(scratch);
}

static void pwf_end_verify(CK_SESSION_HANDLE session)
{
    CK_BYTE nothing = 0;
    if (pwf_target->C_VerifyFinal != NULL) (void)pwf_target->C_VerifyFinal(session, &nothing, 1);
}

#define PWF_FORWARD(name, args)                                                 \
    do {                                                                        \
        CK_RV forwarded_ = CKR_FUNCTION_NOT_SUPPORTED;                          \
        if (pwf_target->name != NULL) forwarded_ = pwf_target->name args;       \
        pwf_done();                                                             \
        return forwarded_;                                                      \
    } while (0)

/* ---- Functions forwarded as they are ---- */

#define PWF_PLAIN(X)                                                                                               \
    X(C_GetInfo, (CK_INFO_PTR a), (a))                                                                             \
    X(C_GetSlotList, (CK_BBOOL a, CK_SLOT_ID_PTR b, CK_ULONG_PTR c), (a, b, c))                                    \
    X(C_GetSlotInfo, (CK_SLOT_ID a, CK_SLOT_INFO_PTR b), (a, b))                                                   \
    X(C_GetTokenInfo, (CK_SLOT_ID a, CK_TOKEN_INFO_PTR b), (a, b))                                                 \
    X(C_WaitForSlotEvent, (CK_FLAGS a, CK_SLOT_ID_PTR b, CK_VOID_PTR c), (a, b, c))                                \
    X(C_GetMechanismList, (CK_SLOT_ID a, CK_MECHANISM_TYPE_PTR b, CK_ULONG_PTR c), (a, b, c))                      \
    X(C_GetMechanismInfo, (CK_SLOT_ID a, CK_MECHANISM_TYPE b, CK_MECHANISM_INFO_PTR c), (a, b, c))                 \
    X(C_InitToken, (CK_SLOT_ID a, CK_UTF8CHAR_PTR b, CK_ULONG c, CK_UTF8CHAR_PTR d), (a, b, c, d))                 \
    X(C_InitPIN, (CK_SESSION_HANDLE a, CK_UTF8CHAR_PTR b, CK_ULONG c), (a, b, c))                                  \
    X(C_SetPIN, (CK_SESSION_HANDLE a, CK_UTF8CHAR_PTR b, CK_ULONG c, CK_UTF8CHAR_PTR d, CK_ULONG e),               \
      (a, b, c, d, e))                                                                                             \
    X(C_GetSessionInfo, (CK_SESSION_HANDLE a, CK_SESSION_INFO_PTR b), (a, b))                                      \
    X(C_GetOperationState, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG_PTR c), (a, b, c))                        \
    X(C_SetOperationState, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_OBJECT_HANDLE d, CK_OBJECT_HANDLE e), \
      (a, b, c, d, e))                                                                                             \
    X(C_Login, (CK_SESSION_HANDLE a, CK_USER_TYPE b, CK_UTF8CHAR_PTR c, CK_ULONG d), (a, b, c, d))                 \
    X(C_Logout, (CK_SESSION_HANDLE a), (a))                                                                        \
    X(C_CreateObject, (CK_SESSION_HANDLE a, CK_ATTRIBUTE_PTR b, CK_ULONG c, CK_OBJECT_HANDLE_PTR d), (a, b, c, d)) \
    X(C_CopyObject, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b, CK_ATTRIBUTE_PTR c, CK_ULONG d, CK_OBJECT_HANDLE_PTR e), \
      (a, b, c, d, e))                                                                                             \
    X(C_DestroyObject, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b), (a, b))                                          \
    X(C_GetObjectSize, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b, CK_ULONG_PTR c), (a, b, c))                       \
    X(C_GetAttributeValue, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b, CK_ATTRIBUTE_PTR c, CK_ULONG d), (a, b, c, d)) \
    X(C_SetAttributeValue, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b, CK_ATTRIBUTE_PTR c, CK_ULONG d), (a, b, c, d)) \
    X(C_FindObjectsInit, (CK_SESSION_HANDLE a, CK_ATTRIBUTE_PTR b, CK_ULONG c), (a, b, c))                         \
    X(C_FindObjects, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE_PTR b, CK_ULONG c, CK_ULONG_PTR d), (a, b, c, d))      \
    X(C_DigestEncryptUpdate, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_BYTE_PTR d, CK_ULONG_PTR e),      \
      (a, b, c, d, e))                                                                                             \
    X(C_DecryptDigestUpdate, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_BYTE_PTR d, CK_ULONG_PTR e),      \
      (a, b, c, d, e))                                                                                             \
    X(C_SignEncryptUpdate, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_BYTE_PTR d, CK_ULONG_PTR e),        \
      (a, b, c, d, e))                                                                                             \
    X(C_DecryptVerifyUpdate, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_BYTE_PTR d, CK_ULONG_PTR e),      \
      (a, b, c, d, e))                                                                                             \
    X(C_SeedRandom, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c), (a, b, c))                                   \
    X(C_GenerateRandom, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c), (a, b, c))                               \
    X(C_GetFunctionStatus, (CK_SESSION_HANDLE a), (a))                                                             \
    X(C_CancelFunction, (CK_SESSION_HANDLE a), (a))

#define PWF_DEFINE_PLAIN(name, parameters, arguments) \
    static CK_RV pwf_##name parameters                \
    {                                                 \
        CK_RV rv = pwf_gate(PWF_##name);              \
        if (rv != CKR_OK) return rv;                  \
        PWF_FORWARD(name, arguments);                 \
    }
PWF_PLAIN(PWF_DEFINE_PLAIN)

/* ---- Calls that take a mechanism, which the device may not have ---- */

/* Mechanisms the device answers CKR_MECHANISM_INVALID for, in every call that takes one, as a
 * module without them would (the mechanism list is left as it is: modules' lists are claims). */
#define PWF_MAX_REFUSED 16
static CK_MECHANISM_TYPE pwf_refused_mechanisms[PWF_MAX_REFUSED];
static int pwf_refused_count;

static int pwf_refuses(CK_MECHANISM_PTR mechanism)
{
    if (mechanism == NULL) return 0;
    pthread_mutex_lock(&pwf_lock);
    int refused = 0;
    for (int i = 0; i < pwf_refused_count; i++) refused |= pwf_refused_mechanisms[i] == mechanism->mechanism;
    pthread_mutex_unlock(&pwf_lock);
    return refused;
}

PWF_EXPORT int pwfault_refuse_mechanism(unsigned long mechanism)
{
    pthread_mutex_lock(&pwf_lock);
    int present = 0;
    for (int i = 0; i < pwf_refused_count; i++) present |= pwf_refused_mechanisms[i] == mechanism;
    int added = present || pwf_refused_count < PWF_MAX_REFUSED;
    if (added && !present) pwf_refused_mechanisms[pwf_refused_count++] = mechanism;
    pthread_mutex_unlock(&pwf_lock);
    return added ? 0 : -1;
}

/* Refusals a specification being checked would add: counted so that one that would not fit is
 * rejected before any of it is applied. */
static int pwf_refusals_checked;

#define PWF_WITH_MECHANISM(X)                                                                                      \
    X(C_EncryptInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))                     \
    X(C_DecryptInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))                     \
    X(C_DigestInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b), (a, b))                                             \
    X(C_SignInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))                        \
    X(C_SignRecoverInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))                 \
    X(C_VerifyInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))                      \
    X(C_VerifyRecoverInit, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c), (a, b, c))               \
    X(C_GenerateKey, (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_ATTRIBUTE_PTR c, CK_ULONG d, CK_OBJECT_HANDLE_PTR e), \
      (a, b, c, d, e))                                                                                             \
    X(C_GenerateKeyPair,                                                                                           \
      (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_ATTRIBUTE_PTR c, CK_ULONG d, CK_ATTRIBUTE_PTR e, CK_ULONG f,    \
       CK_OBJECT_HANDLE_PTR g, CK_OBJECT_HANDLE_PTR h),                                                            \
      (a, b, c, d, e, f, g, h))                                                                                    \
    X(C_WrapKey,                                                                                                   \
      (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c, CK_OBJECT_HANDLE d, CK_BYTE_PTR e, CK_ULONG_PTR f), \
      (a, b, c, d, e, f))                                                                                          \
    X(C_UnwrapKey,                                                                                                 \
      (CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c, CK_BYTE_PTR d, CK_ULONG e, CK_ATTRIBUTE_PTR f, \
       CK_ULONG g, CK_OBJECT_HANDLE_PTR h),                                                                        \
      (a, b, c, d, e, f, g, h))

#define PWF_DEFINE_WITH_MECHANISM(name, parameters, arguments) \
    static CK_RV pwf_##name parameters                         \
    {                                                          \
        CK_RV rv = pwf_gate(PWF_##name);                       \
        if (rv != CKR_OK) return rv;                           \
        if (pwf_refuses(b)) {                                  \
            pwf_done();                                        \
            return CKR_MECHANISM_INVALID;                      \
        }                                                      \
        PWF_FORWARD(name, arguments);                          \
    }
PWF_WITH_MECHANISM(PWF_DEFINE_WITH_MECHANISM)

/* ---- C_DeriveKey, whose ECDH key derivation function may be rewritten ---- */

/* CK_ECDH1_DERIVE_PARAMS.kdf values: ECDH derives naming `pwf_kdf_from` reach the target naming
 * `pwf_kdf_to` instead (both 0: none), so a test can make a token compute another KDF than the
 * one asked for, as a module with a different reading of a KDF's definition would. */
static _Atomic unsigned long pwf_kdf_from;
static _Atomic unsigned long pwf_kdf_to;

static CK_RV pwf_C_DeriveKey(CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE base,
                             CK_ATTRIBUTE_PTR template, CK_ULONG count, CK_OBJECT_HANDLE_PTR key)
{
    CK_RV rv = pwf_gate(PWF_C_DeriveKey);
    if (rv != CKR_OK) return rv;
    if (pwf_refuses(mechanism)) {
        pwf_done();
        return CKR_MECHANISM_INVALID;
    }
    unsigned long from = atomic_load(&pwf_kdf_from), to = atomic_load(&pwf_kdf_to);
    CK_MECHANISM rewritten;
    CK_ECDH1_DERIVE_PARAMS parameters;
    if (from != to && mechanism != NULL && mechanism->mechanism == CKM_ECDH1_DERIVE && mechanism->pParameter != NULL &&
        mechanism->ulParameterLen == sizeof parameters) {
        memcpy(&parameters, mechanism->pParameter, sizeof parameters);
        if (parameters.kdf == from) {
            parameters.kdf = to;
            rewritten = *mechanism;
            rewritten.pParameter = &parameters;
            mechanism = &rewritten;
        }
    }
    PWF_FORWARD(C_DeriveKey, (session, mechanism, base, template, count, key));
}

PWF_EXPORT void pwfault_rewrite_ecdh_kdf(unsigned long from, unsigned long to)
{
    atomic_store(&pwf_kdf_from, from);
    atomic_store(&pwf_kdf_to, to);
}

/* ---- Calls that end an operation, even when they fail ---- */

/* Single-part calls with output: a fault still runs the call, into scratch. */
#define PWF_SINGLE_PART(X) X(C_Encrypt) X(C_Decrypt) X(C_Digest) X(C_Sign) X(C_SignRecover) X(C_VerifyRecover)
#define PWF_DEFINE_SINGLE_PART(name)                                                                     \
    static CK_RV pwf_##name(CK_SESSION_HANDLE session, CK_BYTE_PTR input, CK_ULONG length, CK_BYTE_PTR output, \
                            CK_ULONG_PTR output_length)                                                  \
    {                                                                                                    \
        CK_RV rv = pwf_gate(PWF_##name);                                                                 \
        if (rv != CKR_OK) {                                                                              \
            if (pwf_begin_cleanup(rv)) {                                                                 \
                pwf_end_with_call(pwf_target->name, session, input, length);                            \
                pwf_done();                                                                              \
            }                                                                                            \
            return rv;                                                                                   \
        }                                                                                                \
        PWF_FORWARD(name, (session, input, length, output, output_length));                              \
    }
PWF_SINGLE_PART(PWF_DEFINE_SINGLE_PART)

/* Updates with output and finals: a fault ends the operation through its final call. */
#define PWF_ENDED_BY_FINAL(X)                                                               \
    X(C_EncryptUpdate, C_EncryptFinal) X(C_DecryptUpdate, C_DecryptFinal)                   \
    X(C_EncryptFinal, C_EncryptFinal) X(C_DecryptFinal, C_DecryptFinal)                     \
    X(C_DigestFinal, C_DigestFinal) X(C_SignFinal, C_SignFinal)
#define PWF_PARAMETERS_C_EncryptUpdate (CK_SESSION_HANDLE s, CK_BYTE_PTR a, CK_ULONG b, CK_BYTE_PTR c, CK_ULONG_PTR d)
#define PWF_ARGUMENTS_C_EncryptUpdate (s, a, b, c, d)
#define PWF_PARAMETERS_C_DecryptUpdate PWF_PARAMETERS_C_EncryptUpdate
#define PWF_ARGUMENTS_C_DecryptUpdate PWF_ARGUMENTS_C_EncryptUpdate
#define PWF_PARAMETERS_C_EncryptFinal (CK_SESSION_HANDLE s, CK_BYTE_PTR a, CK_ULONG_PTR b)
#define PWF_ARGUMENTS_C_EncryptFinal (s, a, b)
#define PWF_PARAMETERS_C_DecryptFinal PWF_PARAMETERS_C_EncryptFinal
#define PWF_ARGUMENTS_C_DecryptFinal PWF_ARGUMENTS_C_EncryptFinal
#define PWF_PARAMETERS_C_DigestFinal PWF_PARAMETERS_C_EncryptFinal
#define PWF_ARGUMENTS_C_DigestFinal PWF_ARGUMENTS_C_EncryptFinal
#define PWF_PARAMETERS_C_SignFinal PWF_PARAMETERS_C_EncryptFinal
#define PWF_ARGUMENTS_C_SignFinal PWF_ARGUMENTS_C_EncryptFinal
/* Updates without output: the same, their parameters differing only in kind. */
#define PWF_PARAMETERS_C_DigestUpdate (CK_SESSION_HANDLE s, CK_BYTE_PTR a, CK_ULONG b)
#define PWF_ARGUMENTS_C_DigestUpdate (s, a, b)
#define PWF_PARAMETERS_C_SignUpdate PWF_PARAMETERS_C_DigestUpdate
#define PWF_ARGUMENTS_C_SignUpdate PWF_ARGUMENTS_C_DigestUpdate
#define PWF_PARAMETERS_C_DigestKey (CK_SESSION_HANDLE s, CK_OBJECT_HANDLE a)
#define PWF_ARGUMENTS_C_DigestKey (s, a)
#define PWF_ENDED_BY_FINAL_NO_OUTPUT(X) X(C_DigestUpdate, C_DigestFinal) X(C_DigestKey, C_DigestFinal) X(C_SignUpdate, C_SignFinal)

#define PWF_DEFINE_ENDED_BY_FINAL(name, final)                                \
    static CK_RV pwf_##name PWF_PARAMETERS_##name                             \
    {                                                                         \
        CK_RV rv = pwf_gate(PWF_##name);                                      \
        if (rv != CKR_OK) {                                                   \
            if (pwf_begin_cleanup(rv)) {                                      \
                pwf_end_with_final(pwf_target->final, s);                     \
                pwf_done();                                                   \
            }                                                                 \
            return rv;                                                        \
        }                                                                     \
        PWF_FORWARD(name, PWF_ARGUMENTS_##name);                              \
    }
PWF_ENDED_BY_FINAL(PWF_DEFINE_ENDED_BY_FINAL)
PWF_ENDED_BY_FINAL_NO_OUTPUT(PWF_DEFINE_ENDED_BY_FINAL)

/* Calls without output that end their operation: a fault still runs them. */
#define PWF_RUN_ANYWAY(X)                                                                                       \
    X(C_Verify, (CK_SESSION_HANDLE s, CK_BYTE_PTR a, CK_ULONG b, CK_BYTE_PTR c, CK_ULONG d), (s, a, b, c, d)) \
    X(C_VerifyFinal, (CK_SESSION_HANDLE s, CK_BYTE_PTR a, CK_ULONG b), (s, a, b))                             \
    X(C_FindObjectsFinal, (CK_SESSION_HANDLE s), (s))
#define PWF_DEFINE_RUN_ANYWAY(name, parameters, arguments)                        \
    static CK_RV pwf_##name parameters                                            \
    {                                                                             \
        CK_RV rv = pwf_gate(PWF_##name);                                          \
        if (rv != CKR_OK) {                                                       \
            if (pwf_begin_cleanup(rv)) {                                          \
                if (pwf_target->name != NULL) (void)pwf_target->name arguments;   \
                pwf_done();                                                       \
            }                                                                     \
            return rv;                                                            \
        }                                                                         \
        PWF_FORWARD(name, arguments);                                             \
    }
PWF_RUN_ANYWAY(PWF_DEFINE_RUN_ANYWAY)

static CK_RV pwf_C_VerifyUpdate(CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG length)
{
    CK_RV rv = pwf_gate(PWF_C_VerifyUpdate);
    if (rv != CKR_OK) {
        if (pwf_begin_cleanup(rv)) {
            pwf_end_verify(session);
            pwf_done();
        }
        return rv;
    }
    PWF_FORWARD(C_VerifyUpdate, (session, part, length));
}

/* ---- Sessions ---- */

static CK_RV pwf_C_OpenSession(CK_SLOT_ID slot, CK_FLAGS flags, CK_VOID_PTR application, CK_NOTIFY notify,
                               CK_SESSION_HANDLE_PTR session)
{
    CK_RV rv = pwf_gate(PWF_C_OpenSession);
    if (rv != CKR_OK) return rv;
    rv = pwf_target->C_OpenSession(slot, flags, application, notify, session);
    if (rv == CKR_OK && session != NULL) pwf_track_session(*session, slot);
    pwf_done();
    return rv;
}

static CK_RV pwf_C_CloseSession(CK_SESSION_HANDLE session)
{
    CK_RV rv = pwf_gate(PWF_C_CloseSession);
    if (rv != CKR_OK) return rv;
    rv = pwf_target->C_CloseSession(session);
    if (rv == CKR_OK || rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED) pwf_untrack_sessions(session, 0, 0);
    pwf_done();
    return rv;
}

static CK_RV pwf_C_CloseAllSessions(CK_SLOT_ID slot)
{
    CK_RV rv = pwf_gate(PWF_C_CloseAllSessions);
    if (rv != CKR_OK) return rv;
    rv = pwf_target->C_CloseAllSessions(slot);
    if (rv == CKR_OK) pwf_untrack_sessions(0, slot, 1);
    pwf_done();
    return rv;
}

/* ---- Initialisation ---- */

/* The caller's arguments, locking callbacks or CKF_OS_LOCKING_OK, go to the target unchanged. */
static CK_RV pwf_C_Initialize(CK_VOID_PTR arguments)
{
    CK_RV rv = pwf_gate(PWF_C_Initialize);
    if (rv != CKR_OK) return rv;
    pthread_mutex_lock(&pwf_lifecycle);
    if (pwf_initialized) {
        rv = CKR_CRYPTOKI_ALREADY_INITIALIZED;
    } else {
        rv = pwf_target->C_Initialize(arguments);
        pwf_borrowed = 0;
        if (rv == CKR_CRYPTOKI_ALREADY_INITIALIZED && !pwf_private_copy) {
            pwf_borrowed = 1;
            rv = CKR_OK;
        }
        if (rv == CKR_OK) {
            pwf_initialized = 1;
            pwf_forget_sessions();
        }
    }
    pthread_mutex_unlock(&pwf_lifecycle);
    pwf_done();
    return rv;
}

static CK_RV pwf_C_Finalize(CK_VOID_PTR reserved)
{
    CK_RV rv = pwf_gate(PWF_C_Finalize);
    if (rv != CKR_OK) return rv;
    pthread_mutex_lock(&pwf_lifecycle);
    if (!pwf_initialized) {
        rv = CKR_CRYPTOKI_NOT_INITIALIZED;
    } else if (reserved != NULL) {
        rv = CKR_ARGUMENTS_BAD;
    } else if (pwf_borrowed) {
        /* Another user initialised the shared target and still uses it: end only our sessions. */
        pwf_close_tracked_sessions();
        rv = CKR_OK;
    } else {
        rv = pwf_target->C_Finalize(NULL);
    }
    if (rv == CKR_OK) {
        pwf_initialized = 0;
        pwf_borrowed = 0;
        pwf_forget_sessions();
    }
    pthread_mutex_unlock(&pwf_lifecycle);
    pwf_done();
    return rv;
}

/* ---- Loading the target ---- */

/* Copies `path` to a new file in TMPDIR (or /tmp) and returns its path in `copy`; 0 on success. */
static int pwf_copy_file(const char *path, char *copy, size_t copy_size)
{
    const char *directory = getenv("TMPDIR");
    if (directory == NULL || directory[0] == '\0') directory = "/tmp";
    snprintf(copy, copy_size, "%s/pwfault-target-XXXXXX", directory);
    int output = mkstemp(copy);
    if (output < 0) return -1;
    int input = open(path, O_RDONLY | O_CLOEXEC);
    int failed = input < 0;
    char buffer[65536];
    while (!failed) {
        ssize_t read_count = read(input, buffer, sizeof buffer);
        if (read_count < 0 && errno == EINTR) continue;
        if (read_count <= 0) {
            failed = read_count < 0;
            break;
        }
        for (ssize_t written = 0; written < read_count && !failed;) {
            ssize_t count = write(output, buffer + written, (size_t)(read_count - written));
            if (count < 0 && errno == EINTR) continue;
            if (count <= 0) failed = 1;
            else written += count;
        }
    }
    if (input >= 0) close(input);
    if (close(output) != 0) failed = 1;
    if (failed) {
        unlink(copy);
        return -1;
    }
    return 0;
}

static void pwf_install_function_list(void);

/* Loads the target once. The caller holds pwf_lifecycle. */
static CK_RV pwf_load_target(void)
{
    if (pwf_target != NULL) return CKR_OK;
    if (pwf_target_path[0] == '\0') {
        const char *path = getenv("PWFAULT_TARGET");
        snprintf(pwf_target_path, sizeof pwf_target_path, "%s", path && path[0] ? path : PWF_DEFAULT_TARGET);
    }
    if (pwf_private_copy < 0) {
        const char *shared = getenv("PWFAULT_SHARED_TARGET");
        pwf_private_copy = !(shared != NULL && strcmp(shared, "1") == 0);
    }
    void *library;
    if (pwf_private_copy) {
        /* A copy at another path is another object to the dynamic loader: its own globals, so
         * its own SoftHSM instance. The copy is unlinked once mapped. */
        char copy[4096];
        if (pwf_copy_file(pwf_target_path, copy, sizeof copy) != 0) {
            snprintf(pwf_error, sizeof pwf_error, "cannot copy %s: %s", pwf_target_path, strerror(errno));
            return CKR_GENERAL_ERROR;
        }
        library = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
        unlink(copy);
    } else {
        library = dlopen(pwf_target_path, RTLD_NOW | RTLD_LOCAL);
    }
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(pwf_error, sizeof pwf_error, "cannot load %s: %s", pwf_target_path, reason ? reason : "dlopen failed");
        return CKR_GENERAL_ERROR;
    }
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    CK_FUNCTION_LIST_PTR functions = NULL;
    CK_RV rv = get ? get(&functions) : CKR_GENERAL_ERROR;
    if (rv != CKR_OK || functions == NULL) {
        snprintf(pwf_error, sizeof pwf_error, "%s has no usable C_GetFunctionList", pwf_target_path);
        dlclose(library);
        return CKR_GENERAL_ERROR;
    }
    pwf_target = functions;
    pwf_install_function_list();
    return CKR_OK;
}

PWF_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
    if (list == NULL) return CKR_ARGUMENTS_BAD;
    pthread_mutex_lock(&pwf_lifecycle);
    int first = pwf_target == NULL;
    CK_RV rv = pwf_load_target();
    pthread_mutex_unlock(&pwf_lifecycle);
    if (rv != CKR_OK) {
        fprintf(stderr, "fault-injecting PKCS#11 module: %s\n", pwf_error);
        return rv;
    }
    const char *specification = getenv("PWFAULT_FAULTS");
    if (first && specification != NULL) {
        int bad = pwfault_apply(specification);
        if (bad != 0) {
            snprintf(pwf_error, sizeof pwf_error, "PWFAULT_FAULTS: entry %d is not understood", bad);
            fprintf(stderr, "fault-injecting PKCS#11 module: %s\n", pwf_error);
            return CKR_ARGUMENTS_BAD;
        }
    }
    *list = &pwf_function_list;
    return CKR_OK;
}

static void pwf_install_function_list(void)
{
    pwf_function_list.version.major = 2;
    pwf_function_list.version.minor = 40;
    pwf_function_list.C_GetFunctionList = C_GetFunctionList;
#define PWF_INSTALL(name) pwf_function_list.name = pwf_##name;
    PWF_FUNCTIONS(PWF_INSTALL)
#undef PWF_INSTALL
}

/* ---- Control ---- */

PWF_EXPORT int pwfault_set_target(const char *path, int private_copy)
{
    pthread_mutex_lock(&pwf_lifecycle);
    int loaded = pwf_target != NULL;
    if (!loaded) {
        snprintf(pwf_target_path, sizeof pwf_target_path, "%s", path ? path : PWF_DEFAULT_TARGET);
        pwf_private_copy = private_copy != 0;
    }
    pthread_mutex_unlock(&pwf_lifecycle);
    return loaded ? -1 : 0;
}

PWF_EXPORT int pwfault_set_error(const char *function, unsigned long rv, int times)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    pthread_mutex_lock(&pwf_lock);
    pwf_faults[index].error = rv;
    pwf_faults[index].error_times = rv == CKR_OK ? 0 : times;
    pthread_mutex_unlock(&pwf_lock);
    return 0;
}

/* Disarms the hang of `index` (of every function for PWF_ANY) and wakes the calls blocked in it.
 * The caller holds pwf_lock. */
static void pwf_release_locked(int index)
{
    pwf_faults[index].hang_times = 0;
    for (int i = 0; i < PWF_FUNCTION_COUNT; i++) {
        if (index != PWF_ANY && index != i) continue;
        if (index == PWF_ANY) pwf_faults[i].hang_times = 0;
        pwf_release_epoch[i]++;
    }
    pthread_cond_broadcast(&pwf_changed);
}

PWF_EXPORT int pwfault_hang(const char *function, int times, unsigned long timeout_ms)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    pthread_mutex_lock(&pwf_lock);
    if (times == 0) {
        pwf_release_locked(index);
    } else {
        pwf_faults[index].hang_times = times;
        pwf_faults[index].hang_timeout_ms = timeout_ms;
    }
    pthread_mutex_unlock(&pwf_lock);
    return 0;
}

PWF_EXPORT int pwfault_release(const char *function)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    pthread_mutex_lock(&pwf_lock);
    pwf_release_locked(index);
    pthread_mutex_unlock(&pwf_lock);
    return 0;
}

PWF_EXPORT long pwfault_hung(const char *function)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    long total = 0;
    pthread_mutex_lock(&pwf_lock);
    for (int i = 0; i < PWF_FUNCTION_COUNT; i++) {
        if (index == PWF_ANY || index == i) total += pwf_waiting[i];
    }
    pthread_mutex_unlock(&pwf_lock);
    return total;
}

PWF_EXPORT int pwfault_set_latency(const char *function, unsigned long microseconds)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    pthread_mutex_lock(&pwf_lock);
    pwf_faults[index].latency_us = microseconds;
    pthread_mutex_unlock(&pwf_lock);
    return 0;
}

PWF_EXPORT void pwfault_remove_device(int end_sessions)
{
    pthread_mutex_lock(&pwf_lock);
    pwf_removed = 1;
    pwf_removal_ends_sessions = end_sessions != 0;
    if (end_sessions) {
        /* New calls fail from here on; wait for those already inside the target to return. */
        while (pwf_inflight > 0) pthread_cond_wait(&pwf_changed, &pwf_lock);
    }
    pthread_mutex_unlock(&pwf_lock);
    if (end_sessions) {
        pthread_mutex_lock(&pwf_lifecycle);
        pwf_close_tracked_sessions();
        pthread_mutex_unlock(&pwf_lifecycle);
    }
}

PWF_EXPORT void pwfault_restore_device(void)
{
    /* Not while a removal is still closing sessions. */
    pthread_mutex_lock(&pwf_lifecycle);
    pthread_mutex_lock(&pwf_lock);
    pwf_removed = 0;
    pwf_removal_ends_sessions = 0;
    pthread_mutex_unlock(&pwf_lock);
    pthread_mutex_unlock(&pwf_lifecycle);
}

PWF_EXPORT void pwfault_clear(void)
{
    pwfault_restore_device();
    pwfault_rewrite_ecdh_kdf(0, 0);
    pthread_mutex_lock(&pwf_lock);
    pwf_release_locked(PWF_ANY);
    for (int i = 0; i <= PWF_ANY; i++) pwf_faults[i] = (pwf_fault){0};
    pwf_refused_count = 0;
    pthread_mutex_unlock(&pwf_lock);
}

PWF_EXPORT long pwfault_calls(const char *function)
{
    int index = pwf_index(function);
    if (index < 0) return -1;
    long total = 0;
    for (int i = 0; i < PWF_FUNCTION_COUNT; i++) {
        if (index == PWF_ANY || index == i) total += atomic_load_explicit(&pwf_call_counts[i], memory_order_relaxed);
    }
    return total;
}

PWF_EXPORT void pwfault_reset_calls(void)
{
    for (int i = 0; i < PWF_FUNCTION_COUNT; i++) atomic_store_explicit(&pwf_call_counts[i], 0, memory_order_relaxed);
}

PWF_EXPORT long pwfault_open_sessions(void)
{
    pthread_mutex_lock(&pwf_session_lock);
    long count = (long)pwf_session_count;
    pthread_mutex_unlock(&pwf_session_lock);
    return count;
}

PWF_EXPORT const char *pwfault_last_error(void)
{
    return pwf_error;
}

/* ---- Specifications: PWFAULT_FAULTS and PWFAULT_CONTROL ---- */

static const struct {
    const char *name;
    CK_RV value;
} pwf_return_values[] = {
    {"CKR_MECHANISM_INVALID", CKR_MECHANISM_INVALID},
    {"CKR_GENERAL_ERROR", CKR_GENERAL_ERROR},
    {"CKR_FUNCTION_FAILED", CKR_FUNCTION_FAILED},
    {"CKR_DEVICE_ERROR", CKR_DEVICE_ERROR},
    {"CKR_DEVICE_MEMORY", CKR_DEVICE_MEMORY},
    {"CKR_DEVICE_REMOVED", CKR_DEVICE_REMOVED},
    {"CKR_HOST_MEMORY", CKR_HOST_MEMORY},
    {"CKR_TOKEN_NOT_PRESENT", CKR_TOKEN_NOT_PRESENT},
    {"CKR_SESSION_CLOSED", CKR_SESSION_CLOSED},
    {"CKR_SESSION_COUNT", CKR_SESSION_COUNT},
    {"CKR_SESSION_HANDLE_INVALID", CKR_SESSION_HANDLE_INVALID},
    {"CKR_USER_NOT_LOGGED_IN", CKR_USER_NOT_LOGGED_IN},
    {"CKR_PIN_INCORRECT", CKR_PIN_INCORRECT},
    {"CKR_PIN_LOCKED", CKR_PIN_LOCKED},
    {"CKR_CRYPTOKI_NOT_INITIALIZED", CKR_CRYPTOKI_NOT_INITIALIZED},
    {"CKR_OPERATION_ACTIVE", CKR_OPERATION_ACTIVE},
    {"CKR_KEY_HANDLE_INVALID", CKR_KEY_HANDLE_INVALID},
    {"CKR_OBJECT_HANDLE_INVALID", CKR_OBJECT_HANDLE_INVALID},
    {"CKR_FUNCTION_CANCELED", CKR_FUNCTION_CANCELED},
};

static int pwf_parse_number(const char *text, unsigned long *value)
{
    if (text == NULL || *text == '\0') return -1;
    char *end = NULL;
    errno = 0;
    *value = strtoul(text, &end, 0);
    return errno == 0 && end != NULL && *end == '\0' ? 0 : -1;
}

static int pwf_parse_times(const char *text, int *times)
{
    if (text == NULL) return 0;  /* the default the caller set */
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < -1 || value > 1000000) return -1;
    *times = (int)value;
    return 0;
}

/* Reads one `NAME=ACTION[:A[:B]]` entry (modified in place); applies it when `apply`. 0 if valid. */
static int pwf_parse_entry(char *entry, int apply)
{
    char *equals = strchr(entry, '=');
    if (equals == NULL) return -1;
    *equals = '\0';
    char *name = entry, *action = equals + 1;
    char *first = NULL, *second = NULL;
    if ((first = strchr(action, ':')) != NULL) {
        *first++ = '\0';
        if ((second = strchr(first, ':')) != NULL) *second++ = '\0';
        if (second != NULL && strchr(second, ':') != NULL) return -1;
    }
    if (strcmp(name, "device") == 0) {
        if (strcmp(action, "removed") != 0 || second != NULL) return -1;
        int keep = first != NULL && strcmp(first, "keep-sessions") == 0;
        if (first != NULL && !keep) return -1;
        if (apply) pwfault_remove_device(!keep);
        return 0;
    }
    /* `mechanism=refused:0x1087`: every call naming the mechanism fails as a module without it would. */
    if (strcmp(name, "mechanism") == 0) {
        unsigned long mechanism = 0;
        if (strcmp(action, "refused") != 0 || second != NULL || first == NULL || first[0] == '-') return -1;
        if (pwf_parse_number(first, &mechanism) != 0) return -1;
        if (apply) return pwfault_refuse_mechanism(mechanism) == 0 ? 0 : -1;
        pthread_mutex_lock(&pwf_lock);
        int room = pwf_refused_count + ++pwf_refusals_checked <= PWF_MAX_REFUSED;
        pthread_mutex_unlock(&pwf_lock);
        return room ? 0 : -1;
    }
    if (pwf_index(name) < 0) return -1;
    if (strcmp(action, "error") == 0) {
        unsigned long rv = 0;
        int found = 0;
        for (size_t i = 0; first != NULL && i < sizeof pwf_return_values / sizeof pwf_return_values[0]; i++) {
            if (strcmp(first, pwf_return_values[i].name) == 0) {
                rv = pwf_return_values[i].value;
                found = 1;
            }
        }
        if (!found && pwf_parse_number(first, &rv) != 0) return -1;
        int times = -1;
        if (pwf_parse_times(second, &times) != 0) return -1;
        if (apply) pwfault_set_error(name, rv, times);
        return 0;
    }
    if (strcmp(action, "hang") == 0) {
        unsigned long timeout = 0;
        if (first != NULL && pwf_parse_number(first, &timeout) != 0) return -1;
        int times = -1;
        if (pwf_parse_times(second, &times) != 0) return -1;
        if (apply) pwfault_hang(name, times, timeout);
        return 0;
    }
    if (strcmp(action, "latency") == 0) {
        unsigned long microseconds = 0;
        if (second != NULL || pwf_parse_number(first, &microseconds) != 0) return -1;
        if (apply) pwfault_set_latency(name, microseconds);
        return 0;
    }
    return -1;
}

/* Runs pwf_parse_entry over every entry; returns 0 or the 1-based index of the first bad one. */
static int pwf_parse_specification(const char *specification, int apply)
{
    char *copy = strdup(specification);
    if (copy == NULL) return 1;
    int index = 0, bad = 0;
    char *saved = NULL;
    for (char *entry = strtok_r(copy, ";\n", &saved); entry != NULL && !bad; entry = strtok_r(NULL, ";\n", &saved)) {
        while (*entry == ' ' || *entry == '\t' || *entry == '\r') entry++;
        size_t length = strlen(entry);
        while (length > 0 && (entry[length - 1] == ' ' || entry[length - 1] == '\t' || entry[length - 1] == '\r')) {
            entry[--length] = '\0';
        }
        if (length == 0 || entry[0] == '#') continue;
        index++;
        if (pwf_parse_entry(entry, apply) != 0) bad = index;
    }
    free(copy);
    return bad;
}

PWF_EXPORT int pwfault_apply(const char *specification)
{
    if (specification == NULL) return 0;
    pwf_refusals_checked = 0;
    int bad = pwf_parse_specification(specification, 0);
    if (bad != 0) return bad;
    return pwf_parse_specification(specification, 1);
}

static void pwf_poll_control_file(void)
{
    struct stat now;
    if (stat(pwf_control_path, &now) != 0) return;
    pthread_mutex_lock(&pwf_control_lock);
    int changed = now.st_ino != pwf_control_seen.st_ino || now.st_size != pwf_control_seen.st_size ||
                  now.st_mtim.tv_sec != pwf_control_seen.st_mtim.tv_sec ||
                  now.st_mtim.tv_nsec != pwf_control_seen.st_mtim.tv_nsec;
    if (changed) {
        pwf_control_seen = now;
        FILE *file = fopen(pwf_control_path, "re");
        if (file != NULL) {
            char specification[8192];
            size_t length = fread(specification, 1, sizeof specification - 1, file);
            fclose(file);
            specification[length] = '\0';
            pwfault_clear();
            int bad = pwfault_apply(specification);
            if (bad != 0) {
                fprintf(stderr, "fault-injecting PKCS#11 module: %s: entry %d is not understood\n", pwf_control_path, bad);
            }
        }
    }
    pthread_mutex_unlock(&pwf_control_lock);
}
