import PKCS11

/// The merchant keys in the HSM: those that could be read, and those that could not.
public struct KeyInventory: Sendable {
    /// Oldest first.
    public let keys: [MerchantKey]
    public let unreadable: [UnreadableMerchantKey]
    /// Private keys in the HSM without a record in this database, by id.
    public let unadopted: [UnadoptedKey]
}

/// A key Paywarden manages whose key object, record or certificate could not be read. The reason
/// names the object and the failure, never key material.
public struct UnreadableMerchantKey: Sendable, Hashable {
    public let id: KeyIdentifier
    public let reason: String
}
