/// The cnpAPI schema facts this module relies on, each with the XSD it was read from:
/// - cnp: Vantiv/cnp-sdk-for-java src/main/xsd/cnpTransaction_v12.10.xsd, cnpCommon_v12.11.xsd,
///   cnpOnline_v12.10.xsd;
/// - litle: Vantiv/litle-sdk-for-java src/main/xsd/litleTransaction_v10.8.xsd.
enum CnpSchema {
    // MARK: Lengths

    /// `transactionType/@id`: stringMin1Max36CollapseWhiteSpaceType in cnp v12;
    /// stringMin1Max25CollapseWhiteSpaceType in litle v10.8. (The 25 of older docs is litle's.)
    static func idMaximum(_ dialect: CnpDialect) -> Int { dialect == .cnp ? 36 : 25 }
    /// `@reportGroup`: reportGroupType, collapse, 1–25 (both dialects).
    static let reportGroupMaximum = 25
    /// `@customerId`: customerIdType, maxLength 50.
    static let customerIdMaximum = 50
    /// `orderId`, `encryptionKeyId`: string25Type.
    static let orderIdMaximum = 25
    /// `authentication/user`, `authentication/password`: string20Type.
    static let credentialMaximum = 20
    /// `authentication/password` as Paywarden reads it: string20Type holds a processor's password,
    /// but Paywarden's password is an API key (46 characters), so up to 64 are accepted.
    static let passwordMaximum = 64
    /// Root `@version`: versionType, maxLength 10. Root `@merchantId`: merchantIdentificationType, 50.
    static let versionMaximum = 10
    static let merchantIdMaximum = 50
    /// `paypageRegistrationId`: string512Type.
    static let paypageRegistrationIdMaximum = 512
    /// `cardValidationNum`: cvNumType, maxLength 4. `expDate`: expDateType, exactly 4.
    static let cardValidationNumMaximum = 4
    /// `encryptedCardValidationNum`: encryptedCcAccountNumberType, 1–1028.
    static let encryptedValueMaximum = 1028

    // MARK: applepayType / applepayHeaderType (cnpTransaction_v12.10.xsd)

    /// `applepay/data`: the XSD says maxLength 2000, which fits every EC_v1 3DSecure token. EMV payloads get room
    /// with a clear cap (docs/vault.md, "cnpAPI registerTokenRequest"): 8192 characters is four times the XSD and
    /// still well under the 16 KiB text-node cap.
    static let applePayDataMaximum = 8192
    static let applePaySignatureMaximum = 10_000
    static let applePayVersionRange = 5...10
    static let applePayApplicationDataMaximum = 10_000
    static let applePayEphemeralPublicKeyMaximum = 400
    static let applePayPublicKeyHashMaximum = 200
    static let applePayTransactionIdMaximum = 250

    /// `methodOfPaymentTypeEnum` (cnpCommon_v12.11.xsd), the empty value included.
    static let methodsOfPayment = ["MC", "VI", "AX", "DC", "DI", "PP", "JC", "EC", "GC", ""]

    // MARK: Sequences

    /// The payment-source `xs:choice` of `authorization` and `sale` (both dialects, union of versions).
    /// What the relays' stored-credential rule reads of an `authorization` or `sale` (cnpTransaction
    /// v12 `orderSourceType`, `processingTypeEnum`, `recurringRequest`).
    static let storedCredentialFieldNames = ["orderSource", "processingType", "recurringRequest"]

    static let paymentSourceNames: Set<String> = [
        "mpos", "card", "paypal", "token", "paypage", "applepay", "sepaDirectDebit", "ideal", "giropay", "sofort",
    ]

    /// In `authorization`/`sale` the sequence runs `… shipToAddress?, <payment source>,
    /// billMeLaterRequest? (litle only), cardholderAuthentication? (sale: or fraudCheck?),
    /// processingInstructions?, pos?, customBilling?, …`. So `cardholderAuthentication` goes right
    /// after the payment source and any `billMeLaterRequest` that follows it.
    static let betweenPaymentSourceAndCardholderAuthentication: Set<String> = ["billMeLaterRequest"]

    /// `authorizationResponse` lists (xs:all, so order is not enforced; this module keeps the listed
    /// order) `cnpTxnId, orderId, response, responseTime, cardProductId, postDate, message, authCode,
    /// authorizationResponseSubCode, approvedAmount, accountInformation, accountUpdater, fraudResult,
    /// [billMeLaterResponseData (litle)], tokenResponse, enhancedAuthResponse, …`.
    static let beforeTokenResponseInAuthorization: Set<String> = [
        "cnpTxnId", "litleTxnId", "orderId", "response", "responseTime", "cardProductId", "postDate", "message",
        "location", "authCode", "authorizationResponseSubCode", "approvedAmount", "accountInformation",
        "accountUpdater", "fraudResult", "billMeLaterResponseData",
    ]

    /// `saleResponse` lists `cnpTxnId, response, orderId, responseTime, cardProductId, postDate,
    /// message, authCode, authorizationResponseSubCode, approvedAmount, accountInformation,
    /// fraudResult, [billMeLaterResponseData (litle)], tokenResponse, enhancedAuthResponse,
    /// accountUpdater, …` (accountUpdater comes after tokenResponse here).
    static let beforeTokenResponseInSale: Set<String> = [
        "cnpTxnId", "litleTxnId", "response", "orderId", "responseTime", "cardProductId", "postDate", "message",
        "location", "authCode", "authorizationResponseSubCode", "approvedAmount", "accountInformation",
        "fraudResult", "billMeLaterResponseData",
    ]

    /// Elements of type ccAccountNumberType (or holding one) that an upstream may fill with a full
    /// account number: `accountInformation/number`, `accountUpdater/*CardInfo/number`,
    /// `virtualGiftCardResponse/accountNumber`, `applepayResponse/applicationPrimaryAccountNumber`.
    static let accountNumberElementNames: Set<String> = ["number", "accountNumber", "applicationPrimaryAccountNumber"]
}
