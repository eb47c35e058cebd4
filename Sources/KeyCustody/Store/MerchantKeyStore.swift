import Crypto
import Foundation
import PKCS11
import PaywardenPrimitives

import protocol PaywardenStorage.KeyRecordStore

/// Merchant keys in the HSM, with their records and certificates in the database.
///
/// The HSM says which keys exist; the database says what Paywarden knows of each (purpose,
/// merchant, state, certificate), so no HSM has to store data objects (NSS softokn refuses them).
/// Records that earlier builds kept in the token as `CKO_DATA` objects are copied to the database
/// the first time they are read (see ``CustodyObjects``).
///
/// Every mutation checks everything first and writes last, undoing its own earlier writes when a
/// later one fails, so a refused or failed action leaves the token and the records as they were.
/// Callers on one machine serialise mutations with ``AdminLock``; record writes are
/// compare-and-set, so admins on two machines never overwrite each other.
public final class MerchantKeyStore: Sendable {
    public let hsm: HSM
    /// The certification authorities imported certificates must chain to.
    public let certificateIssuers: CertificateIssuers
    private let records: KeyRecordTable
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - records: the database's key records, shared by every instance using this HSM.
    ///   - certificateIssuers: Apple's pinned authorities unless a test or a sandbox replaces them.
    public init(
        hsm: HSM, records: any KeyRecordStore, certificateIssuers: CertificateIssuers = .apple,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.hsm = hsm
        self.records = KeyRecordTable(store: records)
        self.certificateIssuers = certificateIssuers
        self.clock = clock
    }

    public var now: Date { clock() }

    // MARK: Reading

    /// Every key Paywarden manages and can read, oldest first.
    public func list() async throws(CustodyError) -> [MerchantKey] {
        try await inventory().keys
    }

    /// Every key Paywarden manages, oldest first, and those it manages but cannot read (a record
    /// or certificate that does not decode, a key object without its public half): one bad object
    /// leaves the others usable, and is reported by key.
    public func inventory() async throws(CustodyError) -> KeyInventory {
        let snapshot = try await self.snapshot()
        return KeyInventory(
            keys: snapshot.managed.sorted { ($0.record.createdAt, $0.id) < ($1.record.createdAt, $1.id) },
            unreadable: snapshot.unreadable.sorted { $0.id < $1.id }, unadopted: snapshot.unadopted.sorted { $0.id < $1.id })
    }

    /// The key `reference` names: a full key id in hex, a unique prefix of at least 6 hex digits,
    /// or a `pkcs11:` URI with `id=`.
    public func key(_ reference: String) async throws(CustodyError) -> MerchantKey {
        let keys = try await list()
        let wanted: String
        if reference.hasPrefix("pkcs11:") {
            guard let id = (try? PKCS11URI(reference))?.id else {
                throw CustodyError(.invalidArgument, "the pkcs11: URI \(reference) names no id=")
            }
            wanted = id.hex
        } else {
            wanted = reference.lowercased()
        }
        guard wanted.count >= 6, wanted.allSatisfy(\.isHexDigit) else {
            throw CustodyError(
                .invalidArgument, "\"\(reference)\" is not a key id; give the id `paywarden keys list` shows (at least 6 hex digits)")
        }
        let matches = keys.filter { $0.id.hex.hasPrefix(wanted) }
        switch matches.count {
        case 1: return matches[0]
        case 0: throw CustodyError(.keyNotFound, "no Paywarden key has id \(reference); run `paywarden keys list`")
        default: throw CustodyError(.ambiguousKey, "\(reference) matches \(matches.count) keys; give more of the id")
        }
    }

    /// The key each processor upstream's client presents, as the service last recorded it.
    public func upstreamKeysInUse() async throws(CustodyError) -> [UpstreamKeyInUse] {
        try await records.upstreamKeysInUse()
    }

    /// Records that the upstream client of `upstream` (a message format) presents key `id` from
    /// now on; the time of an earlier record of the same key is kept.
    public func recordUpstreamKeyInUse(_ id: KeyIdentifier, upstream: String) async throws(CustodyError) {
        try await records.recordUpstreamKeyInUse(id, upstream: upstream, at: now)
    }

    // MARK: Creating

