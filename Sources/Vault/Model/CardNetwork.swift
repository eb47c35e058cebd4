import PaywardenPrimitives

/// The payment network by BIN, as eProtect's `type` names it (`VI MC AX DI JC DC`; `""` unknown).
public enum CardNetwork: String, Sendable, Hashable {
    case visa = "VI"
    case mastercard = "MC"
    case americanExpress = "AX"
    case discover = "DI"
    case jcb = "JC"
    case dinersClub = "DC"
    case unknown = ""

    /// The network of `bin` (six digits or more) by the one BIN table; `.unknown` when it names none.
    public init(bin: String) {
        self = CardNetworkCode(accountNumber: bin).flatMap { CardNetwork(rawValue: $0.rawValue) } ?? .unknown
    }
}
