import Crypto

/// The sender's encryption context (RFC 9180 §5.2): AES-GCM under the schedule's key with the
/// nonce `base_nonce XOR I2OSP(seq, Nn)`, the sequence number counting up from zero.
public struct HPKESenderContext: Sendable {
    package let sharedSecret: [UInt8]
    package let keyScheduleContext: [UInt8]
    package let key: [UInt8]
    package let baseNonce: [UInt8]
    package let exporterSecret: [UInt8]
    package private(set) var sequenceNumber: UInt64 = 0

    init(sharedSecret: [UInt8], keyScheduleContext: [UInt8], key: [UInt8], baseNonce: [UInt8], exporterSecret: [UInt8]) {
        self.sharedSecret = sharedSecret
        self.keyScheduleContext = keyScheduleContext
        self.key = key
        self.baseNonce = baseNonce
        self.exporterSecret = exporterSecret
    }

    /// The nonce for the current sequence number.
    package var nonce: [UInt8] {
        var nonce = baseNonce
        var seq = sequenceNumber
        for index in stride(from: nonce.count - 1, through: nonce.count - 8, by: -1) {
            nonce[index] ^= UInt8(seq & 0xFF)
            seq >>= 8
        }
        return nonce
    }

    /// Seals `plaintext`: returns ciphertext ‖ tag, and moves to the next sequence number.
    public mutating func seal(_ plaintext: [UInt8], additionalData: [UInt8] = []) throws -> [UInt8] {
        guard sequenceNumber < UInt64.max else { throw HPKEError.messageLimitReached }
        let box = try AES.GCM.seal(
            plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce), authenticating: additionalData)
        sequenceNumber += 1
        return Array(box.ciphertext) + Array(box.tag)
    }
}
