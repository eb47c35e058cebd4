import PKCS11
import PaywardenHSMTesting
import Testing

extension HSMTests {
    /// The HSM's login moves through one state: logged in, re-established by a recycle, closed.
    @Suite struct HSMLoginState {
        @Test func aRecycleKeepsTheLoginAndRenewsTheHandles() async throws {
            let hsm = try await TestToken.make().open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "kept", algorithm: .ecP256, usage: [.derive]))
            #expect(hsm.isLoggedIn)
            let recycles = hsm.recycles
            try await hsm.recycle()
            #expect(hsm.isLoggedIn)
            #expect(hsm.recycles == recycles + 1)
            try await hsm.checkHealth()
            // The handle cached before the recycle is void; the key is found again in the new generation.
            #expect(try await hsm.key(key.id).id == key.id)
            await hsm.close()
        }

        @Test func aClosedHSMIsNeverReestablished() async throws {
            let hsm = try await TestToken.make().open()
            await hsm.close()
            #expect(!hsm.isLoggedIn)
            let refused = await #expect(throws: PKCS11Error.self) { try await hsm.recycle() }
            #expect(refused?.code == .poolStopped, "\(String(describing: refused))")
            await #expect(throws: PKCS11Error.self) { try await hsm.checkHealth() }
            await hsm.close()  // a second close finds nothing to do
        }
    }
}
