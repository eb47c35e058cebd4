import ApplePay
import Foundation
import KeyCustody
import PKCS11
import PaywardenTesting
import Synchronization

/// EC_v1 and RSA_v1 decryptions per second in process, every verification step included, with
/// unique forged tokens (replay protection on), next to the raw module's ECDH-derive and RSA
/// decrypt rates from the same run.
struct DecryptionBench {
    let raw: RawHSMBench
    let token: SoftHSMTestToken
    let seconds: Double
    let rounds: Int

    func run() async throws -> [BenchRow] {
        let pki = try ApplePayTestPKI(name: "Bench")
        let forge = TokenForge(pki: pki)
        let anchors = TrustAnchors(certificates: [pki.root], source: "bench root")
        var rows: [BenchRow] = []
        for workers in [1, 2] {
            let hsm = try await token.open {
                $0.workers = workers
                $0.maxPendingOperations = 100_000
            }
            let store = MerchantKeyStore(hsm: hsm, certificateIssuers: TestCertificateAuthority.shared.issuers)
            let keys = HSMPaymentKeys(hsm: hsm)
            let ecMerchant = try await certifiedKey(store, "merchant.bench.ec", .ec)
            let rsaMerchant = try await certifiedKey(store, "merchant.bench.rsa", .rsa)
            try await keys.reload(from: store)

            // Enough unique tokens for the fastest measurement; forged once, used by a fresh
            // decrypter (and replay cache) per measurement. The window is wide so that forging
            // time does not age them out; it does not change the per-token work.
            let ecTokens = try await forgeTokens(count: Int(seconds * 14_000), forge: forge, merchant: ecMerchant, rsa: false)
            let rsaTokens = try await forgeTokens(count: Int(seconds * 4_500), forge: forge, merchant: rsaMerchant, rsa: true)
            func decrypter() -> PaymentTokenDecrypter {
                PaymentTokenDecrypter(
                    verifier: TokenSignatureVerifier(anchors: anchors, signingTimeWindow: 3600), directory: keys, operations: keys)
            }

            var ec = BenchRow(operation: "EC_v1 decrypt, full verification", rawName: "ecdh", workers: workers)
            var ecKDF = BenchRow(operation: "  the same, against raw ECDH + KDF", rawName: "ecdh-kdf", workers: workers)
            var rsa = BenchRow(operation: "RSA_v1 decrypt, full verification", rawName: "rsa-raw", workers: workers)
            for _ in 0..<rounds {
                ec.raw.append(try raw.rate("ecdh", seconds: seconds, threads: workers) ?? 0)
                ec.layer.append(try await measure(decrypter(), ecTokens, hsm: hsm, inFlight: workers * 4, onWorkers: true))
                ec.hopping.append(try await measure(decrypter(), ecTokens, hsm: hsm, inFlight: workers * 4, onWorkers: false))
                ecKDF.raw.append(try raw.rate("ecdh-kdf", seconds: seconds, threads: workers) ?? 0)
                rsa.raw.append(try raw.rate("rsa-raw", seconds: seconds, threads: workers) ?? 0)
                rsa.layer.append(try await measure(decrypter(), rsaTokens, hsm: hsm, inFlight: workers * 4, onWorkers: true))
                rsa.hopping.append(try await measure(decrypter(), rsaTokens, hsm: hsm, inFlight: workers * 4, onWorkers: false))
            }
            ecKDF.layer = ec.layer
            ecKDF.hopping = ec.hopping
            rows += [ec, ecKDF, rsa]
            await hsm.close()
        }
        return rows
    }

    private func certifiedKey(_ store: MerchantKeyStore, _ merchantID: String, _ type: KeyAlgorithmChoice) async throws -> MerchantKey {
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: type)
        let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        return try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
    }

    private func forgeTokens(count: Int, forge: TokenForge, merchant: MerchantKey, rsa: Bool) async throws -> [[UInt8]] {
        let environment = TokenFactory(forge: forge, merchant: merchant)
        return try await withThrowingTaskGroup(of: [[UInt8]].self) { group in
            let parts = 2
            for _ in 0..<parts {
                group.addTask { try (0..<(count / parts)).map { _ in try rsa ? environment.rsa() : environment.ec() } }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// Decrypts tokens from the list for `seconds` (or until they run out) with enough tasks in
    /// flight to keep every worker busy, the tasks on the HSM's workers (verification there too)
    /// or on the cooperative pool (verification there, a hop to a worker for the key operation).
    private func measure(_ decrypter: PaymentTokenDecrypter, _ tokens: [[UInt8]], hsm: HSM, inFlight: Int, onWorkers: Bool) async throws
        -> Double
    {
        let failures = Counter()
        let run = TimedRun(seconds: seconds, inFlight: inFlight, executor: onWorkers ? hsm.executor : nil)
        let (rate, ranOut) = try await run.rate { index in
            guard index < tokens.count else { return false }
            do {
                _ = try await decrypter.decrypt(json: tokens[index])
            } catch {
                failures.value.add(1, ordering: .relaxed)
            }
            return true
        }
        if failures.value.load(ordering: .relaxed) > 0 {
            throw BenchError("\(failures.value.load(ordering: .relaxed)) decryptions failed")
        }
        if ranOut {
            FileHandle.standardError.write(Data("note: ran out of pre-forged tokens before \(seconds) s\n".utf8))
        }
        return rate
    }
}

/// Forges fresh tokens to one merchant key.
private struct TokenFactory: Sendable {
    let forge: TokenForge
    let merchant: MerchantKey

    func ec() throws -> [UInt8] {
        guard case .ecP256(let point) = merchant.key.publicKey else { throw BenchError("not EC") }
        var options = TokenForge.Options()
        options.applicationData = [UInt8](repeating: 0x42, count: 32)
        return try forge.ecV1(
            payload: PaymentPayloads.threeDSecure(), merchant: .init(x963Representation: point),
            merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchant.merchantID ?? ""), options: options
        )
        .withPublicKeyHash(merchant.publicKeyHash)
    }

    func rsa() throws -> [UInt8] {
        guard case .rsa(let modulus, let exponent) = merchant.key.publicKey else { throw BenchError("not RSA") }
        return try forge.rsaV1(payload: PaymentPayloads.emv(), merchant: .init(n: modulus, e: exponent))
            .withPublicKeyHash(merchant.publicKeyHash)
    }
}