    /// Generates a key in the HSM for `merchantID`, records it as pending, and returns it with
    /// the PEM CSR the HSM signed. If anything after generation fails, the key is destroyed.
    public func create(
        merchantID: String, purpose: KeyPurpose, algorithm: KeyAlgorithmChoice, predecessor: KeyIdentifier? = nil
    ) async throws(CustodyError) -> (key: MerchantKey, csr: String) {
        try Self.checkCreation(merchantID: merchantID, purpose: purpose, algorithm: algorithm)
        let specification = KeySpecification(
            label: "\(merchantID) \(purpose.rawValue)",
            algorithm: algorithm == .ec ? .ecP256 : .rsa2048,
            // Sign as well, for the key's own CSR; a processing key loses it once the CSR is signed.
            usage: Self.usage(purpose: purpose, algorithm: algorithm).union(.sign)
        )
        let object: KeyObject
        do { object = try await hsm.generateKeyPair(specification) } catch { throw CustodyError(error) }
        do {
            let record = KeyRecord(
                purpose: purpose, merchantID: merchantID, merchantIdentifierHash: Self.merchantIdentifierHash(merchantID),
                state: .pending, origin: .generated, createdAt: now, predecessor: predecessor?.hex
            )
            let csr = try await CertificateRequestBuilder.pem(hsm: hsm, key: object, merchantID: merchantID)
            let withdrawn = specification.usage.subtracting(Self.usage(purpose: purpose, algorithm: algorithm))
            let key = try await hsm.creatingTokenObjects(retryingAfterLostLogin: false) { session throws(PKCS11Error) -> KeyObject in
                // A processing key signs nothing after its CSR: a signing permission left on it
                // would let whoever reaches the token sign with a key Apple certified for tokens.
                try session.withdraw(withdrawn, from: object.id)
                return try session.privateKey(id: object.id) ?? object
            }
            guard let written = try await records.insert(record, certificate: nil, for: object.id, at: now) else {
                throw CustodyError(.invalidState, "key \(object.id) already has a record in the database; nothing was created")
            }
            return (try Self.merchantKey(key, written, certificate: nil), csr)
        } catch {
            _ = try? await hsm.destroyKeyPair(object.id)
            if let error = error as? CustodyError { throw error }
            if let error = error as? PKCS11Error { throw CustodyError(error) }
            throw CustodyError(.hsm, "the CSR could not be built: \(error)")
        }
    }

    /// Creates the successor of `merchantID`'s current processing key, of the same type. The
    /// current key stays active: Apple keeps sending tokens for it until the new certificate is
    /// activated and for a while after.
    public func rotate(merchantID: String) async throws(CustodyError) -> (successor: MerchantKey, csr: String, current: MerchantKey) {
        let current = try await currentProcessingKey(merchantID: merchantID)
        let (successor, csr) = try await create(
            merchantID: merchantID, purpose: .processing,
            algorithm: current.key.algorithm == .ecP256 ? .ec : .rsa, predecessor: current.id
        )
        return (successor, csr, current)
    }

    /// The active processing key of `merchantID` that a rotation succeeds: the one whose
    /// certificate runs longest.
    public func currentProcessingKey(merchantID: String) async throws(CustodyError) -> MerchantKey {
        let candidates = try await list().filter { $0.merchantID == merchantID && $0.purpose == .processing && $0.state == .active }
        guard
            let current = candidates.max(by: {
                ($0.certificate?.notValidAfter ?? .distantPast) < ($1.certificate?.notValidAfter ?? .distantPast)
            })
        else {
            throw CustodyError(
                .invalidState,
                "merchant \(merchantID) has no active processing key to rotate; create one with `paywarden keys create --merchant-id "
                    + "\(merchantID)`"
            )
        }
        return current
    }

    /// Imports a software key (migration from another system), non-extractable from then on.
    /// The merchant comes from `certificate` or `merchantID`; with a certificate the key is
    /// active at once, and without one it is active for `merchantID` (its partyV is known).
    public func importKey(
        _ software: SoftwarePrivateKey, certificate: MerchantCertificate?, merchantID: String?,
        purpose: KeyPurpose, allowExpiredCertificate: Bool = false
    ) async throws(CustodyError) -> MerchantKey {
        try await importKey(
            prepareImport(
                software, certificate: certificate, merchantID: merchantID, purpose: purpose,
                allowExpiredCertificate: allowExpiredCertificate))
    }

