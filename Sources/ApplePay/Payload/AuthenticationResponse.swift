import PaywardenPrimitives

/// One submerchant's entry in a multi-merchant payment's `authenticationResponses`
/// (Apple's payment token format for multi-merchant payments): its cryptogram, for the amount
/// authorised to it.
public struct AuthenticationResponse: Sendable {
    /// 64 hex characters: a digest Apple derives, not the identifier the coordinator sent.
    public let merchantIdentifier: String?
    /// The network's cryptogram for this submerchant.
    public let authenticationData: Sensitive<String>?
    /// A string here (a number at the top level of the payload).
    public let transactionAmount: String?

    init(_ object: TokenJSON.Object) {
        merchantIdentifier = object["merchantIdentifier"]?.text
        authenticationData = object["authenticationData"]?.text.map { Sensitive($0, hint: "cryptogram") }
        transactionAmount = object["transactionAmount"]?.textOrNumber
    }
}
