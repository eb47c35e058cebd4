/// How one call to a processor upstream ended: the `outcome` label of
/// `paywarden_upstream_requests_total`, a fixed set so that every series is there from the start.
public enum UpstreamOutcome: String, Sendable, CaseIterable {
    case ok
    /// The upstream answered a 4xx status.
    case http4xx = "http_4xx"
    /// The upstream answered a 5xx status, or another that is not a success.
    case http5xx = "http_5xx"
    /// No connection, a refused handshake, or a connection lost before the answer.
    case unreachable
    /// No answer within the configured timeout.
    case timeout
    /// An answer longer than the relay reads.
    case tooLarge = "too_large"
    /// A success whose body is not one of the format's answers.
    case invalidResponse = "invalid_response"
}
