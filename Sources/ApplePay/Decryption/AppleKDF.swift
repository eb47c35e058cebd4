/// The otherInfo of Apple's EC_v1 key derivation: algorithm id ‖ partyU ‖ partyV, where the
/// algorithm id is length-prefixed "id-aes256-GCM", partyU is "Apple" and partyV the raw
/// 32-byte SHA-256 of the merchant identifier (not its 64 hex digits).
enum AppleKDF {
    private static let algorithmID: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8)
    private static let partyU: [UInt8] = Array("Apple".utf8)

    static func otherInfo(merchantIdentifierHash partyV: [UInt8]) -> [UInt8] {
        algorithmID + partyU + partyV
    }
}
