import Crypto
import Foundation
import PKCS11
import PaywardenPrimitives

/// Checks audit files as ``AuditChain`` wrote them (`paywarden audit verify`): each writer's lines
/// in sequence, each once; each checkpoint signed by an audit signing key and matching the lines
/// it covers; each chain closed by its final checkpoint; and, with the HSM, every line's MAC.
///
/// The files are read in the order given, oldest first, as one trail: a writer's chain runs on
/// across rotations, so a file of the rotation removed is lines missing from every chain that ran
/// through it. Only the first file may begin in the middle of a chain (older files were deleted).
public struct AuditVerifier: Sendable {
    /// HMAC-SHA256 of each input under the key `key`, computed in the HSM.
    public typealias MACs = @Sendable (_ key: KeyIdentifier, _ inputs: [[UInt8]]) async throws -> [[UInt8]]

    /// One thing the verifier found, at a line of a file.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        public let file: String
        public let line: Int
        public let message: String
        /// False for what is worth knowing but breaks nothing (an unsealed line, a chain whose
        /// beginning is in a file not given).
        public let isFailure: Bool

        public var description: String { "\(file):\(line): \(isFailure ? "" : "note: ")\(message)" }
    }

    public struct Report: Sendable {
        /// Failures first in file order, then notes.
        public var findings: [Finding] = []
        public var lines = 0
        public var writers = 0
        public var checkpoints = 0
        public var unsealed = 0
        /// Lines whose MAC was checked in the HSM (none with the public key alone).
        public var macsChecked = 0

        public var failures: [Finding] { findings.filter(\.isFailure) }
        public var verified: Bool { failures.isEmpty }
    }

    let publicKeys: [P256.Signing.PublicKey]
    let macKeys: [KeyIdentifier]
    let macs: MACs?
    /// What may pass as a note rather than fail: see ``Allowances``.
    public var allowances: Allowances = []

    /// What an operator may accept, each after reading what the report says of it.
    public struct Allowances: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Chains that begin inside the first file given (its older files were deleted by
        /// retention): their lines before it cannot be checked, nor the first line's MAC.
        public static let partialStart = Allowances(rawValue: 1 << 0)
        /// Lines written without the HSM (it could not be opened or failed a MAC): they prove nothing.
        public static let unsealed = Allowances(rawValue: 1 << 1)
        /// Chains without their final checkpoint (a writer still running, or killed): a cut tail
        /// then goes unseen.
        public static let openChains = Allowances(rawValue: 1 << 2)
    }

    /// - Parameters:
    ///   - publicKeys: the keys checkpoints may be signed by.
    ///   - macKeys: the HSM's audit HMAC keys, tried in turn for each writer; with `macs`, every
    ///     line's MAC is checked, else the checkpoints alone vouch for the lines.
    public init(publicKeys: [P256.Signing.PublicKey], macKeys: [KeyIdentifier] = [], macs: MACs? = nil) {
        self.publicKeys = publicKeys
        self.macKeys = macKeys
        self.macs = macs
    }

    /// The verifier with the HSM: every audit key it holds, and every line's MAC computed there.
    public static func checkingMACs(in hsm: HSM) async throws(CustodyError) -> AuditVerifier {
        do throws(PKCS11Error) {
            let macKeys = try await AuditKeys.macKeys(hsm).map(\.id)
            let signing = try await AuditKeys.signingKeys(hsm).map(\.publicKey)
            return AuditVerifier(publicKeys: signing, macKeys: macKeys) { key, inputs in
                try await hsm.withHMACSHA256(key) { mac throws(PKCS11Error) in
                    try inputs.map { input throws(PKCS11Error) in try mac(input) }
                }
            }
        } catch {
            throw CustodyError(error)
        }
    }

    /// Whether it has a key to check MACs with and one to check signatures with.
    public var hasHSMKeys: Bool { !macKeys.isEmpty && macs != nil && !publicKeys.isEmpty }

    public func verify(files: [String]) async throws(CustodyError) -> Report {
        var report = Report()
        var writers: [String: [SealedLine]] = [:]
        var order: [String] = []
        var unsealedNoted = 0
        for (index, path) in files.enumerated() {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CustodyError(.invalidArgument, "cannot read the audit file \(path); give files that exist, oldest first")
            }
            let name = (path as NSString).lastPathComponent
            let content = [UInt8](data)
            var number = 0
            // An empty file (just rotated) has no line; the last line's newline ends it, not another.
            let lines = content.isEmpty ? [] : content.split(separator: 0x0A, omittingEmptySubsequences: false)
            for bytes in lines.dropLast(content.last == 0x0A ? 1 : 0) {
                number += 1
                report.lines += 1
                switch SealedLine.parse(bytes, file: index, name: name, number: number) {
                case .sealed(let line):
                    if writers[line.writer] == nil { order.append(line.writer) }
                    writers[line.writer, default: []].append(line)
                case .unsealed:
                    report.unsealed += 1
                    unsealedNoted += 1
                    // Every one when they fail (one may be forged); the first ten when they are allowed.
                    if !allowances.contains(.unsealed) || unsealedNoted <= 10 {
                        report.findings.append(
                            Finding(
                                file: name, line: number, message: "unsealed: written without the HSM, so it proves nothing",
                                isFailure: !allowances.contains(.unsealed)))
                    }
                case .malformed(let reason):
                    report.findings.append(Finding(file: name, line: number, message: reason, isFailure: true))
                }
            }
        }
        report.writers = order.count
        for writer in order {
            var check = WriterCheck(writer: writer, lines: writers[writer] ?? [], publicKeys: publicKeys, allowances: allowances)
            check.run()
            report.checkpoints += check.checkpoints
            report.findings += check.findings
            if let macs, !macKeys.isEmpty {
                let (findings, checked) = try await checkMACs(check.macInputs, writer: writer, macs: macs)
                report.findings += findings
                report.macsChecked += checked
            }
        }
        let fileIndex = Dictionary(files.enumerated().map { (($1 as NSString).lastPathComponent, $0) }, uniquingKeysWith: { a, _ in a })
        report.findings.sort {
            ($0.isFailure ? 0 : 1, fileIndex[$0.file] ?? 0, $0.line) < ($1.isFailure ? 0 : 1, fileIndex[$1.file] ?? 0, $1.line)
        }
        return report
    }

    /// Checks the MACs of one writer's lines, with the first of the HSM's audit keys that verifies
    /// its first line (two processes making the keys at once may leave two).
    private func checkMACs(
        _ inputs: [(line: SealedLine, input: [UInt8])], writer: String, macs: MACs
    ) async throws(CustodyError) -> ([Finding], Int) {
        guard !inputs.isEmpty else { return ([], 0) }
        var chosen = macKeys[0]
        for key in macKeys where macKeys.count > 1 {
            if try await compute(macs, key, [inputs[0].input]).first == inputs[0].line.mac {
                chosen = key
                break
            }
        }
        var findings: [Finding] = []
        var start = 0
        while start < inputs.count {
            let batch = inputs[start..<min(start + 2000, inputs.count)]
            let computed = try await compute(macs, chosen, batch.map(\.input))
            for (entry, mac) in zip(batch, computed) where mac != entry.line.mac {
                findings.append(
                    Finding(
                        file: entry.line.name, line: entry.line.number,
                        message: "changed or forged: its MAC does not verify (writer \(writer), seq \(entry.line.sequence))",
                        isFailure: true))
            }
            start += batch.count
        }
        // Not one line verifying is a trail sealed under another token's key far more often than a
        // writer whose every line was forged: one finding says so, not one per line.
        if inputs.count > 1, findings.count == inputs.count, let first = inputs.first {
            findings = [
                Finding(
                    file: first.line.name, line: first.line.number,
                    message: "no MAC of writer \(writer)'s \(inputs.count) lines verifies under this HSM's audit keys: the trail "
                        + "was sealed with another token's audit key (verify it with that token, or with --public-key), or every "
                        + "line was forged",
                    isFailure: true)
            ]
        }
        return (findings, inputs.count)
    }

    private func compute(_ macs: MACs, _ key: KeyIdentifier, _ inputs: [[UInt8]]) async throws(CustodyError) -> [[UInt8]] {
        do {
            return try await macs(key, inputs)
        } catch {
            throw CustodyError(.hsm, "the audit MACs could not be computed in the HSM: \(error)")
        }
    }
}

