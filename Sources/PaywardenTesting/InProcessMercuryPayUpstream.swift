import Foundation
import ProcessorMessages
import ProcessorRelays
import Synchronization

/// MercuryPay's credit sale answered in process, exactly as ``ProcessorUpstreamStandIn`` answers it
/// over HTTPS (the same answers, the same checks of what arrived), for the relay's tests without a
/// socket. What the relay sent is kept, as the stand-in keeps it.
public final class InProcessMercuryPayUpstream: ProcessorUpstream {
    public let configuration: UpstreamConfiguration
    private let state = Mutex<(answer: ProcessorUpstreamStandIn.Answer, received: [ReceivedMercuryPayRequest])>((.approve, []))

    public init(credentials: UpstreamConfiguration.Credentials? = nil) {
        // Never dialled: the exchange below answers in process.
        configuration = UpstreamConfiguration(
            format: .mercuryPay, baseURL: URL(string: "https://mercurypay.invalid")!, credentials: credentials)
    }

    /// How the next requests are answered (``ProcessorUpstreamStandIn/Answer/approve`` at first).
    public func setAnswer(_ answer: ProcessorUpstreamStandIn.Answer) { state.withLock { $0.answer = answer } }

    /// Every request received so far, oldest first.
    public var received: [ReceivedMercuryPayRequest] { state.withLock { $0.received } }

    public func exchange<Value>(
        _ path: String, body: [UInt8], contentType: String, headers: [(String, String)],
        rewrite: ([UInt8]) throws(ProcessorMessageError) -> Value
    ) async throws(UpstreamClient.Failure) -> Value {
        let authorization = headers.first { $0.0.lowercased() == "authorization" }?.1
        let request = ReceivedMercuryPayRequest(path: path, body: body, authorization: authorization)
        let answer = state.withLock { state in
            state.received.append(request)
            return state.answer
        }
        let response = ProcessorUpstreamStandIn.mercuryPayResponse(to: request, answer: answer)
        guard response.status != 0 else { throw UpstreamClient.Failure(outcome: .unreachable, mayHaveArrived: true) }
        guard (200..<300).contains(response.status) else {
            throw UpstreamClient.Failure.refused(status: response.status)
        }
        do {
            return try rewrite(response.body)
        } catch {
            throw UpstreamClient.Failure(outcome: .invalidResponse, mayHaveArrived: true)
        }
    }
}