    /// An import whose arguments were checked, ready to be made in the HSM.
    public struct PreparedImport: Sendable {
        let software: SoftwarePrivateKey
        let certificate: MerchantCertificate?
        let specification: KeySpecification
        let record: KeyRecord
    }

    /// Checks an import's arguments without touching the HSM's objects: the key is valid and of a
    /// type `purpose` allows, the certificate (given or bundled) is this key's and fits the
    /// purpose, the merchant is known, and the key is not in the HSM already. For a caller that
    /// asks the HSM something before the key is made: an argument's error comes first.
    public func prepareImport(
        _ software: SoftwarePrivateKey, certificate: MerchantCertificate?, merchantID: String?,
        purpose: KeyPurpose, allowExpiredCertificate: Bool = false
    ) async throws(CustodyError) -> PreparedImport {
        var certificate = certificate
        if certificate == nil, let bundled = software.certificate { certificate = try MerchantCertificate(bytes: bundled) }
        let publicKey: PublicKey
        do { publicKey = try software.publicKey() } catch { throw CustodyError(.keyUnreadable, "the private key is not a valid key") }
        let algorithm: KeyAlgorithmChoice = software.algorithm == .ecP256 ? .ec : .rsa
        try Self.checkAlgorithm(algorithm, for: purpose)
        var resolvedMerchant = merchantID
        if let certificate {
            guard (try? publicKey.subjectPublicKeyInfo()) == certificate.subjectPublicKeyInfo else {
                throw CustodyError(
                    .certificateKeyMismatch,
                    "the certificate is not for this private key (publicKeyHash \(certificate.publicKeyHash)); give the certificate "
                        + "issued for this key"
                )
            }
            try await check(certificate, for: purpose, merchantID: merchantID, allowExpired: allowExpiredCertificate)
            resolvedMerchant = merchantID ?? certificate.merchantID
        }
        guard let merchant = resolvedMerchant else {
            throw CustodyError(.invalidArgument, "give --certificate or --merchant-id: Paywarden needs the merchant identifier to decrypt")
        }
        try Self.validate(merchantID: merchant)
        let existing = try await snapshot()
        if let duplicate = existing.keys.first(where: { $0.publicKey == publicKey }) {
            throw CustodyError(.invalidState, "this key is already in the HSM as \(duplicate.id); nothing was imported")
        }

        let specification = KeySpecification(
            label: "\(merchant) \(purpose.rawValue)", algorithm: software.algorithm,
            usage: Self.usage(purpose: purpose, algorithm: algorithm)
        )
        var record = KeyRecord(
            purpose: purpose, merchantID: merchant,
            merchantIdentifierHash: certificate?.merchantIdentifierHash ?? Self.merchantIdentifierHash(merchant),
            state: .active, origin: .imported, createdAt: now
        )
        record.activatedAt = now
        return PreparedImport(software: software, certificate: certificate, specification: specification, record: record)
    }

    /// Makes a prepared import: the key in the HSM, then its record, or neither.
    public func importKey(_ prepared: PreparedImport) async throws(CustodyError) -> MerchantKey {
        let certificate = prepared.certificate
        let object: KeyObject
        do throws(PKCS11Error) {
            object = try await hsm.importPrivateKey(prepared.software, as: prepared.specification)
        } catch {
            throw CustodyError(error)
        }
        let written: KeyRecord
        do throws(CustodyError) {
            guard let inserted = try await records.insert(prepared.record, certificate: certificate?.der, for: object.id, at: now) else {
                throw CustodyError(.invalidState, "key \(object.id) already has a record in the database; nothing was imported")
            }
            written = inserted
        } catch {
            _ = try? await hsm.destroyKeyPair(object.id)
            throw error
        }
        return try Self.merchantKey(object, written, certificate: certificate)
    }

    // MARK: Adopting

