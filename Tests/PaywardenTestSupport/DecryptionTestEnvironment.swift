import ApplePay
import Crypto
import _CryptoExtras
import Foundation
import KeyCustody
import PKCS11
import PKCS11Testing
import Synchronization

/// A SoftHSM token with merchant keys certified by the test CA, the decryption engine over it
/// (trusting the test PKI's root), a settable clock, and the forge to make tokens for it.
public final class DecryptionTestEnvironment: Sendable {
    public let hsm: HSM
    public let store: MerchantKeyStore
    public let keys: HSMPaymentKeys
    public let forge: TokenForge
    public let decrypter: PaymentTokenDecrypter
    public let replayCache: InMemoryReplayCache
    private let settableClock = SettableClock()

    /// One PKI per test process: RSA key generation is slow.
    public static let sharedPKI: ApplePayTestPKI = try! ApplePayTestPKI()

    public init(pki: ApplePayTestPKI = sharedPKI, trusting anchors: TrustAnchors? = nil, window: TimeInterval = 300) async throws {
        hsm = try await SoftHSMTestToken.make(labelPrefix: "decrypt").open()
        store = MerchantKeyStore(hsm: hsm)
        keys = HSMPaymentKeys(hsm: hsm)
        forge = TokenForge(pki: pki)
        replayCache = InMemoryReplayCache()
        let clock = settableClock
        let trusted = anchors ?? TrustAnchors(certificates: [pki.root], source: "test root")
        decrypter = PaymentTokenDecrypter(
            verifier: TokenSignatureVerifier(anchors: trusted, signingTimeWindow: window),
            directory: keys, operations: keys, replayCache: replayCache, clock: { clock.now }
        )
    }

    /// The decrypter's clock.
    public var clock: Date {
        get { settableClock.now }
        set { settableClock.now = newValue }
    }

    /// A processing key generated in the HSM, certified by the test CA and imported: active.
    public func merchant(_ merchantID: String, type: KeyAlgorithmChoice = .ec) async throws -> MerchantKey {
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: type)
        let certificate = try TestCertificateAuthority().issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        let (key, _) = try await store.importCertificate(MerchantCertificate(bytes: certificate))
        try await keys.reload(from: store)
        return key
    }

    /// An EC_v1 token to `merchant`, with its publicKeyHash.
    public func ecToken(to merchant: MerchantKey, payload: [UInt8] = PaymentPayloads.threeDSecure(), options: TokenForge.Options = .init()) throws -> [UInt8] {
        guard case .ecP256(let point) = merchant.key.publicKey else { throw CocoaError(.featureUnsupported) }
        return try forge.ecV1(
            payload: payload, merchant: P256.KeyAgreement.PublicKey(x963Representation: point),
            merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchant.merchantID ?? ""), options: options
        ).withPublicKeyHash(merchant.publicKeyHash)
    }

    /// An RSA_v1 token to `merchant`.
    public func rsaToken(to merchant: MerchantKey, payload: [UInt8] = PaymentPayloads.emv(), options: TokenForge.Options = .init()) throws -> [UInt8] {
        guard case .rsa(let modulus, let exponent) = merchant.key.publicKey else { throw CocoaError(.featureUnsupported) }
        return try forge.rsaV1(payload: payload, merchant: _RSA.Encryption.PublicKey(n: modulus, e: exponent), options: options)
            .withPublicKeyHash(merchant.publicKeyHash)
    }

    public func close() async {
        await hsm.close()
    }
}

/// A clock tests move by hand.
public final class SettableClock: Sendable {
    private let date = Mutex(Date())

    public init() {}

    public var now: Date {
        get { date.withLock { $0 } }
        set { date.withLock { $0 = newValue } }
    }
}
