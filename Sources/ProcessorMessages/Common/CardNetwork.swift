/// A card network, from the BIN, with each format's code for it.
public enum CardNetwork: String, Sendable, Hashable, CaseIterable {
    case visa, mastercard, americanExpress, discover, jcb, dinersClub

    /// cnpAPI `methodOfPaymentTypeEnum` (cnpCommon_v12.11.xsd: MC VI AX DC DI PP JC EC GC).
    public var cnpCode: String {
        switch self {
        case .visa: "VI"
        case .mastercard: "MC"
        case .americanExpress: "AX"
        case .discover: "DI"
        case .jcb: "JC"
        case .dinersClub: "DC"
        }
    }

    /// Radial `TenderType` where Radial documents one (Payment-Datatypes-1.0.xsd names VC, MC, AM).
    public var radialTenderType: String? {
        switch self {
        case .visa: "VC"
        case .mastercard: "MC"
        case .americanExpress: "AM"
        case .discover, .jcb, .dinersClub: nil
        }
    }

    public init?(cnpCode: String) {
        guard let network = Self.allCases.first(where: { $0.cnpCode == cnpCode }) else { return nil }
        self = network
    }

    /// The network from the leading digits (ISO/IEC 7812 ranges as the networks publish them).
    public init?(accountNumber: String) {
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
        case two == 36, two == 38, two == 39, (300...305).contains(three): self = .dinersClub
        default: return nil
        }
    }
}