    /// Records the HSM's key `reference` (a unique id prefix of at least 6 hex digits) as a
    /// pending key of `merchantID` for `purpose`, as `create` would have: a key made with another
    /// database, whose record stayed there. Refuses a key that has a record, one whose type or
    /// permissions do not suit the purpose, and one that is not sensitive and non-extractable.
    public func adopt(_ reference: String, merchantID: String, purpose: KeyPurpose) async throws(CustodyError) -> MerchantKey {
        try Self.validate(merchantID: merchantID)
        let wanted = reference.lowercased()
        guard wanted.count >= 6, wanted.allSatisfy(\.isHexDigit) else {
            throw CustodyError(
                .invalidArgument, "\"\(reference)\" is not a key id; give the id `paywarden keys list` shows (at least 6 hex digits)")
        }
        let snapshot = try await self.snapshot()
        let matches = snapshot.keys.filter { $0.id.hex.hasPrefix(wanted) }
        guard matches.count == 1, let object = matches.first else {
            if matches.isEmpty {
                throw CustodyError(.keyNotFound, "no private key in the HSM has id \(reference); run `paywarden keys list`")
            }
            throw CustodyError(.ambiguousKey, "\(reference) matches \(matches.count) keys; give more of the id")
        }
        if snapshot.records[object.id] != nil {
            throw CustodyError(
                .invalidState, "key \(object.id) already has a record in this database (`paywarden keys list` shows it); nothing changed")
        }
        guard object.isSensitive, !object.isExtractable else {
            throw CustodyError(
                .invalidState,
                "key \(object.id) can leave the HSM (CKA_SENSITIVE=\(object.isSensitive ? "TRUE" : "FALSE"), CKA_EXTRACTABLE="
                    + "\(object.isExtractable ? "TRUE" : "FALSE")): Paywarden keeps only keys that cannot; create a new key "
                    + "(`paywarden keys create`)")
        }
        // Recorded as generated: only a key that was never anything but sensitive and non-extractable
        // (an imported key, or one once extractable, may exist outside the HSM).
        guard object.neverLeftTheHSM else {
            throw CustodyError(
                .invalidState,
                "key \(object.id) was not always sensitive and non-extractable (CKA_ALWAYS_SENSITIVE or CKA_NEVER_EXTRACTABLE is "
                    + "FALSE): it may exist outside the HSM, so Paywarden does not adopt it; create a new key (`paywarden keys create`)")
        }
        if case .rsa(let modulus, _) = object.publicKey, case let bytes = modulus.drop(while: { $0 == 0 }).count, bytes != 256 {
            throw CustodyError(.invalidArgument, "key \(object.id) is RSA of \(bytes * 8) bits; Paywarden uses RSA-2048 only")
        }
        let algorithm: KeyAlgorithmChoice = object.algorithm == .ecP256 ? .ec : .rsa
        guard purpose.allowedAlgorithms.contains(algorithm) else {
            throw CustodyError(
                .invalidArgument,
                "key \(object.id) is \(algorithm == .ec ? "EC P-256" : "RSA-2048"), and \(Self.rsaOnly(purpose)) RSA-2048 for "
                    + "\(purpose.rawValue) keys: give the purpose it was made for")
        }
        let needed = Self.usage(purpose: purpose, algorithm: algorithm)
        guard object.usage.isSuperset(of: needed) else {
            throw CustodyError(
                .invalidArgument,
                "key \(object.id) may not do what a \(purpose.rawValue) key does in the HSM "
                    + "(it lacks \(needed.subtracting(object.usage))): give the purpose it was made for")
        }
        let record = KeyRecord(
            purpose: purpose, merchantID: merchantID, merchantIdentifierHash: Self.merchantIdentifierHash(merchantID),
            state: .pending, origin: .generated, createdAt: now)
        guard let written = try await records.insert(record, certificate: nil, for: object.id, at: now) else {
            throw CustodyError(.invalidState, "key \(object.id) was given a record by another admin meanwhile; nothing changed")
        }
        return try Self.merchantKey(object, written, certificate: nil)
    }

    // MARK: Certificates

    public enum ImportOutcome: Sendable, Equatable {
        case activated
        case alreadyImported
    }

