import Foundation
import Logging
import NIOCore
import NIOSSL
import PKCS11
import Synchronization

/// A TLS client key in the HSM as swift-nio-ssl sees it (the Apple identity key, docs/apple-pay.md,
/// "The identity key", and a processor upstream's client key): the handshake's signature is made by the HSM, so
/// the private key never leaves it.
///
/// TLS 1.2 signs with RSA PKCS#1 v1.5; TLS 1.3 needs RSA-PSS, offered only when the HSM has it.
/// The HSM call is asynchronous and may queue, so it runs in a task and completes a promise:
/// blocking the event loop is not allowed.
public struct HSMTLSSigningKey: NIOSSLCustomPrivateKey, Hashable {
    public let hsm: HSM
    public let keyID: KeyIdentifier
    public let signatureAlgorithms: [SignatureAlgorithm]
    private let logger: Logger
    private let failures: FailureRecord

    /// The last signing failure, so a failed handshake can be told apart from a failed network.
    final class FailureRecord: Sendable {
        private let last = Mutex<(at: ContinuousClock.Instant, error: PKCS11Error)?>(nil)

        func record(_ error: PKCS11Error) {
            last.withLock { $0 = (ContinuousClock.now, error) }
        }

        /// The failure since `instant`, if any.
        func failure(since instant: ContinuousClock.Instant) -> PKCS11Error? {
            last.withLock { state in state.flatMap { $0.at >= instant ? $0.error : nil } }
        }
    }

    public init(hsm: HSM, keyID: KeyIdentifier, logger: Logger) {
        self.hsm = hsm
        self.keyID = keyID
        self.logger = logger
        self.failures = FailureRecord()
        signatureAlgorithms = hsm.capabilities.rsaPSS ? [.rsaPkcs1Sha256, .rsaPssRsaeSha256] : [.rsaPkcs1Sha256]
    }

    /// Whether this key can authenticate a TLS 1.3 handshake.
    public var supportsTLS13: Bool { signatureAlgorithms.contains(.rsaPssRsaeSha256) }

    /// The HSM error behind a handshake that failed after `instant`, if signing was the cause.
    public func signingFailure(since instant: ContinuousClock.Instant) -> PKCS11Error? {
        failures.failure(since: instant)
    }

    public func sign(channel: Channel, algorithm: SignatureAlgorithm, data: ByteBuffer) -> EventLoopFuture<ByteBuffer> {
        let promise = channel.eventLoop.makePromise(of: ByteBuffer.self)
        let message = Array(data.readableBytesView)
        let (hsm, keyID, logger, failures) = (hsm, keyID, logger, failures)
        Task {
            do throws(PKCS11Error) {
                let signature: [UInt8]
                switch algorithm {
                case .rsaPkcs1Sha256: signature = try await hsm.signRSAPKCS1SHA256(keyID, message: message)
                case .rsaPssRsaeSha256: signature = try await hsm.signRSAPSSSHA256(keyID, message: message)
                default: throw Self.unsupported("TLS signature algorithm \(algorithm.rawValue) is not offered")
                }
                promise.succeed(ByteBuffer(bytes: signature))
            } catch {
                failures.record(error)
                logger.error(
                    "the HSM could not sign a TLS handshake", metadata: ["key-id": "\(keyID)", "error": "\(error)"])
                promise.fail(error)
            }
        }
        return promise.futureResult
    }

    /// Never used: a client key only signs (no RSA key exchange is offered).
    public func decrypt(channel: Channel, data: ByteBuffer) -> EventLoopFuture<ByteBuffer> {
        channel.eventLoop.makeFailedFuture(Self.unsupported("a TLS client key in the HSM does not decrypt in TLS"))
    }

    private static func unsupported(_ message: String) -> PKCS11Error {
        PKCS11Error(code: .mechanismUnsupported, category: .misconfiguration, message: message)
    }

    // Identity is the key in its HSM: swift-nio-ssl caches contexts by configuration.
    public static func == (lhs: HSMTLSSigningKey, rhs: HSMTLSSigningKey) -> Bool {
        lhs.hsm === rhs.hsm && lhs.keyID == rhs.keyID && lhs.signatureAlgorithms == rhs.signatureAlgorithms
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(hsm))
        hasher.combine(keyID)
        hasher.combine(signatureAlgorithms)
    }
}
