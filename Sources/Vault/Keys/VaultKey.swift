import Foundation
import PKCS11

/// A vault key in the HSM, known by its label: `paywarden-vault/PURPOSE/CREATED`, where CREATED
/// (UTC, milliseconds) orders a purpose's keys, the newest being current. The label is all the
/// state there is, so every instance sharing the HSM agrees on the current key without a database.
public struct VaultKey: Sendable, Hashable {
    public let id: KeyIdentifier
    public let purpose: VaultKeyPurpose
    public let createdAt: Date
    public let kind: SecretKeyKind

    static let labelPrefix = "paywarden-vault/"

    /// The key `object` names, or nil when it is not a vault key.
    init?(_ object: SecretKeyObject) {
        let parts = object.label.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "paywarden-vault", let purpose = VaultKeyPurpose(rawValue: String(parts[1])),
            let created = try? Self.timestamp.parse(String(parts[2]))
        else { return nil }
        self.init(id: object.id, purpose: purpose, createdAt: created, kind: object.kind)
    }

    init(id: KeyIdentifier, purpose: VaultKeyPurpose, createdAt: Date, kind: SecretKeyKind) {
        self.id = id
        self.purpose = purpose
        self.createdAt = createdAt
        self.kind = kind
    }

    static func label(_ purpose: VaultKeyPurpose, createdAt: Date) -> String {
        labelPrefix + purpose.rawValue + "/" + timestamp.format(createdAt)
    }

    /// Newest first; the id breaks a tie between keys two instances made in the same millisecond.
    static func newestFirst(_ lhs: VaultKey, _ rhs: VaultKey) -> Bool {
        lhs.createdAt != rhs.createdAt ? lhs.createdAt > rhs.createdAt : rhs.id < lhs.id
    }

    private static let timestamp = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