    /// Stores Apple's certificate with the key it was issued for and marks that key active.
    public func importCertificate(_ certificate: MerchantCertificate) async throws(CustodyError) -> (
        key: MerchantKey, outcome: ImportOutcome
    ) {
        let snapshot = try await self.snapshot()
        let matching = snapshot.keys.first(where: { (try? $0.publicKey.subjectPublicKeyInfo()) == certificate.subjectPublicKeyInfo })
        // A processor's certificate carries nothing Apple's do: the key it names decides its purpose.
        let purpose: KeyPurpose
        if let matching, case .success(let record)? = snapshot.records[matching.id], record.purpose == .upstream {
            purpose = .upstream
        } else if let applePurpose = certificate.purpose {
            purpose = applePurpose
        } else {
            throw CustodyError(
                .certificateUnreadable,
                "this is neither a Payment Processing nor a Merchant Identity certificate (no key agreement, key encipherment or client "
                    + "authentication usage)"
            )
        }
        guard let key = matching else {
            throw CustodyError(
                .certificateKeyMismatch,
                "no key in the HSM matches this certificate (publicKeyHash \(certificate.publicKeyHash)); was this CSR generated by "
                    + "another system, or for another token?"
            )
        }
        guard case .success(let record)? = snapshot.records[key.id] else {
            throw CustodyError(
                .invalidState,
                "key \(key.id) matches but is not managed by Paywarden (no record in this database): give it one with `paywarden keys "
                    + "adopt \(key.id) --merchant-id \(certificate.merchantID ?? "MERCHANT_ID") --purpose \(purpose.rawValue)`, then "
                    + "import the certificate again")
        }
        guard record.purpose == purpose else {
            throw CustodyError(
                .purposeMismatch,
                "this is a \(Self.certificateName(purpose)) certificate, but key \(key.id) was "
                    + "created for \(record.purpose.rawValue); upload the CSR of a \(purpose.rawValue) key to get it"
            )
        }
        if let stored = snapshot.certificates[key.id] {
            if stored == certificate.der {
                return (try Self.merchantKey(key, record, certificate: certificate), .alreadyImported)
            }
            throw CustodyError(
                .invalidState,
                "key \(key.id) already has a different certificate; create a new key (`paywarden keys rotate`) for a new certificate")
        }
        guard record.state == .pending else {
            throw CustodyError(.invalidState, "key \(key.id) is \(record.state.rawValue); only a pending key takes a certificate")
        }
        try await check(certificate, for: purpose, merchantID: record.merchantID, allowExpired: false)

        var activated = record
        activated.state = .active
        activated.activatedAt = now
        if activated.merchantIdentifierHash == nil { activated.merchantIdentifierHash = certificate.merchantIdentifierHash }
        let written = try await records.update(activated, certificate: certificate.der, for: key.id, replacing: record, at: now)
        return (try Self.merchantKey(key, written, certificate: certificate), .activated)
    }

    // MARK: Lifecycle

    /// Marks an active key retired: it still decrypts, but is no longer "current".
    public func retire(_ reference: String) async throws(CustodyError) -> MerchantKey {
        let key = try await key(reference)
        guard key.state == .active else {
            throw CustodyError(
                .invalidState,
                "key \(key.id) is \(key.state.rawValue); only an active key can be "
                    + "retired\(key.state == .pending ? " (destroy a pending key instead)" : "")"
            )
        }
        var record = key.record
        record.state = .retired
        record.retiredAt = now
        let written = try await records.update(record, certificate: key.certificate?.der, for: key.id, replacing: key.record, at: now)
        return try Self.merchantKey(key.key, written, certificate: key.certificate)
    }

