import Crypto
import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// Paypages: the merchant configuration the admin CLI manages.
extension CardVault {
    /// Creates a paypage. Every paypage of an organisation issues the same token format: tokens are
    /// static per account number and organisation, so one organisation cannot have two shapes.
    public func createPaypage(
        id: String, organization: OrganizationID, merchantIdentifiers: [String], reportGroups: [String], tokenFormat: HighValueTokenFormat
    ) async throws(VaultError) -> PaypageRecord {
        guard !id.isEmpty, id.count <= 1024, id.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else { throw VaultError(.invalidRequest, "a paypage id is letters and digits only (eProtect's ^[0-9A-Za-z]+$)") }
        guard Self.isOrganizationName(organization.rawValue) else {
            throw VaultError(.invalidRequest, "an organisation is 1 to 64 letters, digits, - and _")
        }
        let merchants = merchantIdentifiers.filter { !$0.isEmpty }
        guard !merchants.isEmpty, merchants.allSatisfy({ $0.utf8.count <= 255 }) else {
            throw VaultError(.invalidRequest, "a paypage needs at least one Apple Pay merchant identifier (at most 255 bytes each)")
        }
        guard reportGroups.allSatisfy({ !$0.isEmpty && $0.count <= 25 }) else {
            throw VaultError(.invalidRequest, "a report group is 1 to 25 characters (cnpAPI reportGroupType)")
        }
        let existing = try await storage { () async throws(StorageError) in try await database.paypages() }
        if let other = existing.first(where: { $0.organization == organization && $0.tokenFormat != tokenFormat.rawValue }) {
            throw VaultError(
                .invalidRequest,
                "organisation \(organization) issues format \(other.tokenFormat) tokens (paypage \(other.id)); a paypage of it cannot use "
                    + tokenFormat.rawValue)
        }
        let record = PaypageRecord(
            id: id, organization: organization, merchantIdentifiers: merchants, reportGroups: reportGroups,
            tokenFormat: tokenFormat.rawValue, createdAt: now)
        defer { paypageCache.removeAll() }
        do {
            try await database.createPaypage(record)
        } catch  where error.category == .conflict {
            throw VaultError(.invalidRequest, "paypage \(id) exists; paypage ids are never reused")
        } catch {
            _ = try await storage { () async throws(StorageError) in throw error }
        }
        return record
    }

    public func paypages() async throws(VaultError) -> [PaypageRecord] {
        try await storage { () async throws(StorageError) in try await database.paypages() }
    }

    /// Disables a paypage: apps posting to it get 879 from then on (from an instance that did not
    /// disable it, within a second: ``PaypageCache``); its registrations stay redeemable.
    public func disablePaypage(_ id: String) async throws(VaultError) {
        defer { paypageCache.removeAll() }
        guard try await storage({ () async throws(StorageError) in try await database.setPaypage(id: id, enabled: false) }) else {
            throw VaultError(.invalidRequest, "there is no paypage \(id); paywarden paypages list shows them")
        }
    }

    /// The enabled paypage `id` when `reportGroup` is one it allows (any, when it lists none).
    /// Read through ``PaypageCache``: a paypage disabled elsewhere is refused within a second.
    public func authorizePaypage(_ id: String, reportGroup: String) async throws(VaultError) -> PaypageRecord {
        let found: PaypageRecord?
        if let cached = paypageCache.paypage(id) {
            found = cached
        } else {
            let read = paypageCache.readStarts()
            found = try await storage({ () async throws(StorageError) in try await database.paypage(id: id) })
            if let found { paypageCache.keep(found, readAt: read) }
        }
        guard let paypage = found, paypage.enabled else { throw VaultError(.merchantNotAuthorized, "the paypageId is unknown or disabled") }
        guard paypage.reportGroups.isEmpty || paypage.reportGroups.contains(reportGroup) else {
            throw VaultError(.reportGroupInvalid, "the reportGroup is not one this paypage allows")
        }
        return paypage
    }

    /// The organisation's token format and the merchant identifiers its enabled paypages allow;
    /// `.merchantNotAuthorized` when it has no enabled paypage.
    public func organizationPolicy(_ organization: OrganizationID) async throws(VaultError) -> OrganizationPolicy {
        let paypages = try await paypages().filter { $0.organization == organization && $0.enabled }
        guard let first = paypages.first, let format = HighValueTokenFormat(rawValue: first.tokenFormat) else {
            throw VaultError(.merchantNotAuthorized, "organisation \(organization) has no enabled paypage, so it cannot register tokens")
        }
        return OrganizationPolicy(
            organization: organization, tokenFormat: format, merchantIdentifiers: Set(paypages.flatMap(\.merchantIdentifiers)))
    }

    static func isOrganizationName(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") }
    }
}

/// What an organisation may do: the token format it issues and the merchant identifiers whose
/// keys its tokens may be encrypted to.
public struct OrganizationPolicy: Sendable {
    public let organization: OrganizationID
    public let tokenFormat: HighValueTokenFormat
    public let merchantIdentifiers: Set<String>

    public init(organization: OrganizationID, tokenFormat: HighValueTokenFormat, merchantIdentifiers: Set<String>) {
        self.organization = organization
        self.tokenFormat = tokenFormat
        self.merchantIdentifiers = merchantIdentifiers
    }

    public init?(paypage: PaypageRecord) {
        guard let format = HighValueTokenFormat(rawValue: paypage.tokenFormat) else { return nil }
        self.init(organization: paypage.organization, tokenFormat: format, merchantIdentifiers: Set(paypage.merchantIdentifiers))
    }

    /// The lowercase hex SHA-256 of each merchant identifier: what a decrypted token names its key's merchant by.
    public var merchantIdentifierHashes: Set<String> {
        Set(merchantIdentifiers.map { Hex.encode(SHA256.hash(data: Data($0.utf8))) })
    }
}
