import PaywardenPrimitives

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

    /// The network the one BIN table names by `code`: the same six networks.
    public init(_ code: CardNetworkCode) {
        switch code {
        case .visa: self = .visa
        case .mastercard: self = .mastercard
        case .americanExpress: self = .americanExpress
        case .discover: self = .discover
        case .jcb: self = .jcb
        case .dinersClub: self = .dinersClub
        }
    }

    /// The network from the leading digits, by the one BIN table (``CardNetworkCode``).
    public init?(accountNumber: String) {
        guard let code = CardNetworkCode(accountNumber: accountNumber) else { return nil }
        self.init(code)
    }
}
