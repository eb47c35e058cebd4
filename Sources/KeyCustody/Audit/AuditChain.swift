import Crypto
import Foundation
import PKCS11
import PaywardenPrimitives
import Synchronization

/// One writer's chain through the audit trail: every process that audits (each `serve` instance,
/// each admin command) is a writer with a random name of its own, and chains its lines only: lines
/// of several writers interleave in one file, so one chain through all of them would need a lock
/// across processes on every line.
///
/// Line `n` of a writer carries `"seq":n`, `"writer":W` and `"mac"`: HMAC-SHA256, computed in the
/// HSM under the audit key, of the previous line's MAC (32 zero bytes before the first) followed by
/// the line's canonical bytes: the line as written, up to its MAC, closed with `}`. A changed,
/// removed, repeated or moved line breaks the chain where it is; only the HSM can extend it.
///
/// For a verifier without the HSM, a writer also keeps a hash chain (SHA-256 of the previous hash
/// and the whole line) and signs it, with the MAC it has reached, in a checkpoint line: every
/// `PAYWARDEN_AUDIT_CHECKPOINT_SECONDS` when lines were written since the last, and a final one
/// when the writer stops. A chain that ends without its final checkpoint was cut (or its writer
/// was killed, or still runs).
public final class AuditChain: Sendable {
    /// This writer's name in its lines: 16 random hex digits.
    public let writer: String
    public let keys: AuditKeys
    /// Told why a line could not be sealed (the HSM failed its MAC); the line is written unsealed.
    let sealingFailed: @Sendable (String) -> Void
    private let hsm: HSM
    private let state = Mutex(State())

    /// The HSM failed a line's MAC: the line is not in the chain.
    struct SealingFailure: Error {
        let reason: String
    }

    private struct State {
        var sequence: UInt64 = 0
        var mac = AuditLineFormat.initialChainValue
        var hash = AuditLineFormat.initialChainValue
        /// The last line a checkpoint covers.
        var checkpointed: UInt64 = 0
        /// The last checkpoint line: a checkpoint after it would cover nothing new.
        var lastCheckpointLine: UInt64 = 0
        /// Set by the final checkpoint: no line but its own joins the chain after it.
        var closed = false
    }

    public init(hsm: HSM, keys: AuditKeys, sealingFailed: @escaping @Sendable (String) -> Void = { _ in }) {
        self.hsm = hsm
        self.keys = keys
        self.sealingFailed = sealingFailed
        self.writer = Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
    }

    /// A chain for a new writer under the HSM's audit keys (made when the HSM has none).
    /// - Parameter sealingFailed: told, without card data, why a line was written unsealed.
    public static func open(_ hsm: HSM, sealingFailed: @escaping @Sendable (String) -> Void = { _ in }) async throws(CustodyError)
        -> AuditChain
    {
        AuditChain(hsm: hsm, keys: try await AuditKeys.open(hsm), sealingFailed: sealingFailed)
    }

    /// Seals `object` (one JSON object's bytes) as the writer's next line and hands the line, its
    /// newline included, to `write`, in the chain's order. When `write` fails the chain does not
    /// advance: the next line takes the sequence number and follows the last line written. When
    /// the HSM fails the MAC it throws ``SealingFailure`` and nothing was written.
    ///
    /// The writer's lock is held across the MAC and the write (microseconds on a local module):
    /// that is what keeps the file's order the chain's.
    func append(_ object: Data, checkpoint: Bool = false, write: @escaping @Sendable (Data) throws -> Void) async throws {
        let written: Result<Void, any Error>
        do {
            written = try await hsm.withHMACSHA256(keys.mac) { [self] mac throws(PKCS11Error) in
                try state.withLock { (state: inout State) throws(PKCS11Error) -> Result<Void, any Error> in
                    // A line after the final checkpoint would make the chain look cut: it goes unsealed.
                    if state.closed && !checkpoint { return .failure(SealingFailure(reason: "the writer's chain was closed")) }
                    let sequence = state.sequence + 1
                    let canonical = AuditLineFormat.inserting(",\"seq\":\(sequence),\"writer\":\"\(writer)\"", into: object)
                    let code = try mac(state.mac + Array(canonical))
                    var line = AuditLineFormat.inserting(",\"mac\":\"\(Hex.encode(code))\"", into: canonical)
                    line.append(0x0A)
                    do {
                        try write(line)
                    } catch {
                        return .failure(error)
                    }
                    state.sequence = sequence
                    if checkpoint { state.lastCheckpointLine = sequence }
                    state.mac = code
                    state.hash = AuditLineFormat.nextHash(state.hash, line: line.dropLast())
                    return .success(())
                }
            }
        } catch  where error.code == .timedOut {
            // The job may still run and write the line sealed: writing it unsealed too would record it twice.
            throw CustodyError(.hsm, "the HSM did not seal the audit line in time; it may still be written", underlying: error)
        } catch {
            throw SealingFailure(reason: "the HSM could not compute the line's MAC: \(error)")
        }
        try written.get()
    }

