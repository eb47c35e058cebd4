#ifndef FAULT_INJECTING_PKCS11_H
#define FAULT_INJECTING_PKCS11_H

/*
 * A PKCS#11 module for tests (never for production): it forwards every call to a real module
 * (SoftHSM by default) and, per function, fails, hangs or slows down on command, and counts calls.
 *
 * Built by SwiftPM as the dynamic library product `PaywardenFaultInjectingPKCS11`
 * (libPaywardenFaultInjectingPKCS11.so beside the test bundle). A test loads it as the HSM's
 * module and controls it by dlopen()ing the same path: the handle, and so the state, is shared.
 * Each copy of the file at another path is a separate device with its own state.
 *
 * The target: `pwfault_set_target`, else PWFAULT_TARGET, else
 * /usr/lib/softhsm/libsofthsm2.so. By default the module loads a private copy of the target,
 * so its C_Initialize and C_Finalize (and a removal) affect only the sessions opened through it,
 * never another user of the same library in the process; the copy still reads SOFTHSM2_CONF
 * and so sees the same tokens. PWFAULT_SHARED_TARGET=1 (or private_copy = 0) loads the
 * target itself instead; a C_Initialize that finds it initialised then borrows it, and the
 * matching C_Finalize only closes the sessions opened through this module.
 *
 * Function names are the PKCS#11 names ("C_Decrypt"); "*" names every function. Every call
 * passes, in order: the count, a hang, the latency, then the error (device removed, else the
 * function's own error, else the one set for "*"). An injected error is returned without
 * calling the target, except that an operation the call would have ended (C_Decrypt,
 * C_DigestUpdate, C_SignFinal, C_FindObjectsFinal...) is still ended there, as the standard says
 * an error ends it, so the session is not left with CKR_OPERATION_ACTIVE.
 *
 * Setters return 0, or -1 for an unknown function name.
 */

#ifdef __cplusplus
extern "C" {
#endif

/* Chooses the module to forward to; call before the module is first loaded (returns -1 after). */
int pwfault_set_target(const char *path, int private_copy);

/* The next `times` calls of `function` return `rv` (times < 0: every call until cleared; 0 clears). */
int pwfault_set_error(const char *function, unsigned long rv, int times);

/* The next `times` calls (times < 0: every call) block until released, or for at most
 * `timeout_ms` each when it is not 0. times == 0 clears. */
int pwfault_hang(const char *function, int times, unsigned long timeout_ms);

/* Ends the hang of `function` ("*" or NULL: every hang) and wakes the calls blocked in it. */
int pwfault_release(const char *function);

/* How many calls of `function` ("*" or NULL: of all) are blocked in a hang now. */
long pwfault_hung(const char *function);

/* Sleeps `microseconds` before each call of `function` (0 clears). */
int pwfault_set_latency(const char *function, unsigned long microseconds);

/* Every function but C_Initialize, C_Finalize and C_GetInfo returns CKR_DEVICE_REMOVED until
 * restored. With end_sessions, waits for the calls in the target to return, then closes every
 * session opened through this module, which logs the token out: after the restore the old
 * session handles are invalid, as after a real power cycle. */
void pwfault_remove_device(int end_sessions);
void pwfault_restore_device(void);

/* ECDH derives (CKM_ECDH1_DERIVE) whose CK_ECDH1_DERIVE_PARAMS.kdf is `from` reach the target
 * with `to` instead, so the token computes another KDF than the one asked for (0, 0: none). */
void pwfault_rewrite_ecdh_kdf(unsigned long from, unsigned long to);

/* Every call that takes `mechanism` (C_SignInit, C_DeriveKey, C_GenerateKeyPair...) returns
 * CKR_MECHANISM_INVALID without reaching the target, as on a module without it. Returns -1 when
 * 16 are refused already. */
int pwfault_refuse_mechanism(unsigned long mechanism);

/* Restores the device, releases every hang and clears every error, latency, KDF rewrite and mechanism refusal. Counts stay. */
void pwfault_clear(void);

/* Calls of `function` ("*" or NULL: of all) since load or the last reset, faulted ones included. */
long pwfault_calls(const char *function);
void pwfault_reset_calls(void);

/* Sessions opened through this module and not closed. */
long pwfault_open_sessions(void);

/*
 * Applies a fault specification (what PWFAULT_FAULTS holds at load, for a module in a child
 * process): entries separated by ';' or newlines, each `FUNCTION=error:RV[:TIMES]`,
 * `FUNCTION=hang[:TIMEOUT_MS[:TIMES]]`, `FUNCTION=latency:MICROSECONDS`, `device=removed`,
 * `device=removed:keep-sessions` or `mechanism=refused:CKM` (as pwfault_refuse_mechanism; CKM a
 * number, 0x1087). RV is a number (0x32) or a name (CKR_DEVICE_REMOVED).
 * Returns 0, or the 1-based index of the first entry it could not read (nothing is applied then).
 * When PWFAULT_CONTROL names a file, the module clears its faults and applies the
 * file's specification whenever the file changes (write a new file and rename it over).
 */
int pwfault_apply(const char *specification);

/* Why the target could not be loaded, or "" (for a C_GetFunctionList that failed). */
const char *pwfault_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
