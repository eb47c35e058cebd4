/// The two namespaces cnpAPI answers in. The legacy Litle schema names its root elements, transaction
/// ids and tokens `litle…` where the current one says `cnp…`; everything else is shared.
public enum CnpDialect: String, Sendable, Hashable, CaseIterable {
    /// `http://www.vantivcnp.com/schema` (cnpAPI v12).
    case cnp
    /// `http://www.litle.com/schema` (LitleXML v8–v11; seed 002 uses 10.3).
    case litle

    public var namespaceURI: String {
        switch self {
        case .cnp: "http://www.vantivcnp.com/schema"
        case .litle: "http://www.litle.com/schema"
        }
    }

    public var requestRootName: String { self == .cnp ? "cnpOnlineRequest" : "litleOnlineRequest" }
    public var responseRootName: String { self == .cnp ? "cnpOnlineResponse" : "litleOnlineResponse" }
    /// `cnpTxnId` / `litleTxnId`.
    public var transactionIdName: String { self == .cnp ? "cnpTxnId" : "litleTxnId" }
    /// `cnpToken` / `litleToken`.
    public var tokenName: String { self == .cnp ? "cnpToken" : "litleToken" }

    /// The dialect whose namespace this is.
    public init?(namespaceURI: String?) {
        guard let dialect = Self.allCases.first(where: { $0.namespaceURI == namespaceURI }) else { return nil }
        self = dialect
    }

    var reader: XMLFieldReader { XMLFieldReader(format: .cnpAPI, namespaceURI: namespaceURI) }

    /// A new element in this dialect's namespace, unprefixed.
    func element(_ localName: String, text: String? = nil) -> ProcessorXML.Element {
        ProcessorXML.Element(name: .init(namespaceURI: namespaceURI, localName: localName), children: text.map { [.text($0)] } ?? [])
    }
}
