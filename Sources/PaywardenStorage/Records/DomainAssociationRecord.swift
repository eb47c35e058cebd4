import Foundation

/// The platform integrator's domain-verification file, byte for byte, as Apple issued it.
public struct DomainAssociationRecord: Sendable, Hashable {
    public var content: [UInt8]
    /// SHA-256 of `content`, lowercase hex.
    public var sha256: String
    public var storedAt: Date

    public init(content: [UInt8], sha256: String, storedAt: Date) {
        self.content = content
        self.sha256 = sha256
        self.storedAt = storedAt
    }
}
