/// One BER element: its identifier, where its encoding and content lie in the input, and, when
/// constructed, its children.
///
/// Apple's payment-token signatures are BER with indefinite lengths, which DER parsers refuse,
/// so CMS parsing starts here. Only low-tag-number identifiers (tag < 31) occur in CMS.
///
/// Children of a definite-length element are read only when asked for
/// (``BERReader/children(of:in:)``), so the certificates inside a signature, which are passed
/// on whole, are never walked element by element.
struct BERNode: Sendable {
    enum TagClass: UInt8, Sendable {
        case universal = 0
        case application = 1
        case contextSpecific = 2
        case `private` = 3
    }

    let tagClass: TagClass
    /// How deep the element sits; children are one deeper, and the reader refuses depths past
    /// ``BERReader/maximumDepth`` however they are reached.
    let depth: Int
    let tagNumber: UInt8
    let isConstructed: Bool
    /// The whole element, from identifier to the end of its content (end-of-contents included).
    let encoded: Range<Int>
    /// The content octets (for an indefinite length, without the end-of-contents octets).
    let content: Range<Int>
    /// The children of an indefinite-length element, read while finding its end; nil for a
    /// definite-length element, whose children are read on demand.
    let indefiniteChildren: [BERNode]?

    func isUniversal(_ number: UInt8) -> Bool { tagClass == .universal && tagNumber == number }
    func isContext(_ number: UInt8) -> Bool { tagClass == .contextSpecific && tagNumber == number }

    static let integer: UInt8 = 0x02
    static let bitString: UInt8 = 0x03
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let sequence: UInt8 = 0x10
    static let set: UInt8 = 0x11
    static let utcTime: UInt8 = 0x17
    static let generalizedTime: UInt8 = 0x18
}

/// Why BER input was refused.
struct BERError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
