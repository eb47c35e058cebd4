import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import OutboundTLS
import PKCS11

/// One identity the upstream may be presented: a client key in the HSM and the chain whose leaf
/// holds its public key.
public struct ClientIdentity: Sendable {
    public let signingKey: HSMTLSSigningKey
    /// Leaf first.
    public let chain: [NIOSSLCertificate]

    public init(signingKey: HSMTLSSigningKey, chain: [NIOSSLCertificate]) {
        self.signingKey = signingKey
        self.chain = chain
    }

    public var keyID: KeyIdentifier { signingKey.keyID }
}

/// A client key changeover without a restart. During one, two keys are configured, in order of
/// preference; the processor is asked which it accepts, most preferred first, by a request that
/// does nothing (`HEAD` of the upstream's URL, no credentials) on a connection of its own, so no
/// pooled connection answers for a handshake made earlier. The first key accepted is presented.
///
/// Only the processor's refusal of the certificate refuses a key: a TLS alert about it (unknown,
/// bad, expired or revoked certificate, unknown CA, access denied, certificate required) or HTTP
/// 495/496 (a front end that verifies client certificates after the handshake). Any other HTTP
/// answer accepts it; no connection, no answer in time, a failure to verify the processor's own
/// certificate decide nothing; a key the HSM could not sign with is passed over. A key presented
/// that was refused gives way to one that was not, even without an acceptance.
///
/// The upstream is asked at start-up, every ``UpstreamConfiguration/clientKeyCheckInterval``
/// while a less preferred key is presented or the last check decided nothing, and after a
/// request's connection failed or its certificate was refused (at most every
/// ``checkAfterFailureSpacing``).
extension UpstreamClient {
    /// What the upstream answered a handshake with one key.
    enum KeyVerdict: String, Sendable, Equatable {
        case accepted
        case refused
        /// The HSM did not sign the handshake: the next key may still be asked.
        case unsigned
        /// No answer about the key: the upstream could not be reached, or did not answer in time.
        case noAnswer = "no-answer"
    }

    /// The shortest time between two checks a failed connection starts.
    static let checkAfterFailureSpacing = Duration.seconds(5)

    /// The HTTP statuses by which nginx refuses a client certificate it verifies itself (495: not
    /// verified, 496: none sent): a refusal, not an answer.
    static let certificateRefusalStatuses: [Int] = [495, 496]

    /// The TLS alerts (BoringSSL's reason names) by which a server refuses the client's certificate.
    static let certificateRefusals = [
        "ALERT_CERTIFICATE_UNKNOWN", "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_EXPIRED",
        "ALERT_CERTIFICATE_REVOKED", "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_ACCESS_DENIED", "ALERT_CERTIFICATE_REQUIRED",
    ]

