#include "fuzz_driver.h"

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*one)(const uint8_t *data, size_t size));

int pw_fuzz_run(int argc, char **argv, pw_fuzz_one_input one)
{
    return LLVMFuzzerRunDriver(&argc, &argv, one);
}
