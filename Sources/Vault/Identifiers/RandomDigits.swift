import Crypto

/// Decimal digits from the system CSPRNG, without modulo bias.
enum RandomDigits {
    static func draw(_ count: Int) -> [UInt8] {
        var digits: [UInt8] = []
        digits.reserveCapacity(count)
        while digits.count < count {
            // 250 is the largest multiple of 10 under 256: bytes above it are redrawn.
            for byte in SymmetricKey(size: .bits256).withUnsafeBytes({ Array($0) }) where byte < 250 && digits.count < count {
                digits.append(byte % 10)
            }
        }
        return digits
    }

    static func string(_ digits: [UInt8]) -> String {
        String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self)
    }
}
