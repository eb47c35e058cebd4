import Foundation

/// eProtect paypage registrations as a mobile app posts them: the Apple Pay token's fields as
/// `application/x-www-form-urlencoded`, named as Vantiv's demo app and eProtect JS name them.
public enum EProtectForms {
    /// The form for `token` (a `PKPaymentToken` or its `paymentData`, JSON).
    public static func form(
        token: [UInt8], paypageID: String, reportGroup: String = "mobile", id: String = "reg-1", orderID: String? = "order-1",
        extra: [(String, String)] = []
    ) throws -> [UInt8] {
        var object = try JSONSerialization.jsonObject(with: Data(token)) as? [String: Any] ?? [:]
        if let inner = object["paymentData"] as? [String: Any] { object = inner }
        let header = object["header"] as? [String: Any] ?? [:]
        var fields: [(String, String)] = [
            ("paypageId", paypageID), ("reportGroup", reportGroup), ("id", id), ("requestType", "eProtect"),
            ("applepay.data", object["data"] as? String ?? ""), ("applepay.signature", object["signature"] as? String ?? ""),
            ("applepay.version", object["version"] as? String ?? ""),
        ]
        if let orderID { fields.append(("orderId", orderID)) }
        for name in ["ephemeralPublicKey", "wrappedKey", "publicKeyHash", "transactionId", "applicationData"] {
            if let value = header[name] as? String { fields.append(("applepay.header.\(name)", value)) }
        }
        return encode(fields + extra)
    }

    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let pairs = fields.map { name, value in
            (name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "") + "="
                + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }
        return Array(pairs.joined(separator: "&").utf8)
    }
}
