import ApplePay
import Crypto
import Foundation
import KeyCustody
import OutboundTLS
import PKCS11
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage

/// Merchant Token Usage Information (docs/usage-information.md): a merchant publishes Apple's
/// `UsageInformation` for a merchant token; Paywarden zips it, seals it for the token's device
/// with the merchant's P-384 sender key (in the HSM where it can be), tells Apple where the device
/// fetches it, and serves it to the device that presents the authentication token.
extension MerchantTokenService {
    /// Validates and publishes `document` for `merchantTokenID`. `.awaitingKey` when Apple has no
    /// device key yet (202): publication resumes on `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`.
    public func publishUsageInformation(
        merchantID: String, merchantTokenID: String, document: [UInt8], files: [String: [UInt8]] = [:], organization: OrganizationID?,
        user: String
    ) async throws(MerchantTokenFailure) -> UsageInformationRecord.State {
        let configuration = try usageInformationConfiguration()
        try Self.checkIdentifiers(merchantID: merchantID, merchantTokenID: merchantTokenID)
        let package: UsageInformationPackage
        do {
            let validated = try UsageInformationValidator(merchantTokenIdentifier: merchantTokenID, now: vault.now).validate(document)
            package = try UsageInformationPackage(usageInformation: validated, files: files)
        } catch {
            throw MerchantTokenFailure(.invalidRequest, "usageInformation: \(error)")
        }
        let state: UsageInformationRecord.State
        do throws(MerchantTokenFailure) {
            try await authorize(merchantID: merchantID, merchantTokenID: merchantTokenID, organization: organization)
            // Two organisations may hold the same merchant token: the first to record a publication
            // owns the package (an admin's, organisation "", too), and only it replaces it; an admin
            // (no organisation) publishes for the owner. Refused here before Apple is asked, and by
            // the compare-and-set of the write should another publication land meanwhile.
            let existing = try await readUsageInformation(merchantTokenID, configuration)
            if let organization, let existing, existing.organization != organization { throw Self.notOwner }
            let record = UsageInformationRecord(
                merchantTokenID: merchantTokenID, merchantID: merchantID, organization: existing?.organization ?? organization ?? "",
                state: .awaitingKey, package: package.zip, packageResponse: nil, authenticationTokenHash: nil, updatedAt: vault.now)
            state = try await seal(record, configuration, replacing: existing)
        } catch {
            await writeAudit(
                user: user, action: "merchant-token-usage-information", merchantID: merchantID, result: "refused",
                detail: "merchant token \(merchantTokenID): \(error.code.rawValue)")
            throw error
        }
        await writeAudit(
            user: user, action: "merchant-token-usage-information", merchantID: merchantID, result: state.rawValue,
            detail: "merchant token \(merchantTokenID), package \(package.zip.count) bytes")
        return state
    }

    /// `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`: the package (if any) sealed again to the device's new key.
    /// A publication that lands meanwhile wins the write; the package is then read and sealed again.
    func usageInformationKeyUpdated(merchantTokenID: String) async throws(MerchantTokenFailure) -> String? {
        guard let configuration = usageInformation else { return nil }
        for attempt in 1...3 {
            guard let record = try await readUsageInformation(merchantTokenID, configuration) else { return nil }
            do throws(MerchantTokenFailure) {
                let state = try await seal(record, configuration, replacing: record)
                return "usage information \(state.rawValue)"
            } catch  where error.code == .concurrentChange && attempt < 3 {
                continue
            }
        }
        return nil
    }

