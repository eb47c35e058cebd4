/// The Luhn (MOD 10) sum, and the MOD 10+1 rule the vault issues every identifier under: the sum
/// of all digits is ≡ 1 (mod 10), so no registration ID or high-value token passes as a card number.
public enum Luhn {
    /// The Luhn sum of `digits` (values 0–9), doubling every second digit from the right.
    public static func sum(_ digits: some BidirectionalCollection<UInt8>) -> Int {
        var total = 0
        for (position, digit) in digits.reversed().enumerated() {
            let value = Int(digit)
            total += position % 2 == 1 ? (value * 2 > 9 ? value * 2 - 9 : value * 2) : value
        }
        return total
    }

    /// The digits of `text`, or nil when it holds anything but ASCII digits (or nothing).
    public static func digits(_ text: some StringProtocol) -> [UInt8]? {
        var digits: [UInt8] = []
        digits.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            guard (0x30...0x39).contains(byte) else { return nil }
            digits.append(byte - 0x30)
        }
        return digits.isEmpty ? nil : digits
    }

    /// Whether `text` is all digits with a Luhn sum ≡ 0: what a card number satisfies.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        digits(text).map { sum($0) % 10 == 0 } ?? false
    }

    /// Whether `text` is all digits with a Luhn sum ≡ 1 (MOD 10+1).
    public static func isModTenPlusOne(_ text: some StringProtocol) -> Bool {
        digits(text).map { sum($0) % 10 == 1 } ?? false
    }

    /// The last digit that makes `prefix` + digit sum to ≡ 1 (mod 10).
    public static func modTenPlusOneCheckDigit(for prefix: [UInt8]) -> UInt8 {
        // The appended digit is not doubled; every digit of `prefix` moves one place left.
        let partial = sum(prefix + [0])
        return UInt8((11 - partial % 10) % 10)
    }
}
