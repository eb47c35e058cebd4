import Foundation
import Synchronization

/// The append-only admin audit trail: one JSON object per line.
///
/// Records carry who did what to which key and how it ended, never key material, PINs,
/// passwords or card data.
///
/// The file is kept open between records (a service audits every redemption: an open, a close and
/// a directory check per line cost more than the line). It is opened again when it was rotated
/// (the path names another file, or none: logrotate's rename or delete), when it was truncated in
/// place (copytruncate), and after ``reopenAll()`` (`serve` calls it on `SIGHUP`).
///
/// With an ``AuditChain`` (a writer with the HSM's audit keys), every line is sealed into the
/// writer's chain and ``checkpoint(final:)`` signs where it has reached; without one (the HSM
/// could not be opened) lines are written unsealed, and `paywarden audit verify` says so.
public struct AuditLog: Sendable {
    public let path: String
    /// Where each line goes as well, once it is in the file (`PAYWARDEN_AUDIT_SYSLOG`).
    public let syslog: AuditSyslog?
    /// This writer's chain, when it has the HSM's audit keys.
    public let chain: AuditChain?
    private let file: AuditFile

    /// The action of checkpoint lines, which ``records()`` leaves out: they record the trail, not an action.
    public static let checkpointAction = "audit.checkpoint"

    public init(path: String, syslog: AuditSyslog? = nil, chain: AuditChain? = nil) {
        self.path = path
        self.syslog = syslog
        self.chain = chain
        self.file = AuditFile(path: path)
    }

    /// The same log, its lines sealed into `chain` from now on.
    public func sealed(by chain: AuditChain) -> AuditLog {
        AuditLog(path: path, syslog: syslog, chain: chain, file: file)
    }

    private init(path: String, syslog: AuditSyslog?, chain: AuditChain?, file: AuditFile) {
        self.path = path
        self.syslog = syslog
        self.chain = chain
        self.file = file
    }

    /// Every audit log opens its file again before its next record (`SIGHUP`).
    public static func reopenAll() {
        AuditFile.generation.add(1, ordering: .relaxed)
    }

    public struct Record: Codable, Sendable, Hashable {
        public var time: Date
        public var user: String
        public var action: String
        public var keyID: String?
        public var merchantID: String?
        public var result: String
        public var detail: String?

        public init(time: Date, user: String, action: String, keyID: String?, merchantID: String?, result: String, detail: String?) {
            self.time = time
            self.user = user
            self.action = action
            self.keyID = keyID
            self.merchantID = merchantID
            self.result = result
            self.detail = detail
        }

        enum CodingKeys: String, CodingKey {
            case time, user, action
            case keyID = "keyId"
            case merchantID = "merchantId"
            case result, detail
        }
    }

    /// Appends one record and ships it to syslog when configured. Each line is written with a
    /// single `write` on an `O_APPEND` descriptor, so concurrent writers (other processes included)
    /// never interleave within a line. The line is shipped under the same lock, in the file's order,
    /// and also when the file could not take it (a full disk is when the copy matters most).
    public func append(_ record: Record) async throws {
        try await write(try Self.encoded(record), of: record)
    }

    /// Signs where this writer's chain has reached in a checkpoint line, when it wrote a line since
    /// the last; `final` when the writer stops (its chain then ends there). Nothing without a chain.
    public func checkpoint(final: Bool = false) async throws {
        guard let chain else { return }
        let record = Record(
            time: Date(), user: Self.currentUser, action: Self.checkpointAction, keyID: nil, merchantID: nil, result: "ok", detail: nil)
        let encoded = try Self.encoded(record)
        guard let checkpoint = try await chain.checkpoint(final: final, record: encoded) else { return }
        try await write(AuditLineFormat.inserting("," + checkpoint.jsonFields, into: encoded), of: record, checkpoint: true)
    }

    private func write(_ object: Data, of record: Record, checkpoint: Bool = false) async throws {
        let file = file
        let syslog = syslog
        let append: @Sendable (Data) throws -> Void = { line in
            try file.append(line) { written in syslog?.ship(written.dropLast(), of: record) }
        }
        guard let chain else { return try append(object + [0x0A]) }
        do {
            try await chain.append(object, checkpoint: checkpoint, write: append)
        } catch let failure as AuditChain.SealingFailure {
            // The record matters more than its seal: written unsealed, which the verifier reports.
            chain.sealingFailed(failure.reason)
            try append(object + [0x0A])
        }
    }

    private static func encoded(_ record: Record) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(record)
    }

    /// Every record, oldest first (checkpoints left out).
    public func records() throws -> [Record] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try data.split(separator: 0x0A).map { try decoder.decode(Record.self, from: Data($0)) }
            .filter { $0.action != Self.checkpointAction }
    }

    /// The operating-system user running this process.
    public static var currentUser: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return "uid:\(geteuid())"
    }
}

/// The audit log's descriptor, shared by the copies of one ``AuditLog`` and reopened as the type's
/// comment says. A lock keeps the check and the write of one line together.
final class AuditFile: Sendable {
    /// Bumped by ``AuditLog/reopenAll()``.
    static let generation = Atomic<Int>(0)

    private struct Open {
        let descriptor: Int32
        let device: UInt64
        let inode: UInt64
        let generation: Int
        /// The file's size when opened plus what this descriptor wrote since: a smaller file at the
        /// path was truncated.
        var size: Int64
    }

    let path: String
    private let state = Mutex<Open?>(nil)

    init(path: String) {
        self.path = path
    }

    deinit {
        if let open = state.withLock({ $0 }) { close(open.descriptor) }
    }

    /// Writes `line`, then hands it to `ship` (under the lock, whether the write succeeded or not).
    func append(_ line: Data, ship: (Data) -> Void = { _ in }) throws {
        try state.withLock { (current: inout Open?) throws in
            defer { ship(line) }
            if let open = current, !isCurrent(open) {
                close(open.descriptor)
                current = nil
            }
            if current == nil { current = try reopen() }
            guard var open = current else { return }
            let written = line.withUnsafeBytes { write(open.descriptor, $0.baseAddress, $0.count) }
            guard written == line.count else {
                close(open.descriptor)
                current = nil
                throw CustodyError(.storage, "cannot write the audit log \(path)")
            }
            // Others (the CLI) may append too: the size is a floor, which is all the truncation check needs.
            open.size += Int64(written)
            current = open
        }
    }

    /// Whether the path still names the open file, untruncated, and no reopen was asked for.
    private func isCurrent(_ open: Open) -> Bool {
        guard open.generation == Self.generation.load(ordering: .relaxed) else { return false }
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        return UInt64(status.st_dev) == open.device && UInt64(status.st_ino) == open.inode && Int64(status.st_size) >= open.size
    }

    private func reopen() throws -> Open {
        let generation = Self.generation.load(ordering: .relaxed)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CustodyError(.storage, "cannot open the audit log \(path)") }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            close(descriptor)
            throw CustodyError(.storage, "cannot read the audit log's status \(path)")
        }
        return Open(
            descriptor: descriptor, device: UInt64(status.st_dev), inode: UInt64(status.st_ino), generation: generation,
            size: Int64(status.st_size))
    }
}
