// The test PKI, token forge and sample payloads moved to PaywardenSandbox, where the `paywarden`
// binary's development commands use them too; every test that imports PaywardenTesting keeps them.
@_exported import PaywardenSandbox
