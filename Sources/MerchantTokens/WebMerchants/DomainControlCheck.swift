/// Reads what a web domain serves to prove which organisations control it: the lines of
/// `https://DOMAIN/.well-known/paywarden-domain-challenge` (docs/web-merchants.md, "Who may
/// register a domain"). ``DomainChallengeFetcher`` reads it over HTTPS from the domain itself.
public protocol DomainControlCheck: Sendable {
    /// The file's lines, trimmed; a failure says why, for the refusal's message.
    func servedChallenges(domain: String) async throws(DomainCheckFailure) -> [String]
}

/// Why a domain's challenge file could not be read: no address, only private ones, no TLS with a
/// certificate for the name, not 200, too large, too slow.
public struct DomainCheckFailure: Error, Sendable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// Where an organisation serves its challenge, under each domain it proves.
public enum DomainChallenge {
    public static let path = "/.well-known/paywarden-domain-challenge"
}
