/// What a sealed payload is bound to: the AES-GCM additional data names the record's kind, its
/// owner and its id, so a ciphertext copied into another row (another organisation's, or a token's
/// into a registration) does not open. The key-encrypting key is not bound here: re-wrapping a data
/// key under a new one leaves the ciphertext as it is.
struct SealContext: Sendable {
    enum Kind: String, Sendable {
        case registration
        case token
    }

    let kind: Kind
    let organization: String
    /// The row's primary key: a registration's look-up key, a token's value.
    let recordID: [UInt8]

    func additionalData(version: Int) -> [UInt8] {
        var bytes = Array("paywarden vault\u{0}".utf8)
        for field in [Array(kind.rawValue.utf8), Array(organization.utf8), recordID, Array(String(version).utf8)] {
            // Length-prefixed, so no two different contexts encode to the same bytes.
            bytes += [UInt8(truncatingIfNeeded: field.count >> 8), UInt8(truncatingIfNeeded: field.count)] + field
        }
        return bytes
    }
}
