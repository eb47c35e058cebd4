import Foundation

/// The append-only admin audit trail: one JSON object per line.
///
/// Records carry who did what to which key and how it ended, never key material, PINs,
/// passwords or card data.
public struct AuditLog: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
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

    /// Appends one record. Each line is written with a single `write` on an `O_APPEND`
    /// descriptor, so concurrent writers never interleave within a line.
    public func append(_ record: Record) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var line = try encoder.encode(record)
        line.append(0x0A)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CustodyError(.storage, "cannot open the audit log \(path)") }
        defer { close(descriptor) }
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == line.count else { throw CustodyError(.storage, "cannot write the audit log \(path)") }
    }

    /// Every record, oldest first.
    public func records() throws -> [Record] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try data.split(separator: 0x0A).map { try decoder.decode(Record.self, from: Data($0)) }
    }

    /// The operating-system user running this process.
    public static var currentUser: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return "uid:\(geteuid())"
    }
}