    /// What the next checkpoint states, signed: nil when no line but checkpoints was written since
    /// the last, and for a final one when the writer wrote nothing (it has no chain to close). A
    /// final checkpoint closes the chain at once, so that it is the chain's last line.
    ///
    /// - Parameter record: the checkpoint line's record (time, user, action), which the signature covers too.
    func checkpoint(final: Bool, record: Data) async throws(CustodyError) -> AuditCheckpoint? {
        let reached: (through: UInt64, hash: [UInt8], mac: [UInt8])? = state.withLock { state in
            let wroteSince = state.sequence > state.checkpointed && state.sequence != state.lastCheckpointLine
            guard final ? state.sequence > 0 && !state.closed : wroteSince else { return nil }
            state.checkpointed = state.sequence
            if final { state.closed = true }
            return (state.sequence, state.hash, state.mac)
        }
        guard let reached else { return nil }
        var checkpoint = AuditCheckpoint(
            writer: writer, through: reached.through, chainHash: reached.hash, chainMAC: reached.mac, final: final,
            signingKey: keys.signing, signature: [], recordDigest: Array(SHA256.hash(data: record)))
        do {
            checkpoint.signature = try await hsm.signECDSA(keys.signing, digest: Array(SHA256.hash(data: checkpoint.signedMessage)))
        } catch {
            // Not signed: the next checkpoint covers these lines as well (a final one may be tried again).
            state.withLock { state in
                state.checkpointed = min(state.checkpointed, reached.through - 1)
                if final { state.closed = false }
            }
            throw CustodyError(.hsm, "the audit checkpoint could not be signed in the HSM: \(error)", underlying: error)
        }
        return checkpoint
    }
}

/// A checkpoint of one writer's chain: through which line, the hash chain and the MAC reached
/// there, and whether the writer stopped; signed by the audit signing key.
public struct AuditCheckpoint: Sendable, Hashable, Decodable {
    public var writer: String
    public var through: UInt64
    public var chainHash: [UInt8]
    public var chainMAC: [UInt8]
    public var final: Bool
    public var signingKey: KeyIdentifier
    /// ECDSA P-256 over SHA-256 of ``signedMessage``, DER.
    public var signature: [UInt8]
    /// SHA-256 of the checkpoint line's record (its bytes before the checkpoint, closed with `}`):
    /// not written, computed by the writer and again by the reader.
    public var recordDigest: [UInt8]

    /// What the signature covers: every field but the signature, and the line's record, in a
    /// fixed text form.
    public var signedMessage: [UInt8] {
        let chain = "\(writer)\n\(through)\n\(Hex.encode(chainHash))\n\(Hex.encode(chainMAC))\n\(final)\n"
        return Array(("paywarden audit checkpoint v1\n" + chain + "\(Hex.encode(recordDigest))\n").utf8)
    }

    /// The fields the checkpoint line carries under `"checkpoint"`.
    var jsonFields: String {
        "\"checkpoint\":{\"chainHash\":\"\(Hex.encode(chainHash))\",\"chainMac\":\"\(Hex.encode(chainMAC))\",\"final\":\(final),"
            + "\"signature\":\"\(Data(signature).base64EncodedString())\",\"signingKey\":\"\(signingKey.hex)\","
            + "\"through\":\(through)}"
    }

    enum CodingKeys: String, CodingKey {
        case writer, through, chainHash
        case chainMAC = "chainMac"
        case final, signingKey, signature
    }

    public init(
        writer: String, through: UInt64, chainHash: [UInt8], chainMAC: [UInt8], final: Bool, signingKey: KeyIdentifier,
        signature: [UInt8], recordDigest: [UInt8]
    ) {
        self.writer = writer
        self.through = through
        self.chainHash = chainHash
        self.chainMAC = chainMAC
        self.final = final
        self.signingKey = signingKey
        self.signature = signature
        self.recordDigest = recordDigest
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func hex(_ key: CodingKeys) throws -> [UInt8] {
            guard let bytes = Hex.decode(try container.decode(String.self, forKey: key)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not hex")
            }
            return bytes
        }
        writer = ""  // the line's, set by the reader: the signature covers it
        through = try container.decode(UInt64.self, forKey: .through)
        chainHash = try hex(.chainHash)
        chainMAC = try hex(.chainMAC)
        final = try container.decode(Bool.self, forKey: .final)
        signingKey = KeyIdentifier(bytes: try hex(.signingKey))
        guard let signature = Data(base64Encoded: try container.decode(String.self, forKey: .signature)) else {
            throw DecodingError.dataCorruptedError(forKey: .signature, in: container, debugDescription: "not base64")
        }
        self.signature = Array(signature)
        recordDigest = []  // the reader's, from the line
    }

