/// The two token operations Paywarden accepts, and the keyed operation each becomes upstream.
public enum MercuryPayOperation: String, Sendable, Hashable, CaseIterable {
    case saleByRecordNo = "SaleByRecordNo"
    case authorizeByRecordNo = "AuthorizeByRecordNo"

    /// `/PaymentsAPI/Credit/SaleByRecordNo`, `/PaymentsAPI/Credit/AuthorizeByRecordNo`.
    public var path: String { "/PaymentsAPI/Credit/\(rawValue)" }

    /// The keyed (non-token) resource the forwarded request goes to: `Credit/Sale` for a sale,
    /// `Credit/PreAuth` for an authorization (MercuryPay/REST.Nodejs samples
    /// REST-Nodejs-Credit-1-Sale.js and REST-Nodejs-Credit-5-PreAuth.js).
    public var upstreamPath: String {
        switch self {
        case .saleByRecordNo: "/PaymentsAPI/Credit/Sale"
        case .authorizeByRecordNo: "/PaymentsAPI/Credit/PreAuth"
        }
    }

    /// The operation for a request path, nil for anything else.
    public init?(path: String) {
        guard let operation = Self.allCases.first(where: { $0.path == path }) else { return nil }
        self = operation
    }
}

/// `TokenType` (developer.vantiv.com DOC-1532: RegistrationID, OmniToken, MToken). Both spellings of
/// RegistrationID are accepted (docs/processors.md, "MercuryPay"). MToken, MercuryPay's own token, is refused: it
/// is not Paywarden's to detokenize.
public enum MercuryPayTokenType: String, Sendable, Hashable, CaseIterable {
    case registrationID = "RegistrationID"
    case omniToken = "OmniToken"

    init?(field value: String) {
        switch value {
        case "RegistrationID", "RegistrationId": self = .registrationID
        case "OmniToken": self = .omniToken
        default: return nil
        }
    }
}

/// `Frequency`: OneTime or Recurring (wix-playground/libpay-mercurypay Frequencies).
public enum MercuryPayFrequency: String, Sendable, Hashable, CaseIterable {
    case oneTime = "OneTime"
    case recurring = "Recurring"
}