    /// Destroys a retired or pending key: the private and public key, certificate and record.
    public func destroy(_ reference: String) async throws(CustodyError) -> MerchantKey {
        let key = try await key(reference)
        guard key.state != .active else {
            throw CustodyError(
                .invalidState, "key \(key.id) is active and may still receive tokens; retire it first (`paywarden keys retire \(key.id)`)")
        }
        // The record goes first, by a compare-and-set on the revision read: a command that changed
        // the key meanwhile (its certificate imported, activating it) keeps the key, and one that
        // starts now finds no record to act on, so no admin is told of a change to a key that is
        // then destroyed.
        guard try await records.delete(key.id, replacing: key.record) else {
            throw CustodyError(
                .invalidState,
                "key \(key.id) was changed by another admin or instance while this command ran; nothing was destroyed: run "
                    + "`paywarden keys list` and the command again")
        }
        do throws(PKCS11Error) {
            try await hsm.withSession { session throws(PKCS11Error) in
                // Objects an earlier build kept beside the key go with it.
                try CustodyObjects.deleteCertificates(key.id, session)
                try session.destroyKeyPair(id: key.id)
                try CustodyObjects.deleteRecord(key.id, session)
            }
            _ = try? await hsm.keys()
        } catch {
            // The key is still in the HSM: its record goes back, as it was.
            _ = try? await records.insert(key.record, certificate: key.certificate?.der, for: key.id, at: now)
            throw CustodyError(error)
        }
        return key
    }

    // MARK: Helpers

    private struct Snapshot {
        let keys: [KeyObject]
        let records: [KeyIdentifier: Result<KeyRecord, CustodyError>]
        let certificates: [KeyIdentifier: [UInt8]]
        let managed: [MerchantKey]
        let unreadable: [UnreadableMerchantKey]
        let unadopted: [UnadoptedKey]
    }

    /// The token's keys (one session) and the database's records, after copying to the database
    /// any record an earlier build kept in the token that the database does not have yet.
    private func snapshot() async throws(CustodyError) -> Snapshot {
        let listing: KeyListing
        let legacy: CustodyObjects.Legacy
        do throws(PKCS11Error) {
            (listing, legacy) = try await hsm.withSession { session throws(PKCS11Error) in
                (try session.privateKeys(), try CustodyObjects.legacy(session))
            }
            // A key destroyed elsewhere must not live on in session copies.
            try await hsm.keysListed(listing)
        } catch {
            throw CustodyError(error)
        }
        var entries = try await records.entries()
        if try await migrate(legacy, into: entries) { entries = try await records.entries() }
        var records = entries.mapValues(\.record)
        // A token record that could not be moved (it does not decode) is reported for its key.
        for (id, result) in legacy.records where records[id] == nil {
            if case .failure = result { records[id] = result }
        }
        let certificates = entries.compactMapValues(\.certificate)
        var managed: [MerchantKey] = []
        var unreadable: [UnreadableMerchantKey] = []
        var unadopted: [UnadoptedKey] = []
        // The audit trail's signing key is Paywarden's own and no merchant's: neither managed nor unadopted.
        for key in listing.keys where !AuditKeys.isAuditKey(key) {
            guard let result = records[key.id] else {
                if let spki = try? key.publicKey.subjectPublicKeyInfo() {
                    unadopted.append(UnadoptedKey(key: key, publicKeyHash: Data(SHA256.hash(data: spki)).base64EncodedString()))
                }
                continue
            }
            do throws(CustodyError) {
                let record = try result.get()
                let certificate = try certificates[key.id].map { (der) throws(CustodyError) -> MerchantCertificate in
                    do throws(CustodyError) {
                        return try MerchantCertificate(bytes: der)
                    } catch {
                        throw CustodyError(.storage, "the certificate of key \(key.id) in the database is unreadable: \(error.message)")
                    }
                }
                managed.append(try Self.merchantKey(key, record, certificate: certificate))
            } catch {
                unreadable.append(UnreadableMerchantKey(id: key.id, reason: error.message))
            }
        }
        // Key objects that could not be read count only when Paywarden keeps a record for them:
        // the others belong to other applications sharing the token.
        for object in listing.unreadable {
            guard let id = object.id, records[id] != nil else { continue }
            unreadable.append(UnreadableMerchantKey(id: id, reason: "the key object is unreadable: \(object.reason)"))
        }
        return Snapshot(
            keys: listing.keys, records: records, certificates: certificates, managed: managed, unreadable: unreadable,
            unadopted: unadopted)
    }

    /// Copies to the database the token's `CKO_DATA` records (and their certificates) that it has
    /// no row for. The token's objects stay, unused, until their key is destroyed. Returns whether
    /// anything was written.
    private func migrate(_ legacy: CustodyObjects.Legacy, into entries: [KeyIdentifier: KeyRecordTable.Entry]) async throws(CustodyError)
        -> Bool
    {
        var wrote = false
        for (id, result) in legacy.records where entries[id] == nil {
            guard case .success(let record) = result else { continue }
            wrote = try await records.insert(record, certificate: legacy.certificates[id], for: id, at: now) != nil || wrote
        }
        return wrote
    }

