/// The one BIN table: a payment network by an account number's leading digits, named by the
/// two-letter code eProtect's `type` and cnpAPI's `methodOfPaymentTypeEnum` share. The vault's and
/// the processor messages' network types both read it, so they cannot disagree.
public enum CardNetworkCode: String, Sendable, Hashable, CaseIterable {
    case visa = "VI"
    case mastercard = "MC"
    case americanExpress = "AX"
    case discover = "DI"
    case jcb = "JC"
    case dinersClub = "DC"

    /// The network from the first six digits (ISO/IEC 7812 ranges as the networks publish them);
    /// nil for fewer than six leading digits or an unknown range.
    public init?(accountNumber: some StringProtocol) {
        let digits = Array(accountNumber.utf8.prefix(6)).map { Int($0) - 0x30 }
        guard digits.count == 6, digits.allSatisfy({ (0...9).contains($0) }) else { return nil }
        let six = digits.reduce(0) { $0 * 10 + $1 }
        let two = six / 10_000
        let three = six / 1_000
        let four = six / 100
        switch true {
        case digits[0] == 4: self = .visa
        case (51...55).contains(two), (2221...2720).contains(four): self = .mastercard
        case two == 34 || two == 37: self = .americanExpress
        case four == 6011, two == 65, (644...649).contains(three), (622_126...622_925).contains(six): self = .discover
        case (3528...3589).contains(four): self = .jcb
        // Diners Club International: 300–305, 36, 38 and 39.
        case two == 36, two == 38, two == 39, (300...305).contains(three): self = .dinersClub
        default: return nil
        }
    }
}
