import OutboundTLS
import PaywardenStorage

/// A web merchant as Paywarden recorded it beside what Apple holds now.
public struct WebMerchantShown: Sendable {
    public let record: WebMerchantRecord
    /// Apple's details; nil when the registration is deleted (Apple no longer knows it).
    public let apple: MerchantDetails?
    /// Whether Apple's `encryptTo` hash is the SHA-256 of the recorded `encryptTo`; nil without Apple's details.
    public let encryptToMatches: Bool?
    /// Domains recorded here that Apple does not list, and the other way round.
    public let onlyHere: [String]
    public let onlyAtApple: [String]
}
