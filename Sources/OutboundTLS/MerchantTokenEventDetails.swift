/// Apple's `MerchantTokenEventResponse` (docs/apple-pay.md, "Fetching an event"), decoded with strict bounds:
/// whatever Apple (or whoever answers in its name) sends, nothing unbounded reaches the vault.
public struct MerchantTokenEventDetails: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case unlink = "UNLINK"
        case updatedMetadata = "UPDATED_METADATA"
        case updatedCardArt = "UPDATED_CARD_ART"
        case updatedPublicKey = "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY"
        /// A type Apple added later: recorded, with no effect.
        case other
    }

    /// As Apple sent it: 1 to 64 of [A-Z0-9_].
    public let eventType: String
    public var kind: Kind { Kind(rawValue: eventType) ?? .other }
    /// 1 to 64 printable ASCII characters.
    public let merchantTokenIdentifier: String
    /// Who originated the event (user or issuer), at most 256 characters.
    public let reason: String?
    /// `merchantTokenMetadata`.
    public let metadata: Metadata?

    /// The metadata alone, re-encoded canonically (sorted keys): what the vault records on the
    /// tokens.
    public var metadataJSON: [UInt8]? {
        metadata.map { CanonicalJSON.encode($0.jsonObject) }
    }

    /// The whole event as the event log keeps it: re-encoded from the decoded fields, never
    /// Apple's raw bytes, with sorted keys.
    public var recordedJSON: [UInt8] {
        var object: [String: Any] = ["eventType": eventType, "merchantTokenIdentifier": merchantTokenIdentifier]
        if let reason { object["reason"] = reason }
        if let metadata { object["merchantTokenMetadata"] = metadata.jsonObject }
        return CanonicalJSON.encode(object)
    }

    public init(eventType: String, merchantTokenIdentifier: String, reason: String? = nil, metadata: Metadata? = nil) {
        self.eventType = eventType
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.reason = reason
        self.metadata = metadata
    }

    /// Decodes Apple's body. Unknown top-level fields are ignored; known ones out of bounds or of
    /// the wrong type are refused with `responseInvalid`.
    public init(json: [UInt8]) throws(AppleGatewayError) {
        guard let object = CanonicalJSON.object(json) else {
            throw AppleGatewayError(.responseInvalid, "Apple's event details are not a JSON object")
        }
        let fields = JSONFields(object, path: "")
        let eventType = try fields.string("eventType", maximum: 64, required: true)!
        guard eventType.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }) else {
            throw AppleGatewayError(.responseInvalid, "Apple's event details: eventType is not of [A-Z0-9_]")
        }
        let identifier = try fields.string("merchantTokenIdentifier", maximum: 64, required: true)!
        guard GatewayField.isPrintableToken(identifier, maximum: 64) else {
            throw AppleGatewayError(.responseInvalid, "Apple's event details: merchantTokenIdentifier is not printable ASCII")
        }
        self.eventType = eventType
        self.merchantTokenIdentifier = identifier
        self.reason = try fields.string("reason", maximum: 256)
        self.metadata = try fields.object("merchantTokenMetadata").map { (nested) throws(AppleGatewayError) in try Metadata(nested) }
    }
}
