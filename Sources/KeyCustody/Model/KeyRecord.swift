import Foundation

/// Paywarden's record of a merchant key, stored in the database (`merchant_keys`, with the key's
/// certificate), so every instance on the same HSM and database sees the same state. Earlier builds
/// kept it in the token as a `CKO_DATA` object; those are moved on first read.
public struct KeyRecord: Sendable, Hashable, Codable {
    /// The record format; bumped only with a migration.
    public var formatVersion: Int = 1
    /// Bumped on every write: the database row's revision, which every write compares and sets
    /// (an earlier build's token records carried their own, kept when they are moved).
    public var revision: Int = 0
    public var purpose: KeyPurpose
    /// The merchant identifier the key was requested for (the certificate subject's UID).
    public var merchantID: String?
    /// SHA-256 of the merchant identifier, hex: Apple's KDF partyV.
    public var merchantIdentifierHash: String?
    public var state: KeyState
    /// How the key came to be: generated in the HSM, or imported from software.
    public var origin: Origin
    public var createdAt: Date
    public var activatedAt: Date?
    public var retiredAt: Date?
    /// The key this one succeeds in a rotation.
    public var predecessor: String?

    public enum Origin: String, Sendable, Hashable, Codable {
        case generated
        case imported
    }

    public init(
        purpose: KeyPurpose, merchantID: String?, merchantIdentifierHash: String?, state: KeyState,
        origin: Origin, createdAt: Date, predecessor: String? = nil
    ) {
        self.purpose = purpose
        self.merchantID = merchantID
        self.merchantIdentifierHash = merchantIdentifierHash
        self.state = state
        self.origin = origin
        self.createdAt = createdAt
        self.predecessor = predecessor
    }

    enum CodingKeys: String, CodingKey {
        case formatVersion, revision, purpose, merchantID, merchantIdentifierHash, state, origin
        case createdAt, activatedAt, retiredAt, predecessor
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        formatVersion = try container.decode(Int.self, forKey: .formatVersion)
        revision = try container.decodeIfPresent(Int.self, forKey: .revision) ?? 0
        purpose = try container.decode(KeyPurpose.self, forKey: .purpose)
        merchantID = try container.decodeIfPresent(String.self, forKey: .merchantID)
        merchantIdentifierHash = try container.decodeIfPresent(String.self, forKey: .merchantIdentifierHash)
        state = try container.decode(KeyState.self, forKey: .state)
        origin = try container.decode(Origin.self, forKey: .origin)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        activatedAt = try container.decodeIfPresent(Date.self, forKey: .activatedAt)
        retiredAt = try container.decodeIfPresent(Date.self, forKey: .retiredAt)
        predecessor = try container.decodeIfPresent(String.self, forKey: .predecessor)
    }

    func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(self))
    }

    static func decode(_ bytes: [UInt8]) throws -> KeyRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(KeyRecord.self, from: Data(bytes))
    }
}
