/// MercuryPay's error shape: `CmdStatus` "Error", a `DSIXReturnCode`, a `TextResponse`
/// (docs/processors.md, "MercuryPay"), `ResponseOrigin` "Server" (the answer comes from Paywarden, not the card
/// processor), and the request's `InvoiceNo` echoed when known. No RecordNo: no token on an error.
public enum MercuryPayErrorResponse {
    public enum TokenError: String, Sendable, Hashable, CaseIterable {
        case merchantNotSetUpForTokens = "004117"
        case decryptionServiceUnavailable = "004118"
        case tokenServiceUnavailable = "004119"

        /// The TextResponse. 004118 and 004119 are MercuryPay's wording; 004117's is Paywarden's
        /// rendering of its description ("merchant not set up for tokens").
        public var textResponse: String {
            switch self {
            case .merchantNotSetUpForTokens: "Merchant Not Set Up For Tokens"
            case .decryptionServiceUnavailable: "Decryption Service Unavailable"
            case .tokenServiceUnavailable: "Token Service Unavailable"
            }
        }
    }

    public static func body(_ error: TokenError, invoiceNo: String? = nil, paywardenCode: String? = nil) -> ProcessorJSON {
        body(returnCode: error.rawValue, textResponse: error.textResponse, invoiceNo: invoiceNo, paywardenCode: paywardenCode)
    }

    /// `returnCode` nil leaves `DSIXReturnCode` out: MercuryPay's public material gives no code for
    /// most of Paywarden's own refusals (an unknown registration ID, a malformed request), and a
    /// made-up one would send a client's error handling down the wrong path. `paywardenCode`, when
    /// given, is Paywarden's stable error code (docs/vault.md, "Error codes") in `PaywardenErrorCode`.
    public static func body(
        returnCode: String?, textResponse: String, invoiceNo: String? = nil, paywardenCode: String? = nil
    ) -> ProcessorJSON {
        var members: [ProcessorJSON.Member] = [.init("ResponseOrigin", .string("Server"))]
        if let returnCode { members.append(.init("DSIXReturnCode", .string(returnCode))) }
        members += [.init("CmdStatus", .string("Error")), .init("TextResponse", .string(textResponse))]
        if let invoiceNo { members.append(.init("InvoiceNo", .string(invoiceNo))) }
        if let paywardenCode { members.append(.init("PaywardenErrorCode", .string(paywardenCode))) }
        return .object(members)
    }
}
