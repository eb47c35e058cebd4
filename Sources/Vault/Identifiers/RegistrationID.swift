/// An eProtect paypage registration ID: 19 digits from the CSPRNG whose Luhn sum is ≡ 1 (mod 10),
/// so it is never mistaken for a card number. A bearer secret while it lives: never printed.
public struct RegistrationID: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public static let length = 19
    /// cnpAPI's `string512Type`: the longest value redemption accepts before answering 877.
    public static let maximumPresentedLength = 512

    public let value: String

    init(unchecked value: String) {
        self.value = value
    }

    /// A new random ID.
    public static func generate() -> RegistrationID {
        let prefix = RandomDigits.draw(length - 1)
        return RegistrationID(unchecked: RandomDigits.string(prefix + [Luhn.modTenPlusOneCheckDigit(for: prefix)]))
    }

    /// Whether `presented` can be a registration ID this vault issued: 19 digits, MOD 10+1. Any
    /// other value is 877 without a look-up.
    public static func isWellFormed(_ presented: some StringProtocol) -> Bool {
        presented.utf8.count == length && Luhn.isModTenPlusOne(presented)
    }

    public var description: String { "<registration id>" }
    public var debugDescription: String { description }
}
