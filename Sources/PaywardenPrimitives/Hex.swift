/// Hexadecimal text for bytes, the one codec every layer uses (key ids, transaction ids, hashes,
/// API-key digests). Decoding is strict: an even number of hex digits, nothing else.
///
/// `@inlinable`: every token's transaction id passes through here, and a generic function called
/// across modules without it runs unspecialised.
public enum Hex {
    @usableFromInline static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil unless it is an even number of hex digits (either case).
    @inlinable
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(utf8: Array(text.utf8))
    }

    /// The same, from the text's UTF-8 bytes.
    public static func decode(utf8: [UInt8]) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    @usableFromInline
    static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x41...0x46: digit - 0x41 + 10
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }
}
