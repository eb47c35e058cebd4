import Foundation
import ProcessorMessages
import ProcessorRelays
import Synchronization

/// A processor answered in process, exactly as ``ProcessorUpstreamStandIn`` answers its format over
/// HTTPS (the same answers, the same checks of what arrived), for the relays' tests without a
/// socket. What the relay sent is kept, as the stand-in keeps it, in the list of its format.
public final class InProcessProcessorUpstream: ProcessorUpstream {
    public let configuration: UpstreamConfiguration

    private struct State: Sendable {
        var answer = ProcessorUpstreamStandIn.Answer.approve
        var received: [ReceivedCnpRequest] = []
        var receivedMercuryPay: [ReceivedMercuryPayRequest] = []
        var receivedRadial: [ReceivedRadialRequest] = []
        var exchanges = 0
    }
    private let state = Mutex(State())

    public init(format: UpstreamFormat, credentials: UpstreamConfiguration.Credentials? = nil) {
        // Never dialled: the exchange below answers in process.
        configuration = UpstreamConfiguration(
            format: format, baseURL: URL(string: "https://\(format.rawValue).invalid")!, credentials: credentials)
    }

    /// How the next requests are answered (``ProcessorUpstreamStandIn/Answer/approve`` at first).
    public func setAnswer(_ answer: ProcessorUpstreamStandIn.Answer) { state.withLock { $0.answer = answer } }

    /// The cnpAPI requests received so far, oldest first.
    public var received: [ReceivedCnpRequest] { state.withLock { $0.received } }
    public var receivedMercuryPay: [ReceivedMercuryPayRequest] { state.withLock { $0.receivedMercuryPay } }
    public var receivedRadial: [ReceivedRadialRequest] { state.withLock { $0.receivedRadial } }
    /// Every exchange, whatever its format: zero when nothing was sent.
    public var exchanges: Int { state.withLock { $0.exchanges } }

    public func exchange<Value>(
        _ path: String, body: [UInt8], contentType: String, headers: [(String, String)],
        rewrite: ([UInt8]) throws(ProcessorMessageError) -> Value
    ) async throws(UpstreamClient.Failure) -> Value {
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
        let response = state.withLock { state in
            state.exchanges += 1
            switch configuration.format {
            case .cnpAPI:
                let request = ReceivedCnpRequest(path: path, body: body)
                state.received.append(request)
                return ProcessorUpstreamStandIn.response(to: request, answer: state.answer)
            case .mercuryPay:
                let request = ReceivedMercuryPayRequest(path: path, body: body, authorization: header("authorization"))
                state.receivedMercuryPay.append(request)
                return ProcessorUpstreamStandIn.mercuryPayResponse(to: request, answer: state.answer)
            case .radial:
                let request = ReceivedRadialRequest(path: path, body: body, apiKey: header("apikey"))
                state.receivedRadial.append(request)
                return ProcessorUpstreamStandIn.radialResponse(to: request, answer: state.answer)
            }
        }
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
