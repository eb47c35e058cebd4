import PaywardenPrimitives

/// A decrypted payload (docs/apple-pay.md, "The decrypted payload"; Apple's "Payment token format
/// reference" and, for multi-merchant payments, `authenticationResponses`), read once from the bytes by the
/// strict reader the tokens use, for everything that acts on it: the vault, the relays and cnpAPI's
/// `applepayResponse`. The bytes are kept as Apple sent them: the decrypt endpoint answers them
/// verbatim and the vault seals them, so a field Paywarden does not know is never dropped.
///
/// Every field is optional and a field of another JSON type reads as absent: what is required is
/// the reader's to say (the vault needs the account number and expiry, `applepayResponse` neither),
/// as it was when each parsed the payload itself. The one exception is `authenticationResponses`:
/// a cryptogram taken from the wrong entry authorises the wrong merchant, so a payload whose
/// entries are not all well formed is refused whole (``AuthenticationResponses``). The secrets are
/// ``Sensitive``.
public struct DecryptedPayment: Sendable {
    /// The payload exactly as decrypted.
    public let json: [UInt8]
    /// The DPAN, or the MPAN of a merchant token.
    public let applicationPrimaryAccountNumber: Sensitive<String>?
    /// YYMMDD.
    public let applicationExpirationDate: String?
    /// ISO 4217 numeric, leading zeros kept.
    public let currencyCode: String?
    /// Minor units: a number as written (never converted, so never rounded), or a string.
    public let transactionAmount: String?
    public let cardholderName: String?
    public let deviceManufacturerIdentifier: String?
    /// `3DSecure` or `EMV` as Apple wrote it; ``credential`` holds the form's fields.
    public let paymentDataType: String?
    public let credential: PaymentCredential
    /// A merchant token's identifier; nil for a device PAN (and when empty).
    public let merchantTokenIdentifier: String?
    /// A merchant token's card art, last four and expiry, when an object.
    public let merchantTokenMetadata: CanonicalJSONObject?
    /// A multi-merchant payment's submerchant cryptograms, in Apple's order; empty otherwise.
    public let authenticationResponses: [AuthenticationResponse]

    /// Reads `json`; nil unless it is exactly one JSON object, and for a multi-merchant payment
    /// whose `authenticationResponses` ``read(_:)`` refuses.
    public init?(json: [UInt8]) {
        guard let payment = try? Self.read(json) else { return nil }
        self = payment
    }

    /// Reads `json` as the decrypter does: nil when it is not exactly one JSON object (the decrypt
    /// endpoint still answers it as it is), `authentication_responses_invalid` for a multi-merchant
    /// payment whose entries cannot be relied on.
    public static func read(_ json: [UInt8]) throws(PaymentTokenError) -> DecryptedPayment? {
        guard let object = try? TokenJSON.object(json) else { return nil }
        return try DecryptedPayment(json: json, object: object)
    }

    private init(json: [UInt8], object: TokenJSON.Object) throws(PaymentTokenError) {
        self.json = json
        applicationPrimaryAccountNumber = object["applicationPrimaryAccountNumber"]?.text.map { Sensitive($0, hint: "account number") }
        applicationExpirationDate = object["applicationExpirationDate"]?.text
        currencyCode = object["currencyCode"]?.text
        transactionAmount = object["transactionAmount"]?.textOrNumber
        cardholderName = object["cardholderName"]?.text
        deviceManufacturerIdentifier = object["deviceManufacturerIdentifier"]?.text
        paymentDataType = object["paymentDataType"]?.text
        if case .object(let inner)? = object["paymentData"] {
            credential = PaymentCredential(inner)
        } else {
            credential = PaymentCredential(nil)
        }
        merchantTokenIdentifier = object["merchantTokenIdentifier"]?.text.flatMap { $0.isEmpty ? nil : $0 }
        if case .object(let metadata)? = object["merchantTokenMetadata"] {
            merchantTokenMetadata = CanonicalJSONObject(metadata)
        } else {
            merchantTokenMetadata = nil
        }
        if let responses = object["authenticationResponses"] {
            authenticationResponses = try AuthenticationResponses.read(responses, transactionAmount: transactionAmount)
        } else {
            authenticationResponses = []
        }
    }
}
