#include <p11-kit/pkcs11.h>
