import Foundation

/// Decrypted payloads as Apple writes them (compact JSON), for the forge to encrypt. Field
/// order and spelling are kept byte for byte through decryption.
public enum PaymentPayloads {
    public static func threeDSecure(
        pan: String = "4111111111111111", cryptogram: String = "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eci: String? = "7"
    ) -> [UInt8] {
        let eciField = eci.map { #","eciIndicator":"\#($0)""# } ?? ""
        return compact([
            #"{"applicationPrimaryAccountNumber":"\#(pan)","applicationExpirationDate":"291231","currencyCode":"978","#,
            #""transactionAmount":1999,"cardholderName":"Jane Appleseed","deviceManufacturerIdentifier":"040010030273","#,
            #""paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"\#(cryptogram)"\#(eciField)}}"#,
        ])
    }

    public static func emv(pan: String = "6212345678901232") -> [UInt8] {
        compact([
            #"{"applicationPrimaryAccountNumber":"\#(pan)","applicationExpirationDate":"281130","currencyCode":"156","#,
            #""transactionAmount":88800,"deviceManufacturerIdentifier":"050110030273","paymentDataType":"EMV","#,
            #""paymentData":{"emvData":"nyYIAAAAAAAAAAKfJwGAnxAHBgEKA6AAAJ83BAAAAACfNgIAAZ8kAQA=","encryptedPINData":"0A1B2C3D4E5F6071"}}"#,
        ])
    }

    /// A merchant-token (MPAN) payload with fields Paywarden does not know, which must survive
    /// untouched, and with `authenticationResponses` two multi-merchant entries (amounts as strings there).
    public static func merchantToken(
        pan: String = "5204245250001488", merchantTokenIdentifier: String = "DNITHE302409093402145671",
        authenticationResponses: Bool = false
    ) -> [UInt8] {
        let responses =
            authenticationResponses
            ? #""authenticationResponses":["#
                + #"{"merchantIdentifier":"merchant.com.example.a","authenticationData":"AAbbCCddEEff","transactionAmount":"1250"},"#
                + #"{"merchantIdentifier":"merchant.com.example.b","authenticationData":"GGhhIIjjKKll","transactionAmount":"1250"}],"#
            : ""
        return compact([
            #"{"applicationPrimaryAccountNumber":"\#(pan)","applicationExpirationDate":"300531","currencyCode":"840","#,
            #""transactionAmount":2500,"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure","#,
            #""paymentData":{"onlinePaymentCryptogram":"AJcBBBBBBBBBBBBBBBBBBBBBBBB="},"#,
            #""merchantTokenIdentifier":"\#(merchantTokenIdentifier)","#,
            #""merchantTokenMetadata":{"cardArt":[{"url":"https://example.test/art.png","type":"FULL_CARD_ART"}],"#,
            #""cardMetadata":{"fpanSuffix":"1488","expirationDate":"05/30"}},\#(responses)"#,
            #""futureField":{"nested":[1,2.5,null,true],"unicode":"caf\u00e9"}}"#,
        ])
    }

    /// A 3-D Secure payload of a multi-merchant payment (Apple's `multiTokenContexts`): the top-level
    /// cryptogram and `authenticationResponses` given as JSON text (several entries, or a malformed
    /// value for the refusals). ``multiMerchantResponses`` are three well-formed entries shaped like
    /// the only public sample (64 hex characters, amounts as strings in minor units).
    public static func multiMerchant(
        pan: String = "4111111111111111", transactionAmount: String = "50000", authenticationResponses: String = multiMerchantResponses
    ) -> [UInt8] {
        compact([
            #"{"applicationPrimaryAccountNumber":"\#(pan)","applicationExpirationDate":"291231","currencyCode":"840","#,
            #""transactionAmount":\#(transactionAmount),"deviceManufacturerIdentifier":"040010030273","#,
            #""paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AgAAAAAABk4DWZ4C28yUQAAAAAA=","eciIndicator":"7"},"#,
            #""authenticationResponses":\#(authenticationResponses)}"#,
        ])
    }

    /// The submerchants of ``multiMerchant(pan:transactionAmount:authenticationResponses:)``: air travel,
    /// hotel and car rental (Apple's WWDC22 example), 150 + 300 + 50 of a 500 total.
    public static let submerchants: [(merchantIdentifier: String, cryptogram: String, amount: String)] = [
        ("0aff534d6d46fd653f60e6161c53101ee8d9cbc20b1bc40533c929d0a6aae6bc", "AAAIAKnglVRsCyOvcgIAAAAAAAA=", "15000"),
        ("bfc9a63b4ebab8cde90234731cb18a544c306b0af747d93d773fedb603f0945e", "AAAIANBEqODkDcrDTgIAAAAAAAA=", "30000"),
        ("5b6e0e3f1c2d4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d", "AAAIAPcarRentaLcRypToGRAm00=", "5000"),
    ]

    public static var multiMerchantResponses: String {
        "["
            + submerchants.map {
                #"{"merchantIdentifier":"\#($0.merchantIdentifier)","authenticationData":"\#($0.cryptogram)","#
                    + #""transactionAmount":"\#($0.amount)"}"#
            }.joined(separator: ",") + "]"
    }

    /// The pieces above are one line of JSON split for the source's sake.
    private static func compact(_ pieces: [String]) -> [UInt8] {
        Array(pieces.joined().utf8)
    }
}
