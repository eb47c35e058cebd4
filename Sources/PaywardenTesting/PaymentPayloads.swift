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

    /// A merchant-token (MPAN) payload with multi-merchant authentication responses (amounts
    /// as strings there) and fields Paywarden does not know, which must survive untouched.
    public static func merchantToken(pan: String = "5204245250001488") -> [UInt8] {
        compact([
            #"{"applicationPrimaryAccountNumber":"\#(pan)","applicationExpirationDate":"300531","currencyCode":"840","#,
            #""transactionAmount":2500,"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure","#,
            #""paymentData":{"onlinePaymentCryptogram":"AJcBBBBBBBBBBBBBBBBBBBBBBBB="},"#,
            #""merchantTokenIdentifier":"DNITHE302409093402145671","#,
            #""merchantTokenMetadata":{"cardArt":[{"url":"https://example.test/art.png","type":"FULL_CARD_ART"}],"#,
            #""cardMetadata":{"fpanSuffix":"1488","expirationDate":"05/30"}},"authenticationResponses":["#,
            #"{"merchantIdentifier":"merchant.com.example.a","authenticationData":"AAbbCCddEEff","transactionAmount":"1250"},"#,
            #"{"merchantIdentifier":"merchant.com.example.b","authenticationData":"GGhhIIjjKKll","transactionAmount":"1250"}],"#,
            #""futureField":{"nested":[1,2.5,null,true],"unicode":"caf\u00e9"}}"#,
        ])
    }

    /// The pieces above are one line of JSON split for the source's sake.
    private static func compact(_ pieces: [String]) -> [UInt8] {
        Array(pieces.joined().utf8)
    }
}
