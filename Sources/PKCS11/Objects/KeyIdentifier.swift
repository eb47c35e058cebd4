import PaywardenPrimitives

/// A key's `CKA_ID`: the bytes the caller chooses and uses to find the key again, shown as hex.
public struct KeyIdentifier: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses the hex form; nil unless `hex` is a non-empty, even number of hex digits.
    public init?(hex: String) {
        guard !hex.isEmpty, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// A fresh random identifier of 16 bytes.
    public static func random() -> KeyIdentifier {
        KeyIdentifier(bytes: randomBytes(16))
    }

    public var hex: String { Hex.encode(bytes) }

    public var description: String { hex }

    public static func < (lhs: KeyIdentifier, rhs: KeyIdentifier) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
