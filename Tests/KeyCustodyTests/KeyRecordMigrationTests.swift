import Foundation
import KeyCustody
import PKCS11
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// Tokens an earlier build managed keep their records as `CKO_DATA` objects (and certificates as
/// `CKO_CERTIFICATE` objects) beside the keys. The first read copies them into the database, which
/// is the only place written from then on; the token's objects go when their key is destroyed.
@Suite(.serialized, .releasesTestResources)
struct KeyRecordMigrationTests {
    /// SoftHSM only: NSS softokn refuses `CKO_DATA` token objects, so no NSS token has them.
    @Test func recordsKeptInASoftHSMTokenMoveToTheDatabaseOnFirstUse() async throws {
        let hsm = try await SoftHSMTestToken.make(labelPrefix: "legacy").open()
        // Keys made and certified as before, their records then planted in the token the way an
        // earlier build wrote them, and the database forgotten.
        let before = InMemoryDatabase()
        let earlier = MerchantKeyStore(hsm: hsm, records: before, certificateIssuers: TestCertificateAuthority.shared.issuers)
        let active = try await certified(earlier, "merchant.com.example.legacy")
        let (pending, _) = try await earlier.create(merchantID: "merchant.com.example.pending", purpose: .processing, algorithm: .ec)
        let rows = try await before.keyRecords()
        try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
            for row in rows {
                guard let id = KeyIdentifier(hex: row.keyID) else { throw .invalidInput("not a key id") }
                _ = try session.createObject([
                    .objectClass(.data), .bool(.token, true), .bool(.private, true), .string(.application, "paywarden"),
                    .label("paywarden-key:" + row.keyID), Attribute(.value, bytes: row.record),
                ])
                if let certificate = row.certificate {
                    _ = try session.createObject([
                        .objectClass(.certificate), .ulong(.certificateType, CertificateType.x509.rawValue), .bool(.token, true),
                        .bool(.private, false), .id(id), .label("legacy"), Attribute(.subject, bytes: [0x30, 0x00]),
                        Attribute(.value, bytes: certificate),
                    ])
                }
            }
        }

        let database = InMemoryDatabase()
        let store = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: TestCertificateAuthority.shared.issuers)
        let listed = try await store.list()
        #expect(Set(listed.map(\.id)) == [active.id, pending.id])
        let activeListed = listed.first { $0.id == active.id }
        let pendingListed = listed.first { $0.id == pending.id }
        #expect(activeListed?.state == .active && activeListed?.certificate?.der == active.certificate?.der)
        #expect(pendingListed?.state == .pending && pendingListed?.certificate == nil)
        let migrated = try await database.keyRecords()
        #expect(Set(migrated.map(\.keyID)) == [active.id.hex, pending.id.hex])
        #expect(migrated.first { $0.keyID == active.id.hex }?.certificate == active.certificate?.der)

        // From then on the database decides: a retirement is written there, and the token's stale
        // "active" record is not read back over it.
        #expect(try await store.retire(active.id.hex).state == .retired)
        #expect(try await store.key(active.id.hex).state == .retired)
        let another = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: TestCertificateAuthority.shared.issuers)
        #expect(try await another.key(active.id.hex).state == .retired)

        // Destroying the key takes the token's old objects with it.
        _ = try await store.destroy(active.id.hex)
        let left = try await hsm.withSession { session throws(PKCS11Error) in
            (
                try session.findObjects([.objectClass(.data), .label("paywarden-key:" + active.id.hex)]).count,
                try session.findObjects([.objectClass(.certificate), .id(active.id)]).count
            )
        }
        #expect(left == (0, 0))
        #expect(try await database.keyRecords().map(\.keyID) == [pending.id.hex])
    }

    /// Another admin or instance changes the record between this command's read and its write: the
    /// write is refused and changes nothing, rather than overwriting the other change.
    @Test func aRecordChangedMeanwhileIsNotOverwritten() async throws {
        let hsm = try await TestToken.make().open()
        let database = InMemoryDatabase()
        let key = try await certified(
            MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: TestCertificateAuthority.shared.issuers),
            "merchant.com.example.race")
        let racing = RacingRecords(database)
        let store = MerchantKeyStore(hsm: hsm, records: racing, certificateIssuers: TestCertificateAuthority.shared.issuers)
        await #expect(throws: CustodyError.self) { _ = try await store.retire(key.id.hex) }
        let row = try #require(try await database.keyRecords().first)
        #expect(row.record == Array("written meanwhile".utf8), "the other writer's change was overwritten")
        #expect(racing.updates == 1)
    }

    /// The record is deleted first (a compare-and-set on the revision read), then the key in the
    /// HSM: when the database fails, nothing is destroyed, the key stays whole and listed, and the
    /// admin is told the database could not be used.
    @Test func aDestroyWhoseRecordCannotBeDeletedDestroysNothing() async throws {
        let hsm = try await TestToken.make().open()
        let database = InMemoryDatabase()
        let store = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: TestCertificateAuthority.shared.issuers)
        let (key, _) = try await store.create(merchantID: "merchant.com.example.outage", purpose: .processing, algorithm: .ec)
        let failing = MerchantKeyStore(
            hsm: hsm, records: DeletionFailingRecords(database), certificateIssuers: TestCertificateAuthority.shared.issuers)
        let error = await #expect(throws: CustodyError.self) { _ = try await failing.destroy(key.id.hex) }
        #expect(error?.code == .databaseUnavailable, "\(String(describing: error))")
        #expect(try await hsm.keys().map(\.id) == [key.id], "the key was destroyed although its record stayed")
        #expect(try await database.keyRecords().map(\.keyID) == [key.id.hex])
        #expect(try await store.list().map(\.id) == [key.id], "the key is no longer listed")
    }

    private func certified(_ store: MerchantKeyStore, _ merchantID: String) async throws -> MerchantKey {
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: .ec)
        let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        return try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
    }
}

