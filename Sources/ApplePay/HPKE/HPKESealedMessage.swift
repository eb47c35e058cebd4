/// One message sealed by ``HPKEAuthSender``: `enc` (the ephemeral public key) and
/// ciphertext ‖ tag.
public struct HPKESealedMessage: Sendable, Hashable {
    public let encapsulatedKey: [UInt8]
    public let ciphertext: [UInt8]

    public init(encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        self.encapsulatedKey = encapsulatedKey
        self.ciphertext = ciphertext
    }
}