    /// Everything a certificate must be before it is stored: from the accepted issuers, for this
    /// purpose and merchant (subject UID and the .6.32 hash), and valid now.
    private func check(_ certificate: MerchantCertificate, for purpose: KeyPurpose, merchantID: String?, allowExpired: Bool)
        async throws(CustodyError)
    {
        if purpose == .upstream {
            try checkUpstream(certificate, allowExpired: allowExpired)
            return
        }
        guard certificate.purpose == purpose else {
            throw CustodyError(
                .purposeMismatch, "this is a \(certificate.purpose?.rawValue ?? "non-Apple Pay") certificate, not a \(purpose.rawValue) one"
            )
        }
        // The chain is checked as of a moment inside the certificate's own validity (now, when it
        // is valid), so an expired or early certificate is reported as such below, and an expired
        // one allowed for old tokens still has to have come from the issuers while it was valid.
        guard certificate.notValidBefore <= certificate.notValidAfter else {
            throw CustodyError(
                .certificateUntrusted, "the certificate's validity ends before it begins; it is not a certificate Apple issued")
        }
        let chainTime = min(max(now, certificate.notValidBefore), certificate.notValidAfter)
        try await certificateIssuers.verify(certificate.certificate, purpose: purpose, at: chainTime)
        if let expected = merchantID, let actual = certificate.merchantID, expected != actual {
            throw CustodyError(
                .merchantMismatch,
                "the certificate is for merchant \(actual), but the key was requested for \(expected); upload this key's CSR under "
                    + "\(expected)"
            )
        }
        // Apple's KDF uses this hash (partyV): a certificate whose hash is not that of the merchant
        // identifier would activate a key for tokens that can never decrypt under it.
        guard let hash = certificate.merchantIdentifierHash else {
            throw CustodyError(
                .certificateUntrusted,
                "the certificate has no merchant identifier hash (extension 1.2.840.113635.100.6.32); it is not an Apple Pay merchant "
                    + "certificate: import the certificate Apple issued for this key's CSR"
            )
        }
        if let merchant = merchantID ?? certificate.merchantID, hash != Self.merchantIdentifierHash(merchant) {
            throw CustodyError(
                .certificateUntrusted,
                "the certificate's merchant identifier hash (extension 1.2.840.113635.100.6.32) is not SHA-256 of \(merchant); it was "
                    + "not issued for this merchant: import the certificate Apple issued for \(merchant)"
            )
        }
        let formatter = ISO8601DateFormatter()
        if now < certificate.notValidBefore {
            throw CustodyError(
                .certificateNotYetValid,
                "the certificate is not valid until \(formatter.string(from: certificate.notValidBefore)); check the system clock, or "
                    + "import it then"
            )
        }
        if now > certificate.notValidAfter && !allowExpired {
            throw CustodyError(
                .certificateExpired,
                "the certificate expired on \(formatter.string(from: certificate.notValidAfter)); rotate the key and get a new "
                    + "certificate from Apple"
            )
        }
    }

    /// An upstream's client certificate comes from the processor's CA, which Paywarden does not
    /// pin: the processor decides whom it trusts, and a certificate it did not issue only fails
    /// its handshake. What Paywarden checks is what would make the key unusable or misused: the
    /// certificate is for this key (its caller matched the public key), a TLS client certificate
    /// (no CA; client authentication and digital signature when it restricts its use), and valid now.
    private func checkUpstream(_ certificate: MerchantCertificate, allowExpired: Bool) throws(CustodyError) {
        let extensions = certificate.certificate.extensions
        if case .isCertificateAuthority? = try? extensions.basicConstraints {
            throw CustodyError(
                .purposeMismatch, "this is a CA certificate, not the TLS client certificate the processor issued for the key's CSR")
        }
        if let usage = try? extensions.extendedKeyUsage, !usage.contains(.clientAuth) {
            throw CustodyError(
                .purposeMismatch,
                "the certificate does not allow TLS client authentication (extended key usage without clientAuth); ask the processor "
                    + "for a client certificate")
        }
        if let usage = try? extensions.keyUsage, !usage.digitalSignature {
            throw CustodyError(
                .purposeMismatch, "the certificate does not allow digital signatures (key usage), which a TLS client key makes")
        }
        let formatter = ISO8601DateFormatter()
        if now < certificate.notValidBefore {
            throw CustodyError(
                .certificateNotYetValid,
                "the certificate is not valid until \(formatter.string(from: certificate.notValidBefore)); check the system clock, or "
                    + "import it then")
        }
        if now > certificate.notValidAfter && !allowExpired {
            throw CustodyError(
                .certificateExpired,
                "the certificate expired on \(formatter.string(from: certificate.notValidAfter)); create a new upstream key and have "
                    + "the processor certify its CSR")
        }
    }

