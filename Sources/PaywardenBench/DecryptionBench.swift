import ApplePay
import Crypto
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
    let token: TestToken
    let seconds: Double
    let rounds: Int

    /// What the per-token floor and the engine's efficiency are computed from, taken in `run()`.
    struct EngineFigures {
        /// ECDH + KDF on the path decryption uses (session key copies on SoftHSM), 1 and 2 workers.
        var deriveRate: [Double] = []
        var deriveRateTwoWorkers: [Double] = []
        /// EC_v1 at 2 workers on the HSM workers: tokens/s and process CPU per token.
        var rate: [Double] = []
        var cpuMicroseconds: [Double] = []
    }

    private(set) var engine = EngineFigures()

    mutating func run() async throws -> [BenchRow] {
        let pki = try ApplePayTestPKI(name: "Bench")
        let forge = TokenForge(pki: pki)
        let anchors = TrustAnchors(certificates: [pki.root], source: "bench root")
        var rows: [BenchRow] = []
        for workers in [1, 2] {
            let hsm = try await token.open {
                $0.workers = workers
                $0.maxPendingOperations = 100_000
            }
            let store = MerchantKeyStore(
                hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers)
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
                let onWorkers = try await measure(decrypter(), ecTokens, hsm: hsm, inFlight: workers * 4, onWorkers: true)
                ec.layer.append(onWorkers.rate)
                if workers == 2 {
                    engine.rate.append(onWorkers.rate)
                    engine.cpuMicroseconds.append(onWorkers.cpuMicroseconds)
                    engine.deriveRateTwoWorkers.append(try await deriveRate(hsm, ecMerchant))
                } else {
                    engine.deriveRate.append(try await deriveRate(hsm, ecMerchant))
                }
                ec.hopping.append(try await measure(decrypter(), ecTokens, hsm: hsm, inFlight: workers * 4, onWorkers: false).rate)
                ecKDF.raw.append(try raw.rate("ecdh-kdf", seconds: seconds, threads: workers) ?? 0)
                rsa.raw.append(try raw.rate("rsa-raw", seconds: seconds, threads: workers) ?? 0)
                rsa.layer.append(try await measure(decrypter(), rsaTokens, hsm: hsm, inFlight: workers * 4, onWorkers: true).rate)
                rsa.hopping.append(try await measure(decrypter(), rsaTokens, hsm: hsm, inFlight: workers * 4, onWorkers: false).rate)
            }
            ecKDF.layer = ec.layer
            ecKDF.hopping = ec.hopping
            rows += [ec, ecKDF, rsa]
            await hsm.close()
        }
        return rows
    }

    /// `paywarden-bench engine SECONDS` (for `make loadtest`): EC_v1 decryptions at 2 workers in
    /// process, as the decrypt route runs them, on a token of its own: tokens/s and CPU per token.
    static func engineLine(seconds: Double) async throws -> String {
        let token = try await SoftHSMTestToken.make(labelPrefix: "bench-engine")
        defer { TestToken.removeAll() }
        let pki = try ApplePayTestPKI(name: "Engine")
        let bench = DecryptionBench(raw: RawHSMBench(executable: "", label: "", pin: ""), token: token, seconds: seconds, rounds: 1)
        let hsm = try await token.open {
            $0.workers = 2
            $0.maxPendingOperations = 100_000
        }
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers)
        let keys = HSMPaymentKeys(hsm: hsm)
        let merchant = try await bench.certifiedKey(store, "merchant.engine.ec", .ec)
        try await keys.reload(from: store)
        let tokens = try await bench.forgeTokens(count: Int(seconds * 14_000), forge: TokenForge(pki: pki), merchant: merchant, rsa: false)
        let decrypter = PaymentTokenDecrypter(
            verifier: TokenSignatureVerifier(
                anchors: TrustAnchors(certificates: [pki.root], source: "engine root"), signingTimeWindow: 3600),
            directory: keys, operations: keys)
        // For a profiler to attach to this process now, after the forging.
        FileHandle.standardError.write(Data("forged \(tokens.count) tokens; measuring for \(seconds) s\n".utf8))
        let figure = try await bench.measure(decrypter, tokens, hsm: hsm, inFlight: 8, onWorkers: true)
        await hsm.close()
        return String(format: "ENGINE rate=%.0f cpu_us=%.1f tokens=%d", figure.rate, figure.cpuMicroseconds, figure.count)
    }

    /// ECDH + KDF through the layer on the merchant key, on every worker, as decryption calls it.
    private func deriveRate(_ hsm: HSM, _ merchant: MerchantKey) async throws -> Double {
        let peers = (0..<64).map { _ in Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation) }
        let otherInfo = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + [UInt8](repeating: 7, count: 32)
        let run = TimedRun(seconds: seconds, inFlight: 4, executor: hsm.executor)
        return try await run.rate { index in
            _ = try await hsm.deriveConcatenationKDFKey(merchant.id, peerPoint: peers[index & 63], otherInfo: otherInfo)
            return true
        }.perSecond
    }

    /// An EC merchant key certified in the token (by an admin session of its own, closed after)
    /// and `count` tokens forged to it.
    func certifiedTokens(merchantID: String, count: Int, pki: ApplePayTestPKI) async throws -> [[UInt8]] {
        let admin = try await token.open()
        let store = MerchantKeyStore(
            hsm: admin, records: TestKeyRecords.of(admin), certificateIssuers: TestCertificateAuthority.shared.issuers)
        let merchant = try await certifiedKey(store, merchantID, .ec)
        await admin.close()
        return try await forgeTokens(count: count, forge: TokenForge(pki: pki), merchant: merchant, rsa: false)
    }

    /// EC_v1 decryptions on `hsm` as the service makes them (the key map read from the token, a
    /// decrypter of its own, the tasks on the HSM workers): ``measure(_:_:hsm:inFlight:onWorkers:)``.
    func engine(
        on hsm: HSM, tokens: [[UInt8]], anchors: TrustAnchors, inFlight: Int, beforeMeasuring: () -> Void = {},
        afterEach: (@Sendable () async throws -> Void)? = nil
    ) async throws -> (rate: Double, cpuMicroseconds: Double, count: Int) {
        let keys = HSMPaymentKeys(hsm: hsm)
        try await keys.reload(from: MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm)))
        let decrypter = PaymentTokenDecrypter(
            verifier: TokenSignatureVerifier(anchors: anchors, signingTimeWindow: 3600), directory: keys, operations: keys)
        beforeMeasuring()
        return try await measure(decrypter, tokens, hsm: hsm, inFlight: inFlight, onWorkers: true, afterEach: afterEach)
    }

    func certifiedKey(_ store: MerchantKeyStore, _ merchantID: String, _ type: KeyAlgorithmChoice) async throws -> MerchantKey {
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: type)
        let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        return try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
    }

    func forgeTokens(count: Int, forge: TokenForge, merchant: MerchantKey, rsa: Bool) async throws -> [[UInt8]] {
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
    /// Also returns the process's CPU per decryption over the measurement.
    /// `afterEach` runs after every decryption, as part of it (an audit line, say).
    func measure(
        _ decrypter: PaymentTokenDecrypter, _ tokens: [[UInt8]], hsm: HSM, inFlight: Int, onWorkers: Bool,
        afterEach: (@Sendable () async throws -> Void)? = nil
    ) async throws -> (rate: Double, cpuMicroseconds: Double, count: Int) {
        let failures = Counter()
        let run = TimedRun(seconds: seconds, inFlight: inFlight, executor: onWorkers ? hsm.executor : nil)
        let cpuBefore = ProcessCPU.now()
        let (rate, ranOut, count) = try await run.rate { index in
            guard index < tokens.count else { return false }
            do {
                _ = try await decrypter.decrypt(json: tokens[index])
            } catch {
                failures.value.add(1, ordering: .relaxed)
            }
            try await afterEach?()
            return true
        }
        if failures.value.load(ordering: .relaxed) > 0 {
            throw BenchError("\(failures.value.load(ordering: .relaxed)) decryptions failed")
        }
        if ranOut {
            FileHandle.standardError.write(Data("note: ran out of pre-forged tokens before \(seconds) s\n".utf8))
        }
        return (rate, (ProcessCPU.now() - cpuBefore) / .microseconds(1) / Double(max(count, 1)), count)
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
