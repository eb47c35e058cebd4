import Foundation
import KeyCustody
import PKCS11
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Two admins acting on one key at once (on two machines, sharing the HSM and the database): each
/// outcome they are told must be the one that stands.
extension LifecycleTests {
    /// A destroy of a pending key is held in the HSM while another admin imports the key's
    /// certificate: either the import activates the key and the key stays, or the destroy wins and
    /// the import is refused. Never "activated" for a key that is then destroyed.
    @Test func aDestroyRacingACertificateImportLeavesTheKeyWholeOrGone() async throws {
        let device = try FaultInjectingPKCS11.make()
        let token = try await TestToken.make(labelPrefix: "race", backend: .softHSM)
        let hsm = try await device.open(token)
        let directory = NSTemporaryDirectory() + "paywarden-race-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let database = try SQLiteDriver.open(path: directory + "/keys.sqlite")
        _ = try await database.migrate()
        let ca = try TestCertificateAuthority()
        let merchantID = "merchant.com.example.race"
        let first = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: ca.issuers)
        let (pending, csr) = try await first.create(merchantID: merchantID, purpose: .processing, algorithm: .ec)
        let certificate = try ca.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)

        // The destroy has read the key (pending) and is in the HSM when the other admin imports.
        try device.hang("C_DestroyObject", times: 1)
        let destroying = Task { try await first.destroy(pending.id.hex) }
        try await device.waitUntilHung("C_DestroyObject")
        let second = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: ca.issuers)
        let imported: Result<MerchantKey, any Error>
        do {
            imported = .success(try await second.importCertificate(MerchantCertificate(bytes: certificate)).key)
        } catch {
            imported = .failure(error)
        }
        try device.release()
        let destroyed: Result<MerchantKey, any Error>
        do {
            destroyed = .success(try await destroying.value)
        } catch {
            destroyed = .failure(error)
        }

        let remaining = try await first.list().filter { $0.id == pending.id }
        switch imported {
        case .success(let key):
            #expect(key.state == .active)
            #expect(remaining.map(\.state) == [.active], "the import said activated, but the key is \(remaining.map(\.state))")
            if case .success = destroyed { Issue.record("both the destroy and the import succeeded") }
        case .failure(let error):
            #expect(remaining.isEmpty, "the import was refused (\(error)), yet the key stayed: \(remaining.map(\.state))")
            if case .failure(let failure) = destroyed { Issue.record("both were refused: \(error); \(failure)") }
        }
        await hsm.close()
        token.destroy()
    }
}
