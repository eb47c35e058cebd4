/// How account numbers are shown anywhere outside the forward itself: PCI DSS allows at most the
/// first six and last four digits. Every masking in this module goes through here.
public enum CardNumberMasking {
    /// First six and last four kept, the rest `*` (`411111******1111`). Numbers shorter than 13
    /// characters keep only their last four, so nothing shorter than a PAN exposes ten digits.
    public static func firstSixLastFour(_ number: String) -> String {
        let characters = Array(number)
        guard characters.count >= 13 else { return lastFour(number, mask: "*") }
        let hidden = characters.count - 10
        return String(characters.prefix(6)) + String(repeating: "*", count: hidden) + String(characters.suffix(4))
    }

    /// Everything but the last four replaced by `mask` (`XXXXXXXXXXXX1111`, MercuryPay's style).
    public static func lastFour(_ number: String, mask: Character = "X") -> String {
        let characters = Array(number)
        guard characters.count > 4 else { return String(repeating: mask, count: characters.count) }
        return String(repeating: mask, count: characters.count - 4) + String(characters.suffix(4))
    }

    /// Which digits of a `count`-digit account number a masking hides: all but the first six and
    /// last four, or for fewer than 13 digits all but the last four (as ``firstSixLastFour(_:)``).
    static func hiddenDigits(count: Int) -> Range<Int> {
        count >= 13 ? 6..<(count - 4) : 0..<max(count - 4, 0)
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
