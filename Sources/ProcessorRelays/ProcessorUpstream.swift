import ProcessorMessages

/// What a relay asks of its upstream: one exchange (the message out, the reply made the client's
/// by `rewrite`) and the upstream's configuration (its credentials). ``UpstreamClient`` answers
/// over HTTPS (mutual TLS where configured); the relays' own tests answer in process, so the
/// orchestration (redeem, card data, exchange, masked reply) is tested without a socket.
public protocol ProcessorUpstream: Sendable {
    var configuration: UpstreamConfiguration { get }

    /// POSTs `body` to the upstream's `path` once and rewrites a 2xx reply; anything else is a
    /// ``UpstreamClient/Failure``.
    func exchange<Value>(
        _ path: String, body: [UInt8], contentType: String, headers: [(String, String)],
        rewrite: ([UInt8]) throws(ProcessorMessageError) -> Value
    ) async throws(UpstreamClient.Failure) -> Value
}

extension UpstreamClient: ProcessorUpstream {}
