import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration
import PaywardenSandbox
import PaywardenStorage
import PaywardenStorageSQLite

/// A fresh token (in this run's HSM), a Paywarden home in a temporary directory, the environment an operator
/// would export for them, and a runner for the `paywarden` executable.
public struct AdminTestEnvironment: Sendable {
    public let token: TestToken
    public let home: String
    public let cli: PaywardenProcess

    /// - Parameters:
    ///   - issuer: a test CA whose certificates `keys import` and `keys import-certificate` accept
    ///     in place of Apple's (through `PAYWARDEN_CERTIFICATE_ISSUERS`, as a sandbox sets it).
    ///   - backend: the token's implementation (this run's unless a test is true of one only).
    public static func make(trusting issuer: TestCertificateAuthority? = nil, backend: HSMTestBackend = .current)
        async throws -> AdminTestEnvironment
    {
        let token = try await TestToken.make(labelPrefix: "admin", backend: backend)
        let home = NSTemporaryDirectory() + "paywarden-home-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        TestResources.track(directory: home)
        typealias C = SettingCatalog
        // Only what an operator would export: nothing of this test process's own settings.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") }
        environment.merge(token.environment) { $1 }
        environment[C.home.environmentName] = home
        if let issuer {
            let path = home + "/test-ca.pem"
            try Data(issuer.certificatePEM.utf8).write(to: URL(fileURLWithPath: path))
            environment[C.certificateIssuers.environmentName] = path
        }
        return AdminTestEnvironment(token: token, home: home, cli: PaywardenProcess(environment: environment))
    }

    /// Runs `paywarden ARGUMENTS`, with `environment` added to (or overriding) the operator's.
    @discardableResult
    public func paywarden(
        _ arguments: String..., input: Data? = nil, environment: [String: String] = [:]
    ) throws -> PaywardenProcess.Output {
        try paywarden(arguments, input: input, environment: environment)
    }

    /// Runs `paywarden ARGUMENTS`, with `environment` added to (or overriding) the operator's.
    @discardableResult
    public func paywarden(
        _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
    ) throws -> PaywardenProcess.Output {
        var cli = cli
        cli.environment.merge(environment) { $1 }
        return try cli.run(arguments, input: input)
    }

    /// The key records the commands wrote: the home's SQLite database.
    public func keyRecords() throws -> any KeyRecordStore {
        try SQLiteDriver.open(path: home + "/paywarden.sqlite", create: false)
    }

    /// Writes `bytes` to a file in the home and returns its path. The file is 0600, as an operator
    /// keeps the home's files (a password file is refused otherwise).
    public func write(_ bytes: [UInt8], named name: String) throws -> String {
        let path = home + "/" + name
        try OwnerOnlyFile.write(Data(bytes), to: path)
        return path
    }

    /// The audit log's records.
    public func audit() throws -> [AuditLog.Record] {
        try AuditLog(path: home + "/audit/audit.jsonl").records()
    }

    /// `paywarden keys list --json`, decoded.
    public func listedKeys() throws -> [ListedKey] {
        let output = try paywarden("keys", "list", "--json")
        guard output.status == 0 else { throw CocoaError(.executableLoad) }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode([ListedKey].self, from: Data(output.stdout.utf8))
    }

    public struct ListedKey: Decodable, Sendable, Equatable {
        public let id: String
        public let purpose: String
        public let type: String
        public let merchantId: String?
        public let state: String
        public let publicKeyHash: String
        public let daysLeft: Int?
        /// The processor upstreams the key is presented to, as the service recorded it.
        public let inUse: [InUse]
        public let warnings: [String]

        public struct InUse: Decodable, Sendable, Equatable {
            public let upstream: String
            public let since: Date

            public init(upstream: String, since: Date) {
                self.upstream = upstream
                self.since = since
            }
        }
    }

    /// The key a `--json` command printed.
    public static func key(in output: PaywardenProcess.Output) throws -> ListedKey {
        struct Wrapper: Decodable { let key: ListedKey }
        return try JSONDecoder().decode(Wrapper.self, from: Data(output.stdout.utf8)).key
    }
}
