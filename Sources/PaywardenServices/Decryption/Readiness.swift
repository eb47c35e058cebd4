/// What `/readyz` reports: ready or not, and when not, the stable code `hsm_unavailable` or
/// `database_unavailable` (the explanation is in the log).
public struct Readiness: Encodable, Sendable, Equatable {
    public let ready: Bool
    let keys: Int
    let ecdhPath: String
    let rsaPath: String
    /// The database driver: `sqlite`, `postgres` or `memory`.
    let database: String
    let reason: String?
}
