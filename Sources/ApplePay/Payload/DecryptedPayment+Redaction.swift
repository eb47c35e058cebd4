/// What a log line, an error or `dump` shows of a decrypted payload: its shape, never its bytes.
/// `json` holds the account number and the cryptogram in clear, so the synthesized description
/// (an array of bytes anyone can decode) must never be the one printed.
extension DecryptedPayment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "DecryptedPayment(\(json.count) bytes, type: \(paymentDataType ?? "none"), merchant token: \(merchantTokenIdentifier != nil))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "json": "<\(json.count) bytes hidden>", "paymentDataType": paymentDataType as Any,
                "merchantToken": merchantTokenIdentifier != nil,
            ], displayStyle: .struct)
    }
}

extension DecryptedPaymentToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let payload = "<\(paymentData.count) bytes hidden>"
        return "DecryptedPaymentToken(\(version.rawValue), transaction \(transactionID), key \(keyID), payload: \(payload))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "version": version.rawValue, "transactionID": transactionID, "keyID": keyID,
                "paymentData": "<\(paymentData.count) bytes hidden>",
            ], displayStyle: .struct)
    }
}
