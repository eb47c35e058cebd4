#include "cpkcs11.h"

#include <dlfcn.h>
#if defined(__GLIBC__)
#endif
#include <stdio.h>
#include <string.h>

int cpkcs11_load(const char *path, cpkcs11_module *out, char *reason, size_t reason_len)
{
    memset(out, 0, sizeof *out);
    /* RTLD_LOCAL keeps the module's symbols (and its own OpenSSL) out of the global namespace. */
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *error = dlerror();
        snprintf(reason, reason_len, "%s", error ? error : "dlopen failed");
        return 1;
    }
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    if (get == NULL) {
        snprintf(reason, reason_len, "%s does not export C_GetFunctionList", path);
        dlclose(library);
        return 2;
    }
    CK_FUNCTION_LIST_PTR functions = NULL;
    CK_RV rv = get(&functions);
    if (rv != CKR_OK || functions == NULL) {
        snprintf(reason, reason_len, "C_GetFunctionList returned 0x%lx", (unsigned long)rv);
        dlclose(library);
        return 3;
    }
    out->library = library;
    out->functions = functions;
    return 0;
}

void cpkcs11_unload(cpkcs11_module *module)
{
    if (module->library != NULL) dlclose(module->library);
    module->library = NULL;
    module->functions = NULL;
}

CK_RV cpkcs11_initialize(CK_FUNCTION_LIST_PTR functions, const char *reserved)
{
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    /* The module only reads it, during the call; the header types it as writable. */
    args.pReserved = (CK_VOID_PTR)reserved;
    return functions->C_Initialize(&args);
}
