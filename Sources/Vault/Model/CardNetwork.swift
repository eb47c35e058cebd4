import PaywardenPrimitives

/// The payment network by BIN, as eProtect's `type` names it (`VI MC AX DI JC DC`; `""` unknown):
/// the one BIN table's code (``CardNetworkCode``), or none.
public struct CardNetwork: RawRepresentable, Sendable, Hashable {
    /// nil when the BIN names no network the table knows.
    public let code: CardNetworkCode?

    public static let unknown = CardNetwork(code: nil)

    public init(code: CardNetworkCode?) { self.code = code }

    /// The network of `bin` (six digits or more) by the one BIN table; `.unknown` when it names none.
    public init(bin: String) { self.init(code: CardNetworkCode(accountNumber: bin)) }

    /// eProtect's `type`: the code, or `""` for an unknown network.
    public var rawValue: String { code?.rawValue ?? "" }

    public init?(rawValue: String) {
        if rawValue.isEmpty {
            self = .unknown
        } else {
            guard let code = CardNetworkCode(rawValue: rawValue) else { return nil }
            self.init(code: code)
        }
    }
}