    /// `UNLINK`: the package is no longer served.
    func usageInformationUnlinked(merchantTokenID: String) async throws(MerchantTokenFailure) -> String? {
        guard let configuration = usageInformation else { return nil }
        do {
            return try await configuration.store.deleteUsageInformation(merchantTokenID: merchantTokenID)
                ? "usage information deleted" : nil
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// The device's fetch: the package response when `authorization` is
    /// `ApplePayMerchantTokenUsageInformation {authenticationToken}` with this token's current token.
    /// Every other answer is the same 401, so the route tells nobody which merchant tokens have a
    /// package: no package, nothing published yet, unlinked, and a wrong token look alike (and take
    /// the same work: the presented token is hashed and compared either way).
    public func usageInformationPackage(merchantTokenID: String, authorization: String?) async throws(UsageInformationAccessError)
        -> [UInt8]
    {
        // Without Apple's scheme nothing is looked up. The scheme's name is compared without case
        // (RFC 9110, section 11.1).
        let scheme = "ApplePayMerchantTokenUsageInformation "
        guard let authorization, authorization.count > scheme.count,
            authorization.prefix(scheme.count).lowercased() == scheme.lowercased()
        else { throw .unauthorized }
        guard let configuration = usageInformation else { throw .notFound }
        let stored: UsageInformationRecord?
        do {
            stored = try await configuration.store.usageInformation(merchantTokenID: merchantTokenID)
        } catch {
            // Not "refused": a device told 401 may stop asking.
            throw .unavailable
        }
        let presented = Array(SHA256.hash(data: Array(authorization.dropFirst(scheme.count).utf8)))
        var served: (response: [UInt8], digest: [UInt8])?
        if let record = stored, record.state == .published, let response = record.packageResponse,
            let digest = record.authenticationTokenHash
        {
            served = (response, digest)
        }
        // Both are SHA-256 digests: compared in full, whatever differs (against a digest no token
        // has when nothing is served).
        let expected = served?.digest ?? Self.noTokenDigest
        let matches = presented.count == expected.count && zip(presented, expected).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0
        guard let served, matches else { throw .unauthorized }
        return served.response
    }

    /// Compared with when no package is served: not the digest of any token Paywarden issues.
    private static let noTokenDigest = [UInt8](repeating: 0, count: 32)

    // MARK: Sealing

    private func usageInformationConfiguration() throws(MerchantTokenFailure) -> UsageInformationConfiguration {
        guard let usageInformation else {
            throw MerchantTokenFailure(.invalidRequest, "usage information is off: set PAYWARDEN_PUBLIC_URL to turn it on")
        }
        return usageInformation
    }

    private func readUsageInformation(
        _ merchantTokenID: String, _ configuration: UsageInformationConfiguration
    ) async throws(MerchantTokenFailure) -> UsageInformationRecord? {
        do { return try await configuration.store.usageInformation(merchantTokenID: merchantTokenID) } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// Fetches the device's key, seals the package and the metadata, records the publication,
    /// notifies Apple, and records the outcome. The new authentication token's hash is recorded
    /// before Apple hands the token to the device, so the device never presents a token the
    /// database does not know yet; when Apple refuses, the record as it was is put back. On 202 the
    /// package waits for the key. Every write is a compare-and-set on `previous`, the row read before
    /// Apple was asked: a publication that landed meanwhile (another organisation's, or a newer one)
    /// is never replaced, and this one is refused before Apple hears of it.
    private func seal(
        _ record: UsageInformationRecord, _ configuration: UsageInformationConfiguration, replacing previous: UsageInformationRecord?
    ) async throws(MerchantTokenFailure) -> UsageInformationRecord.State {
        do {
            return try await sealed(record, configuration, previous: previous).state
        } catch {
            throw Self.usageInformationFailure(error)
        }
    }

    /// The record as it stands once Apple was asked for the key and, with one, notified.
    private func sealed(
        _ record: UsageInformationRecord, _ configuration: UsageInformationConfiguration, previous: UsageInformationRecord?
    ) async throws -> UsageInformationRecord {
        guard let apple = gateway as? any UsageInformationGateway else {
            throw MerchantTokenFailure(.internalError, "the gateway cannot make usage-information calls")
        }
        let revision = (previous?.revision ?? 0) + 1
        let answer = try await apple.merchantTokenPublicKey(merchantID: record.merchantID, merchantTokenID: record.merchantTokenID)
        guard case .key(let devicePublicKey, _) = answer else {
            let waiting = Self.updated(record, state: .awaitingKey, response: nil, tokenHash: nil, at: vault.now, revision: revision)
            try await save(waiting, replacing: previous, configuration)
            return waiting
        }
        let senderKey = try await senderKey(merchantID: record.merchantID, configuration)
        let package = try await UsageInformationEnvelope.seal(
            record.package, merchantTokenIdentifier: record.merchantTokenID, merchantTokenPublicKey: devicePublicKey, senderKey: senderKey)
        if let violation = package.limitViolation {
            // Apple's 4000-character cap on `data` contradicts its 5 MB packages (UNVERIFIED which holds).
            logger.warning(
                "usage-information package beyond Apple's documented field limits",
                metadata: ["merchant-token": "\(record.merchantTokenID)", "limit": "\(violation)"])
        }
        let authenticationToken = Self.newAuthenticationToken()
        let metadataJSON = Array(
            try JSONSerialization.data(
                withJSONObject: ["webServiceURL": configuration.publicURL, "authenticationToken": authenticationToken],
                options: [.sortedKeys, .withoutEscapingSlashes]))
        let metadata = try await UsageInformationEnvelope.seal(
            metadataJSON, merchantTokenIdentifier: record.merchantTokenID, merchantTokenPublicKey: devicePublicKey, senderKey: senderKey)
        let response = Array(
            try JSONSerialization.data(withJSONObject: package.packageResponse, options: [.sortedKeys, .withoutEscapingSlashes]))
        let published = Self.updated(
            record, state: .published, response: response, tokenHash: Array(SHA256.hash(data: Array(authenticationToken.utf8))),
            at: vault.now, revision: revision)
        try await save(published, replacing: previous, configuration)
        do {
            try await apple.notifyUsageDataAvailable(
                merchantID: record.merchantID, merchantTokenID: record.merchantTokenID, metadata: metadata.notificationMetadata)
        } catch {
            // Apple holds the token it had (or none): that one stays the one served.
            await restore(previous, replacing: published, configuration)
            throw error
        }
        return published
    }

    /// Writes `record` in place of `expected` (the row read), or refuses: another organisation's
    /// publication is not replaced (`merchant_not_authorized`), nor one that landed meanwhile
    /// (`concurrent_change`: repeat the request).
    private func save(
        _ record: UsageInformationRecord, replacing expected: UsageInformationRecord?, _ configuration: UsageInformationConfiguration
    ) async throws(MerchantTokenFailure) {
        do {
            guard try await configuration.store.saveUsageInformation(record, replacing: expected) else {
                let now = try await configuration.store.usageInformation(merchantTokenID: record.merchantTokenID)
                if let now, now.organization != record.organization { throw Self.notOwner }
                throw MerchantTokenFailure(
                    .concurrentChange,
                    "the merchant token's usage information changed while this publication was sealed (another publication, an "
                        + "unlink or a new device key); nothing was sent to Apple: repeat the request")
            }
        } catch let error as MerchantTokenFailure {
            throw error
        } catch let error as StorageError {
            throw MerchantTokenFailure(error)
        } catch {
            throw MerchantTokenFailure(.internalError, "\(error)")
        }
    }

    /// Puts `previous` back (nothing, when there was none) in place of `published`, unless a newer
    /// write replaced `published` meanwhile: that one is left as it is.
    private func restore(
        _ previous: UsageInformationRecord?, replacing published: UsageInformationRecord, _ configuration: UsageInformationConfiguration
    ) async {
        do {
            let restored: Bool
            // The record as it was, its revision too: a writer that read it may still write, as it
            // read what is there again; one that read this publication may not.
            if let previous {
                restored = try await configuration.store.saveUsageInformation(previous, replacing: published)
            } else {
                restored = try await configuration.store.deleteUsageInformation(replacing: published)
            }
            if !restored {
                logger.notice(
                    "Apple was not notified, and a newer write replaced this publication meanwhile: it is left as it is",
                    metadata: ["merchant-token": "\(published.merchantTokenID)"])
            }
        } catch {
            logger.error(
                "Apple was not notified and the usage information as it was could not be put back; publish it again",
                metadata: ["merchant-token": "\(published.merchantTokenID)", "error": "\(error)"])
        }
    }

    static let notOwner = MerchantTokenFailure(
        .merchantNotAuthorized, "another organisation published this merchant token's usage information; only it may replace it")

    private static func updated(
        _ record: UsageInformationRecord, state: UsageInformationRecord.State, response: [UInt8]?, tokenHash: [UInt8]?, at now: Date,
        revision: Int
    ) -> UsageInformationRecord {
        UsageInformationRecord(
            merchantTokenID: record.merchantTokenID, merchantID: record.merchantID, organization: record.organization, state: state,
            package: record.package, packageResponse: response, authenticationTokenHash: tokenHash, updatedAt: now, revision: revision)
    }

    /// 32 random bytes, Base64url without padding: the device's `authenticationToken`.
    private static func newAuthenticationToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func usageInformationFailure(_ error: any Error) -> MerchantTokenFailure {
        switch error {
        case let error as MerchantTokenFailure: error
        case let error as AppleGatewayError: MerchantTokenFailure(error)
        case let error as StorageError: MerchantTokenFailure(error)
        case let error as PKCS11Error:
            MerchantTokenFailure(.hsmUnavailable, "the usage-information sender key could not be used: \(error.message)")
        default: MerchantTokenFailure(.internalError, "sealing the usage information failed: \(error)")
        }
    }

    /// The merchant's sender key, made on first use in the custody the HSM allows.
    private func senderKey(merchantID: String, _ configuration: UsageInformationConfiguration) async throws -> any HPKESenderKey {
        if let stored = try await configuration.store.usageInformationSenderKey(merchantID: merchantID) {
            return try await configuration.senderKeys.open(try Self.reference(stored))
        }
        let made = try await configuration.senderKeys.create(
            label: "usage-information \(merchantID)", forceWrapped: configuration.forceWrappedSenderKeys)
        let record = UsageInformationSenderKeyRecord(
            merchantID: merchantID, custody: made.custody.rawValue, hsmKeyID: made.hsmKeyID.hex, publicKey: made.publicKey,
            wrappedSeed: made.wrappedSeed?.bytes, wrapPath: made.wrappedSeed?.path.rawValue, createdAt: vault.now)
        let conflict: Bool
        do {
            try await configuration.store.createUsageInformationSenderKey(record)
            conflict = false
        } catch {
            guard error.category == .conflict else { throw error }
            conflict = true
        }
        guard conflict else { return try await configuration.senderKeys.open(made) }
        // Another instance made one first: theirs is the merchant's key.
        try? await configuration.senderKeys.destroy(made)
        guard let stored = try await configuration.store.usageInformationSenderKey(merchantID: merchantID) else {
            throw MerchantTokenFailure(.internalError, "the merchant's usage-information sender key vanished")
        }
        return try await configuration.senderKeys.open(try Self.reference(stored))
    }

    static func reference(_ record: UsageInformationSenderKeyRecord) throws -> SenderKeyReference {
        guard let custody = SenderKeyCustody(rawValue: record.custody), let id = KeyIdentifier(hex: record.hsmKeyID) else {
            throw MerchantTokenFailure(.internalError, "the usage-information sender key record is unreadable")
        }
        var wrapped: WrappedDataKey?
        if let seed = record.wrappedSeed, let path = record.wrapPath.flatMap(DataKeyWrapPath.init(rawValue:)) {
            wrapped = WrappedDataKey(path: path, bytes: seed)
        }
        return SenderKeyReference(custody: custody, hsmKeyID: id, publicKey: record.publicKey, wrappedSeed: wrapped)
    }
}

/// Why a device's fetch of a package is refused.
public enum UsageInformationAccessError: Error, Sendable, Hashable {
    /// Usage information is off (no public URL): nothing is served to anyone.
    case notFound
    /// No Apple scheme, or not the token of a package served now (none, unpublished, unlinked, or
    /// another token): one answer for all, so it says nothing of which merchant tokens have one.
    case unauthorized
    /// The database cannot answer now.
    case unavailable
}

extension MerchantTokenService {
    /// What an applied event means for the token's usage information: a new device key seals the
    /// package again; an unlink stops serving it. Nil when nothing changed.
    func applyToUsageInformation(type: String, merchantTokenID: String) async throws(MerchantTokenFailure) -> String? {
        switch type {
        case "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY": try await usageInformationKeyUpdated(merchantTokenID: merchantTokenID)
        case "UNLINK": try await usageInformationUnlinked(merchantTokenID: merchantTokenID)
        default: nil
        }
    }
}
