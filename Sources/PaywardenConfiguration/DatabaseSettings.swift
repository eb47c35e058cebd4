import Foundation
import PaywardenPrimitives

/// The database: which one, and how to use it. A PostgreSQL URL is checked whole at load: an
/// `sslmode` that could fall back to plain text, a parameter this build does not understand, or a
/// password given twice refuses to start, naming the setting.
public struct DatabaseSettings: Sendable {
    public enum Location: Sendable {
        case sqlite(path: String)
        case postgres(PostgresLocation)
        /// This process's memory: tests and the load test's baseline only.
        case memory
    }

    /// libpq's `sslmode` values Paywarden accepts (`prefer` and `allow` may silently use plain
    /// text, so they are refused).
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public struct PostgresLocation: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: Sensitive<String>?
        public var database: String?
        public var sslMode: SSLMode
        /// `sslrootcert`: the CA the server's certificate must chain to (else the system's roots).
        public var rootCertificate: String?
        /// The URL without a password.
        public var displayURL: String

        public init(
            host: String, port: Int, username: String, password: Sensitive<String>?, database: String?, sslMode: SSLMode,
            rootCertificate: String? = nil, displayURL: String
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.sslMode = sslMode
            self.rootCertificate = rootCertificate
            self.displayURL = displayURL
        }
    }

    public var location: Location
    /// Where merchant-key records are kept when ``location`` is `memory:`: the default SQLite
    /// file under the home. Key records are written by admin commands in other processes, so they
    /// are never kept in one process's memory.
    public var memoryKeyRecordsPath: String
    public var poolSize: Int
    public var statementTimeout: Duration
    /// Whether `serve` migrates an older schema (default: yes for SQLite, no for PostgreSQL).
    public var autoMigrate: Bool

    init(_ reader: inout SettingsReader, home: String) throws(ConfigurationError) {
        typealias C = SettingCatalog
        let url = try reader.string(C.databaseURL)
        let urlFromFile = reader.effective.last { $0.setting == C.databaseURL }?.source == .file
        let passwordFile = try reader.file(C.databasePasswordFile)
        let passwordValue = try reader.string(C.databasePassword)
        poolSize = try reader.integer(defaulted: C.databasePoolSize)
        statementTimeout = .milliseconds(try reader.integer(defaulted: C.databaseTimeoutMilliseconds))
        let autoMigrate = try reader.optionalBoolean(C.databaseAutoMigrate)
        if passwordFile != nil, passwordValue != nil {
            throw ConfigurationError(
                "\(C.databasePasswordFile.environmentName) and \(C.databasePassword.environmentName) are both set: keep one (the file "
                    + "is preferred)")
        }
        let password: Sensitive<String>?
        if let passwordFile {
            password = Sensitive(try Self.readPassword(passwordFile))
        } else {
            password = passwordValue.map { Sensitive($0) }
        }
        location = try Self.location(url, home: home, password: password)
        memoryKeyRecordsPath = home + "/paywarden.sqlite"
        if urlFromFile, case .postgres(let postgres) = location, postgres.password != nil, password == nil {
            // The configuration file holds no secrets (it is often world-readable, and copied).
            throw ConfigurationError(
                "\(C.databaseURL.environmentName) in the configuration file carries a password: move the password to "
                    + "\(C.databasePasswordFile.environmentName) (or the environment) and keep the URL without it")
        }
        if case .postgres = location {
            self.autoMigrate = autoMigrate ?? false
        } else {
            if password != nil {
                throw ConfigurationError(
                    "a database password is set but \(C.databaseURL.environmentName) does not name PostgreSQL: remove the password, or "
                        + "set the postgres:// URL it belongs to")
            }
            self.autoMigrate = autoMigrate ?? true
        }
    }

    /// The database password in the file at `path` (checked as every secret file is).
    public static func readPassword(_ path: String) throws(ConfigurationError) -> String {
        guard let password = try SecretFile.read(path, for: SettingCatalog.databasePasswordFile.environmentName) else {
            throw ConfigurationError(SettingCatalog.databasePasswordFile, value: path, expected: "a readable UTF-8 text file")
        }
        return password
    }

    /// The database `url` names (nil or empty: the SQLite file under `home`), with `password` for PostgreSQL.
    public static func location(_ url: String?, home: String, password: Sensitive<String>?) throws(ConfigurationError) -> Location {
        typealias C = SettingCatalog
        guard let url, !url.isEmpty else { return .sqlite(path: home + "/paywarden.sqlite") }
        if url == "memory:" { return .memory }
        if url.hasPrefix("sqlite:") {
            var path = String(url.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw ConfigurationError(C.databaseURL, value: url, expected: "sqlite:PATH with a path") }
            return .sqlite(path: URL(fileURLWithPath: path).standardizedFileURL.path)
        }
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw ConfigurationError(C.databaseURL, value: url, expected: "sqlite:PATH, postgres://… or memory:")
        }
        return .postgres(try postgres(url, password: password))
    }

    private static func postgres(_ url: String, password: Sensitive<String>?) throws(ConfigurationError) -> PostgresLocation {
        typealias C = SettingCatalog
        func refuse(_ expected: String) -> ConfigurationError { ConfigurationError(C.databaseURL, value: url, expected: expected) }
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw refuse("postgres://USER@HOST[:PORT]/DATABASE (a host name or address; Unix sockets are not supported)")
        }
        guard let username = components.user?.removingPercentEncoding, !username.isEmpty else {
            throw refuse("a user name before the host (postgres://USER@HOST/…)")
        }
        let inline = components.password?.removingPercentEncoding
        if inline != nil, password != nil {
            throw ConfigurationError(
                "\(C.databaseURL.environmentName) has a password and \(C.databasePasswordFile.environmentName) or "
                    + "\(C.databasePassword.environmentName) gives another: keep one (the file is preferred)")
        }
        var sslMode = SSLMode.verifyFull
        var rootCertificate: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                    throw refuse(
                        "sslmode one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")) (prefer and allow may fall back to "
                            + "plain text, so they are refused)")
                }
                sslMode = mode
            case "sslrootcert":
                guard let path = item.value, FileManager.default.isReadableFile(atPath: path) else {
                    throw refuse("sslrootcert naming a readable PEM file")
                }
                rootCertificate = path
            default:
                throw refuse("only the parameters sslmode and sslrootcert (\(item.name) is not understood)")
            }
        }
        if rootCertificate != nil, sslMode == .disable || sslMode == .require {
            throw refuse(
                "sslmode=verify-ca or verify-full with sslrootcert (with \(sslMode.rawValue) the certificate would not be checked)")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return PostgresLocation(
            host: host, port: components.port ?? 5432, username: username, password: password ?? inline.map { Sensitive($0) },
            database: database.isEmpty ? nil : database.removingPercentEncoding, sslMode: sslMode, rootCertificate: rootCertificate,
            displayURL: Redaction.redactingPassword(inURL: url))
    }
}