/// Forwards to a database, but just before the first update another writer changes the row.
private final class RacingRecords: KeyRecordStore {
    let database: InMemoryDatabase
    private let count = Mutex(0)

    init(_ database: InMemoryDatabase) { self.database = database }

    var updates: Int { count.withLock { $0 } }

    func upstreamClientKeys() async throws(StorageError) -> [UpstreamClientKeyRecord] { try await database.upstreamClientKeys() }
    func recordUpstreamClientKey(_ record: UpstreamClientKeyRecord) async throws(StorageError) -> Bool {
        try await database.recordUpstreamClientKey(record)
    }
    func keyRecords() async throws(StorageError) -> [StoredKeyRecord] { try await database.keyRecords() }
    func insertKeyRecord(_ record: StoredKeyRecord) async throws(StorageError) -> Bool { try await database.insertKeyRecord(record) }
    func deleteKeyRecord(keyID: String, expectedRevision: Int) async throws(StorageError) -> Bool {
        try await database.deleteKeyRecord(keyID: keyID, expectedRevision: expectedRevision)
    }

    func updateKeyRecord(_ record: StoredKeyRecord, expectedRevision: Int) async throws(StorageError) -> Bool {
        count.withLock { $0 += 1 }
        if var current = try await database.keyRecords().first(where: { $0.keyID == record.keyID }) {
            let revision = current.revision
            current.record = Array("written meanwhile".utf8)
            current.revision += 1
            _ = try await database.updateKeyRecord(current, expectedRevision: revision)
        }
        return try await database.updateKeyRecord(record, expectedRevision: expectedRevision)
    }
}

/// Forwards to a database whose deletes fail as a database outage does.
private struct DeletionFailingRecords: KeyRecordStore {
    let database: InMemoryDatabase

    init(_ database: InMemoryDatabase) { self.database = database }

    func keyRecords() async throws(StorageError) -> [StoredKeyRecord] { try await database.keyRecords() }
    func insertKeyRecord(_ record: StoredKeyRecord) async throws(StorageError) -> Bool { try await database.insertKeyRecord(record) }
    func upstreamClientKeys() async throws(StorageError) -> [UpstreamClientKeyRecord] { try await database.upstreamClientKeys() }
    func recordUpstreamClientKey(_ record: UpstreamClientKeyRecord) async throws(StorageError) -> Bool {
        try await database.recordUpstreamClientKey(record)
    }
    func updateKeyRecord(_ record: StoredKeyRecord, expectedRevision: Int) async throws(StorageError) -> Bool {
        try await database.updateKeyRecord(record, expectedRevision: expectedRevision)
    }
    func deleteKeyRecord(keyID: String, expectedRevision: Int) async throws(StorageError) -> Bool {
        throw StorageError(.unavailable, "the database did not answer in time")
    }
}