/// One sealed line as read: where it is, its chain fields, and what its MAC covers.
struct SealedLine {
    let file: Int
    let name: String
    let number: Int
    /// The line's bytes, without its newline.
    let bytes: ArraySlice<UInt8>
    let writer: String
    let sequence: UInt64
    let mac: [UInt8]
    let checkpoint: AuditCheckpoint?

    enum Parsed {
        case sealed(SealedLine)
        case unsealed
        case malformed(String)
    }

    /// The bytes the line's MAC covers: the line up to its MAC, closed with `}`.
    var canonical: [UInt8] { Array(bytes.dropLast(AuditLineFormat.macSuffixLength)) + [UInt8(ascii: "}")] }

    var place: String { "\(name):\(number)" }

    static func parse(_ bytes: ArraySlice<UInt8>, file: Int, name: String, number: Int) -> Parsed {
        // The chain's fields end every sealed line in a fixed order (``AuditChain``): read from
        // the end, without decoding the record; anything else is decoded to say what it is.
        guard let fields = AuditLineFormat.chainFields(bytes) else { return parseDecoding(bytes, file: file, name: name, number: number) }
        var checkpoint: AuditCheckpoint?
        if bytes.starts(with: AuditLineFormat.checkpointPrefix) {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
                let record = AuditLineFormat.checkpointRecord(bytes),
                let decoded = decodeCheckpoint(object["checkpoint"], writer: fields.writer, record: record)
            else { return .malformed("a checkpoint line whose checkpoint cannot be read: changed") }
            checkpoint = decoded
        }
        return .sealed(
            SealedLine(
                file: file, name: name, number: number, bytes: bytes, writer: fields.writer, sequence: fields.sequence, mac: fields.mac,
                checkpoint: checkpoint))
    }

