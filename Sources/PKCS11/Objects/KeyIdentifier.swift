/// A key's `CKA_ID`: the bytes Paywarden chooses and uses to find the key again, shown as hex.
public struct KeyIdentifier: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses the hex form; nil unless `hex` is an even number of hex digits.
    public init?(hex: String) {
        guard hex.count % 2 == 0, !hex.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.bytes = bytes
    }

    /// A fresh random identifier of 16 bytes.
    public static func random() -> KeyIdentifier {
        var generator = SystemRandomNumberGenerator()
        return KeyIdentifier(bytes: (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    public var hex: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    public var description: String { hex }

    public static func < (lhs: KeyIdentifier, rhs: KeyIdentifier) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
