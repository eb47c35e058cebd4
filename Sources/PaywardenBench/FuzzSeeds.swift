import Crypto
import Foundation
import PaywardenTesting
import _CryptoExtras

/// `paywarden-bench fuzz-seeds DIR [VECTORS]`: the seed corpora `scripts/fuzz.sh` starts each
/// libFuzzer target from, written to DIR/<target>. Forged tokens cover the shapes Apple sends and
/// the deviations the verifier must refuse; the real vectors, when a folder is named, are read in
/// place and their tokens written to DIR, which is under `.build-fuzz` and never committed.
enum FuzzSeeds {
    static func run(_ arguments: [String]) throws {
        guard let output = arguments.first else { throw BenchError("usage: paywarden-bench fuzz-seeds DIR [VECTORS]") }
        var tokens = try forgedTokens()
        if arguments.count > 1 { tokens += try vectorTokens(in: arguments[1]) }
        var signatures: [[UInt8]] = []
        var forms: [[UInt8]] = []
        for token in tokens {
            let object = try JSONSerialization.jsonObject(with: Data(token)) as? [String: Any] ?? [:]
            let paymentData = object["paymentData"] as? [String: Any] ?? object
            if let signature = (paymentData["signature"] as? String).flatMap({ Data(base64Encoded: $0) }) {
                signatures.append(Array(signature))
            }
            forms.append(try EProtectForms.form(token: token, paypageID: "pp1234", orderID: forms.count % 2 == 0 ? "order-1" : nil))
        }
        for (target, seeds) in [("token", tokens), ("signature", signatures), ("eprotect", forms)] {
            let directory = URL(fileURLWithPath: output).appendingPathComponent(target)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (index, seed) in seeds.enumerated() {
                try Data(seed).write(to: directory.appendingPathComponent(String(format: "seed-%03d", index)))
            }
            print("fuzz seeds: \(seeds.count) for \(target)")
        }
    }

    /// EC_v1 and RSA_v1 tokens, whole `PKPaymentToken`s and bare `paymentData`, with and without
    /// applicationData, and the deviations the verifier refuses: two signers, a padded signer
    /// serial, a point off the curve, a foreign version, a stale signing time.
    private static func forgedTokens() throws -> [[UInt8]] {
        let pki = try ApplePayTestPKI(name: "Fuzz")
        let forge = TokenForge(pki: pki)
        let merchant = P256.KeyAgreement.PrivateKey()
        let merchantHash = TokenForge.merchantIdentifierHash("merchant.com.example.fuzz")
        let ecHash = TokenForge.publicKeyHash(spki: Array(merchant.publicKey.derRepresentation))
        let rsa = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
        let rsaHash = TokenForge.publicKeyHash(spki: Array(rsa.publicKey.derRepresentation))

        var variants: [TokenForge.Options] = [TokenForge.Options()]
        var withApplicationData = TokenForge.Options()
        withApplicationData.applicationData = Array(SHA256.hash(data: Data("order 1".utf8)))
        var twoSigners = TokenForge.Options()
        twoSigners.twoSigners = true
        var padded = TokenForge.Options()
        padded.signerSerialPadding = 2
        var stale = TokenForge.Options()
        stale.signingTime = Date(timeIntervalSinceNow: -86_400 * 30)
        var foreignVersion = TokenForge.Options()
        foreignVersion.version = "EC_v2"
        variants += [withApplicationData, twoSigners, padded, stale, foreignVersion]

        let payloads = [PaymentPayloads.threeDSecure(), PaymentPayloads.emv(), PaymentPayloads.merchantToken()]
        var tokens: [[UInt8]] = []
        for (index, options) in variants.enumerated() {
            let payload = payloads[index % payloads.count]
            let ec = try forge.ecV1(payload: payload, merchant: merchant.publicKey, merchantIdentifierHash: merchantHash, options: options)
            tokens.append(try ec.withPublicKeyHash(ecHash))
            tokens.append(try wrapped(try ec.withPublicKeyHash(ecHash)))
            if options.version == "EC_v1" {
                tokens.append(try forge.rsaV1(payload: payload, merchant: rsa.publicKey, options: options).withPublicKeyHash(rsaHash))
            }
        }
        var offCurve = TokenForge.Options()
        var spki = Array(P256.KeyAgreement.PrivateKey().publicKey.derRepresentation)
        spki[spki.count - 1] ^= 0x01
        offCurve.ephemeralPublicKeyOverride = spki
        tokens.append(
            try forge.ecV1(payload: payloads[0], merchant: merchant.publicKey, merchantIdentifierHash: merchantHash, options: offCurve)
                .withPublicKeyHash(ecHash))
        return tokens
    }

    /// A `paymentData` inside a whole `PKPaymentToken`, as a mobile app posts it.
    private static func wrapped(_ paymentData: [UInt8]) throws -> [UInt8] {
        let object: [String: Any] = [
            "paymentData": try JSONSerialization.jsonObject(with: Data(paymentData)),
            "paymentMethod": ["displayName": "Visa 0224", "network": "Visa", "type": "debit"],
            "transactionIdentifier": "3F0B4D1E",
        ]
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Each vector's token files, read where they are.
    private static func vectorTokens(in directory: String) throws -> [[UInt8]] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            FileHandle.standardError.write(Data("fuzz seeds: no vectors at \(directory); forged seeds only\n".utf8))
            return []
        }
        var tokens: [[UInt8]] = []
        for name in names.sorted() {
            for file in ["token.json", "pkpaymenttoken_full.json"] {
                if let data = FileManager.default.contents(atPath: "\(directory)/\(name)/\(file)") { tokens.append(Array(data)) }
            }
        }
        return tokens
    }
}