    private static func parseDecoding(_ bytes: ArraySlice<UInt8>, file: Int, name: String, number: Int) -> Parsed {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
            return .malformed("not an audit line (not one JSON object): changed, or written by something else")
        }
        guard object["writer"] == nil, object["seq"] == nil, object["mac"] == nil else {
            return .malformed("a sealed line without its sequence number, writer and MAC in place at its end: changed")
        }
        return object["action"] is String ? .unsealed : .malformed("not an audit line: it has no action")
    }

    private static func decodeCheckpoint(_ fields: Any?, writer: String, record: [UInt8]) -> AuditCheckpoint? {
        guard let fields, let data = try? JSONSerialization.data(withJSONObject: fields),
            var checkpoint = try? JSONDecoder().decode(AuditCheckpoint.self, from: data)
        else { return nil }
        // What the signature covers besides the fields: the writer the line names, its record.
        checkpoint.writer = writer
        checkpoint.recordDigest = Array(SHA256.hash(data: record))
        return checkpoint
    }
}

/// The checks of one writer's chain that need no HSM, and the MAC inputs for those that do.
struct WriterCheck {
    let writer: String
    let lines: [SealedLine]
    let publicKeys: [P256.Signing.PublicKey]
    let allowances: AuditVerifier.Allowances
    var findings: [AuditVerifier.Finding] = []
    var checkpoints = 0
    /// Each line whose previous line is known, with the bytes its MAC covers.
    var macInputs: [(line: SealedLine, input: [UInt8])] = []

    init(writer: String, lines: [SealedLine], publicKeys: [P256.Signing.PublicKey], allowances: AuditVerifier.Allowances) {
        self.writer = writer
        self.lines = lines
        self.publicKeys = publicKeys
        self.allowances = allowances
    }

    private mutating func fail(_ line: SealedLine, _ message: String) {
        findings.append(AuditVerifier.Finding(file: line.name, line: line.number, message: message, isFailure: true))
    }

    private mutating func note(_ line: SealedLine, _ message: String) {
        findings.append(AuditVerifier.Finding(file: line.name, line: line.number, message: message, isFailure: false))
    }

