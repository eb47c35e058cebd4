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
    /// The token versions the HSM can never decrypt (no path passed its capability probe): the
    /// service stays ready for the others, and `hsm status` says what is missing.
    let cannotDecrypt: [String]
    /// The features this HSM can never serve (`vault` when it lacks data-key wrapping or HMAC):
    /// their routes answer `hsm_capability_missing`, and the service stays ready for the rest.
    let cannotRun: [String]
}

extension Readiness {
    /// The same report while the service drains before it stops: not ready, so that load
    /// balancers take the instance out of rotation, with the stable code `shutting_down`.
    public func shuttingDown() -> Readiness {
        Readiness(
            ready: false, keys: keys, ecdhPath: ecdhPath, rsaPath: rsaPath, database: database, reason: "shutting_down",
            cannotDecrypt: cannotDecrypt, cannotRun: cannotRun)
    }
}