    /// Whether one of `keys` signed this checkpoint.
    public func isSigned(byOneOf keys: [P256.Signing.PublicKey]) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
        let digest = SHA256.hash(data: signedMessage)
        return keys.contains { $0.isValidSignature(signature, for: digest) }
    }
}

/// The bytes of a sealed audit line: how the chain fields are added to a record's JSON and read back.
public enum AuditLineFormat {
    /// The chain value before a writer's first line.
    public static let initialChainValue = [UInt8](repeating: 0, count: 32)
    /// `,"mac":"` + 64 hex digits + `"}`: what a sealed line ends with (before its newline).
    static let macSuffixLength = 8 + 64 + 2

    /// `object` with `fields` (`,"name":value…`) added before its closing brace.
    static func inserting(_ fields: String, into object: Data) -> Data {
        var result = object.dropLast()
        result.append(contentsOf: Array(fields.utf8))
        result.append(UInt8(ascii: "}"))
        return Data(result)
    }

    /// How a checkpoint line begins (a record's keys are sorted, `action` first).
    static let checkpointPrefix = Array("{\"action\":\"\(AuditLog.checkpointAction)\"".utf8)

    /// The hash chain's next value: SHA-256 of the previous value and the whole line, its newline
    /// included (`line` is given without it).
    public static func nextHash(_ previous: [UInt8], line: some DataProtocol) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(data: line)
        hasher.update(data: [0x0A])
        return Array(hasher.finalize())
    }

    /// The chain fields a sealed line (without its newline) ends with, in the order ``AuditChain``
    /// writes them: `,"seq":N,"writer":"W","mac":"M"}`; nil when it does not end so.
    static func chainFields(_ line: ArraySlice<UInt8>) -> (sequence: UInt64, writer: String, mac: [UInt8])? {
        let macStart = line.endIndex - macSuffixLength
        // At least `{`, `,"seq":` and a digit before the writer's field.
        guard line.count > macSuffixLength + writerFieldLength + 8, line[macStart...].starts(with: macPrefix),
            line[line.endIndex - 2] == UInt8(ascii: "\""), line[line.endIndex - 1] == UInt8(ascii: "}"),
            line[(macStart + macPrefix.count)..<(line.endIndex - 2)].allSatisfy(isLowercaseHex),
            let mac = Hex.decode(utf8: Array(line[(macStart + macPrefix.count)..<(line.endIndex - 2)]))
        else { return nil }
        let writerStart = macStart - writerFieldLength
        guard line[writerStart...].starts(with: writerPrefix), line[macStart - 1] == UInt8(ascii: "\"") else { return nil }
        let writer = line[(writerStart + writerPrefix.count)..<(macStart - 1)]
        guard writer.allSatisfy(isLowercaseHex) else { return nil }
        var digitsStart = writerStart
        while digitsStart > line.startIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[digitsStart - 1]) { digitsStart -= 1 }
        guard digitsStart < writerStart, digitsStart - sequencePrefix.count >= line.startIndex,
            line[(digitsStart - sequencePrefix.count)...].starts(with: sequencePrefix),
            let sequence = UInt64(String(decoding: line[digitsStart..<writerStart], as: UTF8.self)), sequence > 0
        else { return nil }
        return (sequence, String(decoding: writer, as: UTF8.self), mac)
    }

    /// Hex as the writer writes it: lowercase only, so a re-cased MAC or name is a changed line.
    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// The record of a checkpoint line: its bytes before `,"checkpoint":{`, closed with `}` (a
    /// record's strings escape their quotes, so the sequence cannot occur inside one).
    static func checkpointRecord(_ line: ArraySlice<UInt8>) -> [UInt8]? {
        let marker = Array(",\"checkpoint\":{".utf8)
        guard let start = line.indices.first(where: { line[$0...].starts(with: marker) }) else { return nil }
        return Array(line[..<start]) + [UInt8(ascii: "}")]
    }

    private static let macPrefix = Array(",\"mac\":\"".utf8)
    private static let writerPrefix = Array(",\"writer\":\"".utf8)
    private static let sequencePrefix = Array(",\"seq\":".utf8)
    /// `,"writer":"` + 16 hex digits + `"`.
    private static let writerFieldLength = 11 + 16 + 1
}
