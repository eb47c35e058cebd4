// The test tokens, the fault-injecting module and the resources a test releases live below the
// server in PaywardenHSMTesting, so that the PKCS#11 tests link nothing above PKCS11; tests of
// the upper layers get them from here as before.
@_exported import PaywardenHSMTesting
