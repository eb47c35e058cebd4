import ArgumentParser
import Crypto
import Foundation
import KeyCustody
import PaywardenConfiguration
import PaywardenSandbox
import _CryptoExtras

/// `paywarden dev-hsm sample-token`: a token for scripts and the tour, signed by the development PKI.
struct DevHSMSampleToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-token",
        abstract: "Print a sample PKPaymentToken for a merchant's key, signed by the development PKI.",
        discussion: """
            The token is encrypted to the merchant's active processing key (EC_v1, or RSA_v1 with --rsa) and signed by the \
            development PKI of `paywarden dev-hsm sandbox`. Refuses unless \(SettingCatalog.trustRoots.environmentName) names \
            that PKI's root (the development token's env file does once the sandbox exists): a service that trusts only \
            Apple's root refuses these tokens, and so does this command.
            """
    )

    @Option(name: .customLong("merchant-id"), help: "The merchant whose processing key the token is encrypted to.")
    var merchantID: String

    @Flag(help: "RSA_v1, to the merchant's RSA key (default: EC_v1 to its EC key).")
    var rsa = false

    @Option(help: "The account number the token carries (12 to 19 digits; default: a new random one).")
    var pan: String?

    @Option(name: .customLong("merchant-token"), help: "Make it a merchant token's payment, with this merchantTokenIdentifier.")
    var merchantToken: String?

    @OptionGroup var hsmOptions: HSMOptions

    func validate() throws {
        if let pan, !(12...19).contains(pan.count) || !pan.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw ValidationError("--pan takes 12 to 19 digits")
        }
        if let merchantToken,
            !(1...128).contains(merchantToken.count) || !merchantToken.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        {
            throw ValidationError("--merchant-token takes 1 to 128 letters and digits")
        }
    }

    func run() async throws {
        try await AdminAction("dev-hsm.sample-token", merchantID: merchantID, mutates: false).run(hsm: hsmOptions) { store, action in
            guard let settings = action.settings else { preconditionFailure("AdminAction reads the settings before its body") }
            let pki = try Self.configuredPKI(settings)
            let algorithm: KeyAlgorithmChoice = rsa ? .rsa : .ec
            let keys = try await store.list().filter {
                $0.merchantID == merchantID && $0.purpose == .processing && $0.state == .active
                    && DevHSMSandbox.algorithm(of: $0) == algorithm
            }
            guard let key = keys.last else {
                throw CommandFailure(
                    .refused,
                    "merchant \(merchantID) has no active \(algorithm.rawValue.uppercased()) processing key; `paywarden keys list` shows "
                        + "the keys (the sandbox merchant is \(Sandbox.merchantID), made by `paywarden dev-hsm sandbox`)")
            }
            action.concerns(key)
            let spki = try key.key.publicKey.subjectPublicKeyInfo()
            let merchantKey: SampleToken.MerchantKey =
                rsa
                ? .rsa(try _RSA.Encryption.PublicKey(derRepresentation: spki))
                : .ec(try P256.KeyAgreement.PublicKey(derRepresentation: spki))
            var card = SampleToken.Card(merchantTokenIdentifier: merchantToken)
            if let pan { card.accountNumber = pan }
            let token = try SampleToken(pki: pki.tokenSigning).make(
                merchantID: merchantID, key: merchantKey, publicKeyHash: key.publicKeyHash, card: card)
            FileHandle.standardOutput.write(Data(token + [0x0A]))
            return "\(rsa ? "RSA_v1" : "EC_v1") sample token"
        }
    }

    /// The development PKI the trust-roots setting names as its only root, or a refusal saying how
    /// to get one: a configuration that also trusts another root (Apple's) gets no sample token.
    static func configuredPKI(_ settings: PaywardenSettings) throws -> DevelopmentPKI {
        let roots = settings.verification.trustRoots
        if roots.count == 1, let root = roots.first {
            let directory = (root as NSString).deletingLastPathComponent
            if DevelopmentPKI.rootFile(in: directory) == root, DevelopmentPKI.exists(in: directory) {
                return try DevelopmentPKI.load(from: directory)
            }
        }
        throw CommandFailure(
            .refused,
            "\(SettingCatalog.trustRoots.environmentName) does not name a development PKI's root alone"
                + (roots.isEmpty ? " (it is unset: Apple's root, which no sample token chains to)" : "")
                + "; run `paywarden dev-hsm sandbox`, then source the development token's env file (Keys/softhsm/env)")
    }
}
