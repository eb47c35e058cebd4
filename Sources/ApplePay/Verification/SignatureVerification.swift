import Foundation

/// What signature verification established about a token, as far as it got.
public struct SignatureVerification: Sendable {
    public var signingTime: Date?
    /// The certificate subjects, leaf first.
    public var chain: [String] = []
    public var signatureAlgorithm: String?
    /// The first step that failed, or nil when every step passed.
    public var failure: PaymentTokenError?

    public var passed: Bool { failure == nil }
}
