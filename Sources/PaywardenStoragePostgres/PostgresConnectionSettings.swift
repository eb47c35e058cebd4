import Foundation
import PaywardenPrimitives

/// Where and how to reach PostgreSQL: plain values the composition root builds from the
/// configuration.
public struct PostgresConnectionSettings: Sendable {
    /// libpq's `sslmode` values that do not silently fall back to plain text.
    public enum TLSMode: Sendable, Hashable {
        case disable
        /// Encrypted; the server's certificate is not checked (libpq's `require`).
        case require
        /// Encrypted; the certificate chains to `rootCertificate` (or the system's roots).
        case verifyCA(rootCertificate: String?)
        /// As `verifyCA`, and the certificate names the host.
        case verifyFull(rootCertificate: String?)
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: Sensitive<String>?
    public var database: String?
    public var tls: TLSMode
    public var maximumConnections: Int
    /// How long one statement may take, waiting for a connection included, before it is
    /// answered as unavailable (the pool alone would wait about a minute).
    public var statementTimeout: Duration
    /// The URL without its password, for status output and logs.
    public var displayLocation: String
    /// The sessions' `application_name`: `serve`'s is ``servingApplicationName``, which `db copy`
    /// looks for in `pg_stat_activity` before it reads a database.
    public var applicationName: String

    /// What `paywarden serve` calls its sessions.
    public static let servingApplicationName = "paywarden serve"

    public init(
        host: String, port: Int, username: String, password: Sensitive<String>?, database: String?, tls: TLSMode, maximumConnections: Int,
        statementTimeout: Duration, displayLocation: String, applicationName: String = "paywarden"
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.maximumConnections = maximumConnections
        self.statementTimeout = statementTimeout
        self.displayLocation = displayLocation
        self.applicationName = applicationName
    }
}
