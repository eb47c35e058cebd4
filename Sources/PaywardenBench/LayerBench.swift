import Crypto
import Foundation
import PKCS11
import PaywardenTesting

/// ECDH-derive and ECDSA-sign rates through Paywarden's PKCS#11 layer, next to the raw module's.
struct LayerBench {
    let raw: RawHSMBench
    let token: TestToken
    let seconds: Double
    let rounds: Int

    func run() async throws -> [BenchRow] {
        var rows: [BenchRow] = []
        for workers in [1, 2] {
            // The layer's overhead is measured on the operation hsm_bench runs: the token key.
            let hsm = try await token.open {
                $0.workers = workers
                $0.sessionKeyCopies = .off
            }
            let copying = try await token.open {
                $0.workers = workers
                $0.sessionKeyCopies = .on
            }
            let key = try await hsm.generateKeyPair(KeySpecification(label: "bench-ec", algorithm: .ecP256, usage: [.derive, .sign]))
            let peers = (0..<64).map { _ in Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation) }
            let otherInfo = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + [UInt8](repeating: 7, count: 32)
            let digest = [UInt8](repeating: 0x5A, count: 32)
            let inFlight = workers * 4
            let derive: @Sendable (Int) async throws -> Void = { index in
                _ = try await hsm.deriveConcatenationKDFKey(key.id, peerPoint: peers[index & 63], otherInfo: otherInfo)
            }
            let deriveFromCopy: @Sendable (Int) async throws -> Void = { index in
                _ = try await copying.deriveConcatenationKDFKey(key.id, peerPoint: peers[index & 63], otherInfo: otherInfo)
            }
            let sign: @Sendable (Int) async throws -> Void = { _ in _ = try await hsm.signECDSA(key.id, digest: digest) }

            var ecdh = BenchRow(operation: "ECDH derive + KDF (C_DigestKey) + destroy", rawName: "ecdh-kdf", workers: workers)
            var copied = BenchRow(operation: "  the same, on session copies of the key", rawName: "ecdh-kdf", workers: workers)
            var ecdsa = BenchRow(operation: "ECDSA P-256 sign", rawName: "ecdsa", workers: workers)
            for _ in 0..<rounds {
                ecdh.raw.append(try raw.rate("ecdh-kdf", seconds: seconds, threads: workers) ?? 0)
                ecdh.layer.append(try await rate(hsm, inFlight: inFlight, onWorkers: true, derive))
                ecdh.hopping.append(try await rate(hsm, inFlight: inFlight, onWorkers: false, derive))
                copied.raw.append(ecdh.raw.last ?? 0)
                copied.layer.append(try await rate(copying, inFlight: inFlight, onWorkers: true, deriveFromCopy))
                ecdsa.raw.append(try raw.rate("ecdsa", seconds: seconds, threads: workers) ?? 0)
                ecdsa.layer.append(try await rate(hsm, inFlight: inFlight, onWorkers: true, sign))
                ecdsa.hopping.append(try await rate(hsm, inFlight: inFlight, onWorkers: false, sign))
            }
            rows += [ecdh, copied, ecdsa]
            await copying.close()
            await hsm.close()
        }
        return rows
    }

    /// - Parameter onWorkers: run the calling tasks on the HSM's workers (no hop per call)
    ///   rather than on the cooperative pool (one hop each way per call).
    private func rate(_ hsm: HSM, inFlight: Int, onWorkers: Bool, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws
        -> Double
    {
        let run = TimedRun(seconds: seconds, inFlight: inFlight, executor: onWorkers ? hsm.executor : nil)
        return try await run.rate { index in
            try await operation(index)
            return true
        }.perSecond
    }
}