    /// What ``create(merchantID:purpose:algorithm:predecessor:)`` checks of its arguments, for a
    /// caller that asks the HSM something first: an argument's error comes before the HSM's answer.
    public static func checkCreation(merchantID: String, purpose: KeyPurpose, algorithm: KeyAlgorithmChoice) throws(CustodyError) {
        try validate(merchantID: merchantID)
        try checkAlgorithm(algorithm, for: purpose, remedy: "; use --type rsa")
    }

    /// Whether a key of `algorithm` may serve `purpose` (Apple's and the TLS signer's rules).
    public static func checkAlgorithm(_ algorithm: KeyAlgorithmChoice, for purpose: KeyPurpose, remedy: String = "") throws(CustodyError) {
        guard purpose.allowedAlgorithms.contains(algorithm) else {
            throw CustodyError(.invalidArgument, "\(rsaOnly(purpose)) RSA-2048 for \(purpose.rawValue) keys" + remedy)
        }
    }

    /// Who allows only RSA for `purpose`: Apple, or for upstream keys the HSM-backed TLS signer.
    static func rsaOnly(_ purpose: KeyPurpose) -> String {
        purpose == .upstream ? "Paywarden signs TLS handshakes in the HSM only with" : "Apple accepts only"
    }

    /// What an admin calls a certificate of `purpose`.
    static func certificateName(_ purpose: KeyPurpose) -> String {
        switch purpose {
        case .processing: "Payment Processing"
        case .identity: "Merchant Identity"
        case .upstream: "processor upstream client"
        }
    }

    static func merchantKey(_ key: KeyObject, _ record: KeyRecord, certificate: MerchantCertificate?) throws(CustodyError) -> MerchantKey {
        let spki: [UInt8]
        do { spki = try key.publicKey.subjectPublicKeyInfo() } catch {
            throw CustodyError(.storage, "key \(key.id) has an unusable public key")
        }
        return MerchantKey(
            key: key, record: record, certificate: certificate,
            publicKeyHash: Data(SHA256.hash(data: spki)).base64EncodedString())
    }

    /// Lowercase hex SHA-256 of the merchant identifier: Apple's KDF partyV.
    public static func merchantIdentifierHash(_ merchantID: String) -> String {
        Hex.encode(SHA256.hash(data: Data(merchantID.utf8)))
    }

    /// What a key may do in service. `create` adds sign for the key's own CSR and takes it back
    /// after; keys created before that change keep CKA_SIGN (docs/operations.md, "Key custody").
    static func usage(purpose: KeyPurpose, algorithm: KeyAlgorithmChoice) -> KeyUsage {
        switch (purpose, algorithm) {
        case (.processing, .ec): [.derive]  // ECDH for tokens
        case (.processing, .rsa): [.decrypt, .unwrap]
        case (.identity, _), (.upstream, _): [.sign]  // TLS client authentication
        }
    }

    /// The PKCS#11 attributes that grant `usage`, as an admin reads them.
    static func validate(merchantID: String) throws(CustodyError) {
        guard !merchantID.isEmpty, merchantID.count <= 255,
            merchantID.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw CustodyError(
                .invalidArgument,
                "\"\(merchantID)\" is not a merchant identifier (printable ASCII without spaces, e.g. merchant.com.example)")
        }
    }
}
