import PaywardenPrimitives

/// What a sealed payload is bound to: the AES-GCM additional data names the record's kind, its
/// owner and its id, so a ciphertext copied into another row (another organisation's, or a token's
/// into a registration) does not open; from format 2 on, a registration's paypage too, so a row
/// moved to another paypage does not open either. The key-encrypting key is not bound here:
/// re-wrapping a data key under a new one leaves the ciphertext as it is.
struct SealContext: Sendable {
    enum Kind: String, Sendable {
        case registration
        case token
    }

    let kind: Kind
    let organization: OrganizationID
    /// The row's primary key: a registration's look-up key, a token's value.
    let recordID: [UInt8]
    /// The paypage a registration was made through; nil for a token, which belongs to its
    /// organisation whatever paypage brought it.
    let paypageID: String?

    init(kind: Kind, organization: OrganizationID, recordID: [UInt8], paypageID: String? = nil) {
        self.kind = kind
        self.organization = organization
        self.recordID = recordID
        self.paypageID = paypageID
    }

    /// The format a new record of this context is sealed in: 2 binds the paypage (registrations);
    /// tokens stay at 1, so a build from before format 2 still reads every token should it be
    /// rolled back (it would lose only the day's registrations).
    var format: Int { paypageID == nil ? 1 : 2 }

    /// The additional data of a record sealed in format `version`: format 1 (rows sealed before the
    /// paypage was bound, still read) without the paypage, format 2 with it. The version is bound
    /// too, so a row's format cannot be changed to skip the paypage.
    func additionalData(version: Int) -> [UInt8] {
        var bytes = Array("paywarden vault\u{0}".utf8)
        var fields = [Array(kind.rawValue.utf8), Array(organization.rawValue.utf8), recordID]
        if version >= 2 { fields.append(Array((paypageID ?? "").utf8)) }
        for field in fields + [Array(String(version).utf8)] {
            // Length-prefixed, so no two different contexts encode to the same bytes.
            bytes += [UInt8(truncatingIfNeeded: field.count >> 8), UInt8(truncatingIfNeeded: field.count)] + field
        }
        return bytes
    }
}
