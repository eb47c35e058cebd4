import Foundation

/// Hides the secrets of a decrypted payload (PAN, cryptogram, EMV data, PIN block,
/// authentication data) for display, keeping its shape and every other field.
public enum PaymentDataMasking {
    /// Fields masked wherever they occur.
    static let secretFields: Set<String> = [
        "onlinePaymentCryptogram", "emvData", "encryptedPINData", "authenticationData",
    ]

    /// The payload with secrets masked: the PAN keeps its last four digits.
    public static func masked(_ paymentData: [UInt8]) -> Any? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(paymentData)) else { return nil }
        return mask(object, key: nil)
    }

    /// A PAN with all but its last four digits replaced.
    public static func maskedPAN(_ pan: String) -> String {
        String(repeating: "*", count: max(pan.count - 4, 0)) + pan.suffix(4)
    }

    private static func mask(_ value: Any, key: String?) -> Any {
        if let dictionary = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (name, inner) in dictionary { result[name] = mask(inner, key: name) }
            return result
        }
        if let array = value as? [Any] { return array.map { mask($0, key: key) } }
        if let text = value as? String, let key {
            if key == "applicationPrimaryAccountNumber" { return maskedPAN(text) }
            if secretFields.contains(key) { return "<masked \(text.count) characters>" }
        }
        return value
    }
}
