import ApplePay

/// What the decrypt response says besides the payload: the token's facts and the key that opened it.
public struct DecryptedTokenFacts: Encodable, Sendable, SelfEncodingEnvelope {
    public struct Token: Encodable, Sendable {
        public let version: String
        public let transactionId: String
        public let publicKeyHash: String
        public let signingTime: String
    }

    public struct Key: Encodable, Sendable {
        public let id: String
        public let merchantIdentifierHash: String
    }

    public let token: Token
    public let key: Key

    public init(_ result: DecryptedPaymentToken) {
        token = Token(
            version: result.version.rawValue, transactionId: result.transactionID, publicKeyHash: result.publicKeyHash,
            signingTime: RFC3339.string(from: result.signingTime)
        )
        key = Key(id: result.keyID, merchantIdentifierHash: result.merchantIdentifierHash)
    }

    public func writeMembers(to writer: inout JSONMemberWriter) {
        writer.object("key") { key in
            key.member("id", self.key.id)
            key.member("merchantIdentifierHash", self.key.merchantIdentifierHash)
        }
        writer.object("token") { token in
            token.member("publicKeyHash", self.token.publicKeyHash)
            token.member("signingTime", self.token.signingTime)
            token.member("transactionId", self.token.transactionId)
            token.member("version", self.token.version)
        }
    }

    /// The decrypt endpoint's body with `paymentData` in place of the decrypted payload (the CLI
    /// passes a masked copy): one shape for the API and `paywarden token decrypt --json`.
    public func responseBody(paymentData: [UInt8]) throws -> [UInt8] {
        Array(buffer: try JSONResponses.splice(key: "paymentData", verbatim: paymentData, envelope: self))
    }
}
