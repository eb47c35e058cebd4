import Foundation

/// What the stand-in answers: a status, headers and a body.
public struct StandInResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Sent once this gate is released, when there is one.
    var gate: StandInGate?

    public init(status: Int, body: [UInt8] = [], headers: [(String, String)] = []) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    /// A JSON body given as text (for bodies out of bounds or malformed on purpose).
    public static func json(status: Int = 200, _ text: String) -> StandInResponse {
        StandInResponse(status: status, body: Array(text.utf8), headers: [("Content-Type", "application/json")])
    }

    /// A `MerchantTokenEventResponse` of `type`.
    public static func event(
        type: String, merchantTokenID: String, metadata: StandInTokenMetadata? = nil, reason: String? = "USER"
    ) -> StandInResponse {
        var object: [String: Any] = ["eventType": type, "merchantTokenIdentifier": merchantTokenID]
        if let reason { object["reason"] = reason }
        if let metadata { object["merchantTokenMetadata"] = metadata.jsonObject }
        return StandInResponse(status: 200, body: encode(object), headers: [("Content-Type", "application/json")])
    }

    /// Apple's `ErrorResponse`.
    public static func error(status: Int, statusCode: String? = nil, message: String, subStatusCode: String? = nil) -> StandInResponse {
        var object: [String: Any] = ["statusCode": statusCode ?? "\(status)", "errorMessage": message]
        if let subStatusCode { object["subStatusCode"] = subStatusCode }
        return StandInResponse(status: status, body: encode(object), headers: [("Content-Type", "application/json")])
    }

    static func encode(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }
}

/// `merchantTokenMetadata` for ``StandInResponse/event(type:merchantTokenID:metadata:reason:)``:
/// plain dictionaries, so a test can put anything in them, bounds broken included.
public struct StandInTokenMetadata: Sendable {
    /// Entries of `name`, `type`, `url`.
    public var cardArt: [[String: String]]?
    /// `cardCountry`, `expirationDate`, `fpanSuffix`, `longDescription`, `shortDescription`.
    public var cardMetadata: [String: String]?

    public init(cardArt: [[String: String]]? = nil, cardMetadata: [String: String]? = nil) {
        self.cardArt = cardArt
        self.cardMetadata = cardMetadata
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = [:]
        if let cardArt { object["cardArt"] = cardArt }
        if let cardMetadata { object["cardMetadata"] = cardMetadata }
        return object
    }
}

/// A request the stand-in received, with what the TLS layer knew of its client.
public struct RecordedRequest: Sendable {
    public let method: String
    /// The request target as sent (path and query).
    public let path: String
    public let headers: [(String, String)]
    public let body: [UInt8]
    /// The client certificate's subject (RFC 4514 style), serial number (hex) and DER.
    public let clientCertificateSubject: String?
    public let clientCertificateSerial: String?
    public let clientCertificateDER: [UInt8]?
    /// "TLSv1.2" or "TLSv1.3".
    public let tlsVersion: String?

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as a JSON object, if it is one.
    public var jsonBody: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}
