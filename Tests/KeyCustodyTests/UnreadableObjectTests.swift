import ApplePay
import Foundation
import KeyCustody
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// One damaged record, certificate or key object must not take the service down: the key it belongs to is
/// reported by id, and every other key stays listed and usable.
@Suite(.serialized, .releasesTestResources)
struct UnreadableObjectTests {
    @Test func aDamagedRecordOrCertificateIsReportedAndTheOtherKeysStayUsable() async throws {
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers)
        var certified: [MerchantKey] = []
        for name in ["good", "record", "certificate", "half"] {
            let merchantID = "merchant.com.example.\(name)"
            let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: .ec)
            let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
            certified.append(try await store.importCertificate(MerchantCertificate(bytes: certificate)).key)
        }
        let (good, damagedRecord, damagedCertificate, withoutPublicHalf) = (certified[0], certified[1], certified[2], certified[3])
        let keys = HSMPaymentKeys(hsm: hsm)
        #expect(try await keys.reload(from: store) == 4)

        // A record that no longer decodes and a certificate that is not one, as a failed write by
        // another tool might leave them in the database.
        let records = TestKeyRecords.of(hsm)
        for var row in try await records.keyRecords() {
            let revision = row.revision
            if row.keyID == damagedRecord.id.hex {
                row.record = Array("{\"state\":".utf8)
            } else if row.keyID == damagedCertificate.id.hex {
                row.certificate = [0x30, 0x03, 0x02, 0x01, 0x01]
            } else {
                continue
            }
            row.revision += 1
            #expect(try await records.updateKeyRecord(row, expectedRevision: revision))
        }
        try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
            // A private key whose public object is gone.
            for handle in try session.tokenObjects(.publicKey, id: withoutPublicHalf.id) { try session.destroyObject(handle) }
        }

        let inventory = try await store.inventory()
        #expect(inventory.keys.map(\.id) == [good.id])
        #expect(
            Set(inventory.unreadable.map(\.id)) == [damagedRecord.id, damagedCertificate.id, withoutPublicHalf.id],
            "\(inventory.unreadable)")
        for key in inventory.unreadable { #expect(key.reason.contains(key.id.hex) || key.reason.contains("key object")) }
        #expect(try await store.list().map(\.id) == [good.id])

        // The key map keeps the entries the damaged keys had: their keys in the HSM still work.
        #expect(keys.reload(from: inventory) == 4)
        #expect(keys.key(forPublicKeyHash: Array(Data(base64Encoded: damagedRecord.publicKeyHash)!)) != nil)
        #expect(keys.key(forPublicKeyHash: Array(Data(base64Encoded: good.publicKeyHash)!)) != nil)
    }

    /// Another application's keys in a shared token are not Paywarden's to report, and hide nothing.
    @Test func foreignKeysWithoutRecordsAreIgnored() async throws {
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers)
        let (ours, _) = try await store.create(merchantID: "merchant.com.example.ours", purpose: .processing, algorithm: .ec)
        let foreign = try await hsm.generateKeyPair(KeySpecification(label: "foreign", algorithm: .ecP256, usage: [.sign]))
        try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
            for handle in try session.tokenObjects(.publicKey, id: foreign.id) { try session.destroyObject(handle) }
        }
        let inventory = try await store.inventory()
        #expect(inventory.keys.map(\.id) == [ours.id])
        #expect(inventory.unreadable.isEmpty)
    }
}