    mutating func run() {
        // In the files' order: each sequence number once, increasing.
        var seen: [UInt64: SealedLine] = [:]
        var highest: SealedLine?
        for line in lines {
            if let first = seen[line.sequence] {
                fail(line, "inserted: a second line with seq \(line.sequence) of writer \(writer) (the first is at \(first.place))")
                continue
            }
            if let highest, line.sequence < highest.sequence {
                fail(line, "out of order: seq \(line.sequence) of writer \(writer) comes after seq \(highest.sequence) at \(highest.place)")
            }
            seen[line.sequence] = line
            if highest.map({ line.sequence > $0.sequence }) ?? true { highest = line }
        }
        let chain = seen.values.sorted { $0.sequence < $1.sequence }
        guard let first = chain.first else { return }
        if first.sequence > 1 {
            if first.file == 0 && allowances.contains(.partialStart) {
                note(first, "writer \(writer) begins at seq \(first.sequence): its earlier lines are in files not given")
            } else if first.file == 0 {
                fail(
                    first,
                    "lines 1–\(first.sequence - 1) of writer \(writer) are missing before this one: removed, or in older files "
                        + "(give them, or --partial when retention deleted them)")
            } else {
                fail(
                    first,
                    "lines 1–\(first.sequence - 1) of writer \(writer) are missing before this one: a file of the rotation removed?")
            }
        }
        // The sequence, the hash chain and the checkpoints, in sequence order.
        var previous: SealedLine?
        var hash: [UInt8]? = first.sequence == 1 ? AuditLineFormat.initialChainValue : nil
        var hashes: [UInt64: [UInt8]] = [:]
        var anchor: SealedLine?
        let failures = { (findings: [AuditVerifier.Finding]) in findings.filter(\.isFailure).count }
        /// The failures reported when the last checkpoint vouched for the lines.
        var failuresAtAnchor = failures(findings)
        for line in chain {
            if let previous, line.sequence != previous.sequence + 1 {
                let missing = line.sequence - previous.sequence - 1
                let across =
                    previous.file != line.file ? " (between \(previous.name) and \(line.name): a file of the rotation removed?)" : ""
                let range = "seq \(previous.sequence + 1)–\(line.sequence - 1)"
                fail(line, "removed: \(missing) line(s) of writer \(writer) missing before this one, \(range)\(across)")
                hash = nil
            }
            if line.sequence == 1 {
                macInputs.append((line, AuditLineFormat.initialChainValue + line.canonical))
            } else if let previous, previous.sequence + 1 == line.sequence {
                macInputs.append((line, previous.mac + line.canonical))
            }
            if let known = hash {
                hash = AuditLineFormat.nextHash(known, line: line.bytes)
                hashes[line.sequence] = hash
            }
            if let checkpoint = line.checkpoint {
                checkpoints += 1
                let failedSinceAnchor = failures(findings) > failuresAtAnchor
                check(checkpoint, at: line, seen: seen, hash: &hash, hashes: &hashes, anchor: anchor, failedSinceAnchor: failedSinceAnchor)
                failuresAtAnchor = failures(findings)
                anchor = line
            }
            previous = line
        }
        if let last = chain.last {
            // A subtraction: `through` is read from the file and may be anything.
            if let checkpoint = last.checkpoint, checkpoint.final, checkpoint.through < last.sequence,
                last.sequence - checkpoint.through == 1
            {
                return
            }
            let sealed = chain.last { $0.checkpoint != nil }.map { "its last checkpoint is at \($0.place)" } ?? "it has no checkpoint"
            if allowances.contains(.openChains) {
                note(last, "open: writer \(writer)'s chain ends here without its final checkpoint (\(sealed)): still running, or killed")
                return
            }
            fail(
                last,
                "truncated: writer \(writer)'s chain ends here without its final checkpoint (\(sealed)): "
                    + "the tail was cut, or the writer was killed or is still running")
        }
    }

    private mutating func check(
        _ checkpoint: AuditCheckpoint, at line: SealedLine, seen: [UInt64: SealedLine], hash: inout [UInt8]?,
        hashes: inout [UInt64: [UInt8]], anchor: SealedLine?, failedSinceAnchor: Bool
    ) {
        guard checkpoint.isSigned(byOneOf: publicKeys) else {
            fail(line, "a checkpoint whose signature does not verify with the audit signing key: changed or forged")
            return
        }
        guard checkpoint.through < line.sequence else {
            fail(line, "a checkpoint covering lines after its own: forged")
            return
        }
        if let covered = seen[checkpoint.through], covered.mac != checkpoint.chainMAC {
            fail(covered, "changed: the MAC of this line is not the one checkpoint \(line.place) signed")
        }
        if let reached = hashes[checkpoint.through] {
            if reached != checkpoint.chainHash, !failedSinceAnchor {
                let from = anchor.map { "after \($0.place)" } ?? "from its first"
                fail(
                    line,
                    "changed: the lines of writer \(writer) \(from) up to seq \(checkpoint.through) do not hash to what this "
                        + "checkpoint signed")
            }
        } else if checkpoint.through > 0, anchor == nil {
            note(line, "lines of writer \(writer) up to seq \(checkpoint.through) are vouched for from this checkpoint on")
        }
        // From here the signed value holds, and the lines after it are hashed from it.
        var rehashed = checkpoint.chainHash
        hashes = [checkpoint.through: rehashed]
        var sequence = checkpoint.through + 1
        while sequence <= line.sequence, let next = seen[sequence] {
            rehashed = AuditLineFormat.nextHash(rehashed, line: next.bytes)
            hashes[sequence] = rehashed
            sequence += 1
        }
        hash = sequence > line.sequence ? rehashed : nil
    }
}
