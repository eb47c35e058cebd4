import ApplePay
import Crypto
import Foundation
import PaywardenTesting

/// `paywarden-bench profile`: the software cost of each decryption stage per token, single
/// thread, no HSM: where the time goes besides the key operation.
enum StageProfile {
    /// Microseconds per token of the stages the per-token floor adds up.
    struct Figures {
        var decoding = 0.0
        var ecdsaVerification = 0.0
    }

    @discardableResult
    static func run() async throws -> Figures {
        let count = Int(ProcessInfo.processInfo.environment["PROFILE_TOKENS"] ?? "") ?? 2000
        let pki = try ApplePayTestPKI(name: "Profile", rsaLeaf: false)
        let forge = TokenForge(pki: pki)
        let merchant = P256.KeyAgreement.PrivateKey()
        let tokens = try (0..<count).map { _ in
            try forge.ecV1(
                payload: PaymentPayloads.threeDSecure(), merchant: merchant.publicKey,
                merchantIdentifierHash: [UInt8](repeating: 1, count: 32)
            )
            .withPublicKeyHash(Data(repeating: 1, count: 32).base64EncodedString())
        }
        let verifier = TokenSignatureVerifier(
            anchors: TrustAnchors(certificates: [pki.root], source: "profile root"), signingTimeWindow: 3600)
        @discardableResult
        func report(_ name: String, since start: ContinuousClock.Instant) -> Double {
            let micros = (ContinuousClock.now - start) / .microseconds(1) / Double(count)
            print(name.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%6.1f µs/token", micros))
            return micros
        }
        var figures = Figures()
        print("software cost per EC_v1 token, one thread, \(count) tokens")
        var start = ContinuousClock.now
        let parsed = try tokens.map { try PaymentToken(json: $0) }
        figures.decoding = report("JSON, Base64 and hex decoding", since: start)
        _ = await verifier.verify(parsed[0], now: Date())  // the chain verdict is cached after this
        start = ContinuousClock.now
        for token in parsed { _ = await verifier.verify(token, now: Date()) }
        report("signature verification (chain verdict cached)", since: start)
        let p256 = P256.Signing.PrivateKey()
        let message = Data(count: 200)
        let signature = try p256.signature(for: message)
        start = ContinuousClock.now
        for _ in parsed { _ = p256.publicKey.isValidSignature(signature, for: message) }
        figures.ecdsaVerification = report("  of which one ECDSA P-256 verification", since: start)
        start = ContinuousClock.now
        for token in parsed { _ = try? P256.KeyAgreement.PublicKey(derRepresentation: token.header.ephemeralPublicKey!) }
        report("ephemeral key parse and curve check", since: start)
        let key = SymmetricKey(size: .bits256)
        let box = try AES.GCM.seal(PaymentPayloads.threeDSecure(), using: key, nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)))
        start = ContinuousClock.now
        for _ in parsed { _ = try? AES.GCM.open(box, using: key) }
        report("AES-256-GCM open", since: start)
        return figures
    }
}
