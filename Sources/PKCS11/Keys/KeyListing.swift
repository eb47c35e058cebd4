/// The private keys of a token as one listing: those read, and those that could not be.
public struct KeyListing: Sendable {
    public var keys: [KeyObject] = []
    /// Private keys skipped because they could not be described; foreign objects in a shared
    /// token are among them, so whether one matters is the caller's to judge.
    public var unreadable: [UnreadableKey] = []

    public init() {}
}

/// A private key object that could not be read as a key, and why. The reason names attributes,
/// never their values.
public struct UnreadableKey: Sendable, Hashable {
    /// `CKA_ID`, when even that could not be read.
    public let id: KeyIdentifier?
    public let reason: String

    public init(id: KeyIdentifier?, reason: String) {
        self.id = id
        self.reason = reason
    }
}
