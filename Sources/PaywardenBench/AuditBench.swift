import ApplePay
import Foundation
import KeyCustody
import PKCS11
import PaywardenTesting

/// `paywarden-bench audit` (part of `make bench`): what sealing the audit trail costs. In the same
/// run, alternating: audit lines appended unsealed and sealed (one HSM HMAC each), by one writer
/// and by four at once, as lines per second and CPU per line; the HSM's bare HMAC rate beside them;
/// and `audit verify`'s rate with the HSM and with the public key alone.
struct AuditBench {
    let seconds: Double
    let rounds: Int

    func run() async throws {
        let token = try await SoftHSMTestToken.make(labelPrefix: "bench-audit")
        defer { token.destroy() }
        let hsm = try await token.open()
        let keys = try await AuditKeys.open(hsm)
        let directory = NSTemporaryDirectory() + "paywarden-bench-audit-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let record = AuditLog.Record(
            time: Date(), user: "api-key:bench", action: "redeem", keyID: nil, merchantID: "organization-1", result: "ok",
            detail: "registration reg:0123456789abcdef")
        var rows: [(String, [Double], [Double])] = []
        for writers in [1, 4] {
            var plain: ([Double], [Double]) = ([], [])
            var sealed: ([Double], [Double]) = ([], [])
            var hmac: ([Double], [Double]) = ([], [])
            for round in 0..<rounds {
                let path = directory + "/audit-\(writers)-\(round).jsonl"
                let unsealedLog = AuditLog(path: path + ".plain")
                let logs = (0..<writers).map { _ in AuditLog(path: path).sealed(by: AuditChain(hsm: hsm, keys: keys)) }
                let plainRun = try await measure(inFlight: writers) { _ in try await unsealedLog.append(record) }
                plain.0.append(plainRun.perSecond)
                plain.1.append(plainRun.cpuMicroseconds)
                let sealedRun = try await measure(inFlight: writers) { index in try await logs[index % writers].append(record) }
                sealed.0.append(sealedRun.perSecond)
                sealed.1.append(sealedRun.cpuMicroseconds)
                let input = [UInt8](repeating: 0x41, count: 300)
                let hmacRun = try await measure(inFlight: writers) { _ in _ = try await hsm.hmacSHA256(keys.mac, data: input) }
                hmac.0.append(hmacRun.perSecond)
                hmac.1.append(hmacRun.cpuMicroseconds)
                for log in logs { try await log.checkpoint(final: true) }
            }
            rows += [
                ("audit line, unsealed (file only)", plain.0, plain.1), ("audit line, sealed (HSM HMAC + file)", sealed.0, sealed.1),
                ("  HSM HMAC-SHA256 alone", hmac.0, hmac.1),
            ]
            print("writers: \(writers)")
            for (name, rates, cpu) in rows.suffix(3) {
                let label = name.padding(toLength: 40, withPad: " ", startingAt: 0)
                print("  \(label) \(Int(median(rates))) lines/s, \(fmt(median(cpu))) µs CPU each")
            }
            let ratio = fmt(median(sealed.0) / median(plain.0))
            print("  sealed ÷ unsealed: \(ratio) of the rate, +\(fmt(median(sealed.1) - median(plain.1))) µs CPU a line")
        }
        try await decryptsWithAuditLines(token: token, record: record, directory: directory)
        // Verification of what the last rounds wrote.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasSuffix(".plain") }.sorted()
            .map { directory + "/" + $0 }
        let withHSM = try await AuditVerifier.checkingMACs(in: hsm)
        for (name, verifier) in [
            ("audit verify with the HSM", withHSM), ("audit verify --public-key", AuditVerifier(publicKeys: [keys.publicKey])),
        ] {
            let start = ContinuousClock.now
            let cpu = ProcessCPU.now()
            let report = try await verifier.verify(files: files)
            let elapsed = ContinuousClock.now - start
            guard report.verified else { throw BenchError("the bench's own trail did not verify: \(report.failures.prefix(3))") }
            let perLine = (ProcessCPU.now() - cpu) / report.lines
            let rate = Int(Double(report.lines) / (elapsed / .seconds(1)))
            print("\(name): \(report.lines) lines, \(rate) lines/s, \(fmt(perLine / .microseconds(1))) µs CPU each")
        }
        await hsm.close()
    }

    /// EC_v1 decryptions as the engine runs them (2 HSM workers, 8 in flight), alone and each
    /// followed by an audit line, unsealed and sealed, in alternation: the chain on against off
    /// were every decryption audited. None is (the decrypt route writes no audit line; a redemption
    /// writes one), so this bounds the chain's effect on a request from above.
    private func decryptsWithAuditLines(token: TestToken, record: AuditLog.Record, directory: String) async throws {
        let bench = DecryptionBench(raw: RawHSMBench(executable: "", label: "", pin: ""), token: token, seconds: seconds, rounds: 1)
        let pki = try ApplePayTestPKI(name: "Audit")
        let hsm = try await token.open {
            $0.workers = 2
            $0.maxPendingOperations = 100_000
        }
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers)
        let merchant = try await bench.certifiedKey(store, "merchant.audit.ec", .ec)
        let tokens = try await bench.forgeTokens(count: Int(seconds * 14_000), forge: TokenForge(pki: pki), merchant: merchant, rsa: false)
        let anchors = TrustAnchors(certificates: [pki.root], source: "audit bench root")
        let keys = try await AuditKeys.open(hsm)
        var figures: [(name: String, rates: [Double], cpu: [Double])] = [
            ("decrypt, no audit line", [], []), ("decrypt + an unsealed audit line", [], []), ("decrypt + a sealed audit line", [], []),
        ]
        for round in 0..<rounds {
            let plain = AuditLog(path: directory + "/decrypt-\(round).jsonl.plain")
            let sealed = AuditLog(path: directory + "/decrypt-\(round).jsonl").sealed(by: AuditChain(hsm: hsm, keys: keys))
            let logs: [AuditLog?] = [nil, plain, sealed]
            for (index, log) in logs.enumerated() {
                var afterEach: (@Sendable () async throws -> Void)?
                if let log { afterEach = { try await log.append(record) } }
                let figure = try await bench.engine(on: hsm, tokens: tokens, anchors: anchors, inFlight: 8, afterEach: afterEach)
                figures[index].rates.append(figure.rate)
                figures[index].cpu.append(figure.cpuMicroseconds)
            }
            try await sealed.checkpoint(final: true)
        }
        print("decryptions (EC_v1, 2 HSM workers), each with:")
        for figure in figures {
            let label = figure.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            print("  \(label) \(Int(median(figure.rates))) tokens/s, \(fmt(median(figure.cpu))) µs CPU each")
        }
        let (off, on) = (figures[1], figures[2])
        print(
            "  chain on ÷ off (sealed ÷ unsealed line): \(fmt(median(on.rates) / median(off.rates))) of the rate, "
                + "+\(fmt(median(on.cpu) - median(off.cpu))) µs CPU a decryption")
        await hsm.close()
    }

    private func measure(inFlight: Int, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws
        -> (perSecond: Double, cpuMicroseconds: Double)
    {
        let cpu = ProcessCPU.now()
        let run = try await TimedRun(seconds: seconds, inFlight: inFlight, executor: nil).rate { index in
            try await operation(index)
            return true
        }
        return (run.perSecond, (ProcessCPU.now() - cpu) / .microseconds(1) / Double(max(run.count, 1)))
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    private func fmt(_ value: Double) -> String { String(format: "%.2f", value) }
}