    /// Presents the first of `identities` (in order of preference) the upstream accepts; made once
    /// the keys are checked at start-up, before the API listens. Until the upstream has said,
    /// `recorded` (the key the service last recorded for this upstream) is presented when it is
    /// one of them, else the first. `recordInUse` is told the key presented at start and at each
    /// changeover (for `paywarden keys list`).
    public func useHSMKeys(
        _ identities: [ClientIdentity], recorded: KeyIdentifier? = nil,
        recordInUse: @escaping @Sendable (KeyIdentifier) async -> Void
    ) async {
        let clients = identities.map { Self.makeClient(tls: tls(for: $0), configuration: configuration, logger: logger) }
        let start = identities.firstIndex { $0.keyID == recorded } ?? 0
        let replaced = state.withLock { state in
            defer {
                state.identities = identities
                state.clients = clients
                state.inUse = start
                state.recordInUse = recordInUse
            }
            return state.clients
        }
        for client in replaced { try? await client.shutdown() }
        guard identities.count > 1 else {
            if let only = identities.first { await recordInUse(only.keyID) }
            return
        }
        if await checkClientKeys(initially: true) == nil { await present(clientKeyIndex, initially: true) }
        let interval = configuration.clientKeyCheckInterval
        let periodic = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                if self.state.withLock({ $0.inUse != 0 || !$0.settled }) { await self.checkClientKeys() }
            }
        }
        let previous = state.withLock { state in
            defer { state.periodicCheck = periodic }
            return state.periodicCheck
        }
        previous?.cancel()
    }

    /// The key presented now, when the client keys are in the HSM.
    public var clientKeyInUse: KeyIdentifier? {
        state.withLock { $0.identities.isEmpty ? nil : $0.identities[$0.inUse].keyID }
    }

    private var clientKeyIndex: Int { state.withLock { $0.inUse } }

    /// Asks the upstream which key it accepts, most preferred first, and presents the first one
    /// accepted; returns its index, or nil when none was accepted (a check already running, the
    /// upstream unreachable, every key refused). `initially`: the start's check, whose choice is
    /// recorded even when it is the key presented before.
    @discardableResult
    func checkClientKeys(initially: Bool = false) async -> Int? {
        let identities: [ClientIdentity]? = state.withLock { state in
            guard state.identities.count > 1, !state.checking, !state.stopped else { return nil }
            state.checking = true
            state.lastCheck = .now
            return state.identities
        }
        guard let identities else { return nil }
        defer { state.withLock { $0.checking = false } }
        var refused: Set<Int> = []
        var unanswered = false
        ask: for (index, identity) in identities.enumerated() {
            guard !Task.isCancelled, !state.withLock({ $0.stopped }) else { return nil }
            let (verdict, answer) = await verdict(identity)
            logger.debug(
                "asked the upstream whether it accepts a client key",
                metadata: [
                    "format": "\(configuration.format.rawValue)", "key-id": "\(identity.keyID)", "verdict": "\(verdict.rawValue)",
                    "answer": "\(answer)",
                ])
            switch verdict {
            case .accepted:
                state.withLock { $0.settled = true }
                await present(index, initially: initially)
                return index
            case .refused:
                refused.insert(index)
            case .unsigned:
                unanswered = true
                logger.warning(
                    "the HSM did not sign a handshake with an upstream client key; the next key is asked",
                    metadata: ["format": "\(configuration.format.rawValue)", "key-id": "\(identity.keyID)", "answer": "\(answer)"])
            case .noAnswer:
                unanswered = true
                logger.warning(
                    "could not ask the upstream whether it accepts a client key; the key presented stays unless it was refused",
                    metadata: ["format": "\(configuration.format.rawValue)", "key-id": "\(identity.keyID)", "answer": "\(answer)"])
                break ask
            }
        }
        state.withLock { $0.settled = false }
        // A key the processor refused is not presented on: one it did not refuse is, undecided as it is.
        if refused.contains(clientKeyIndex), let other = identities.indices.first(where: { !refused.contains($0) }) {
            await present(other, initially: initially)
        }
        if !unanswered {
            logger.error(
                "the upstream accepts none of the client keys: have the processor trust one's certificate",
                metadata: [
                    "format": "\(configuration.format.rawValue)",
                    "refused": "\(refused.sorted().map { identities[$0].keyID.hex }.joined(separator: ","))",
                ])
        }
        return nil
    }

    /// Starts a check when a request's connection failed or its certificate was refused and
    /// another key could be presented: at once, or, within ``checkAfterFailureSpacing`` (at most
    /// the check interval) of the last check, at its end, so that a burst of failures asks once.
    func checkClientKeysAfterFailure() {
        let spacing = min(Self.checkAfterFailureSpacing, configuration.clientKeyCheckInterval)
        state.withLock { state in
            guard state.identities.count > 1, !state.checking, !state.stopped, state.followUpCheck == nil else { return }
            let delay = state.lastCheck.map { max(.zero, spacing - (ContinuousClock.now - $0)) } ?? .zero
            // Made under the lock, so that it is recorded before it can end (its first step waits for the lock).
            state.followUpCheck = Task {
                try? await Task.sleep(for: delay)
                self.state.withLock { $0.followUpCheck = nil }
                guard !Task.isCancelled else { return }
                await self.checkClientKeys()
            }
        }
    }

    /// Presents the identity at `index` from the next connection on; connections of the key
    /// presented before finish their requests.
    private func present(_ index: Int, initially: Bool) async {
        let change = state.withLock { state -> (previous: KeyIdentifier, next: KeyIdentifier, record: RecordInUse?)? in
            guard !state.stopped else { return nil }
            defer { state.inUse = index }
            return (state.identities[state.inUse].keyID, state.identities[index].keyID, state.recordInUse)
        }
        guard let change else { return }
        if change.previous != change.next {
            logger.notice(
                "the upstream client key changed over",
                metadata: ["format": "\(configuration.format.rawValue)", "from": "\(change.previous)", "to": "\(change.next)"])
        }
        if change.previous != change.next || initially { await change.record?(change.next) }
    }

    /// One handshake with `identity` on a connection of its own, and a `HEAD` of the upstream's URL;
    /// with the upstream's answer (its HTTP status, or the error) for the log.
    func verdict(_ identity: ClientIdentity) async -> (verdict: KeyVerdict, answer: String) {
        let start = ContinuousClock.now
        let client = Self.makeClient(tls: tls(for: identity), configuration: configuration, logger: logger)
        var request = HTTPClientRequest(url: configuration.baseURL.absoluteString)
        request.method = .HEAD
        let limit = min(configuration.timeout, .seconds(10))
        let result: (KeyVerdict, String)
        do {
            let response = try await client.execute(request, deadline: .now() + TimeAmount(limit), logger: logger)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let status = Int(response.status.code)
            result = (Self.certificateRefusalStatuses.contains(status) ? .refused : .accepted, "HTTP \(status)")
        } catch {
            if let failure = identity.signingKey.signingFailure(since: start) {
                result = (.unsigned, "the HSM did not sign: \(failure)")
            } else {
                result = (Task.isCancelled ? .noAnswer : Self.verdict(error), "\(error)")
            }
        }
        try? await client.shutdown()
        return result
    }

    /// A TLS alert refusing the client's certificate refuses the key; anything else (no
    /// connection, no answer, a reset, the processor's own certificate not verified) decides nothing.
    static func verdict(_ error: any Error) -> KeyVerdict {
        guard error is NIOSSLError || error is BoringSSLError else { return .noAnswer }
        let text = "\(error)"
        return certificateRefusals.contains { text.contains($0) } ? .refused : .noAnswer
    }

    /// The TLS configuration that presents `identity`.
    private func tls(for identity: ClientIdentity) -> TLSConfiguration {
        var tls = Self.baseTLS(configuration)
        // TLS 1.3 client authentication with an RSA key is RSA-PSS or nothing.
        tls.maximumTLSVersion = identity.signingKey.supportsTLS13 ? .tlsv13 : .tlsv12
        tls.certificateChain = identity.chain.map { .certificate($0) }
        tls.privateKey = .privateKey(NIOSSLPrivateKey(customPrivateKey: identity.signingKey))
        return tls
    }
}
