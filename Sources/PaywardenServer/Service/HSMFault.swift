/// The HSM failed a verified token: what the request was told, and when. The maintenance loop
/// acts on it unless a health check that began after it has already succeeded, so a fault
/// reported late does not take a recovered HSM out of service again.
struct HSMFault: Sendable {
    let reason: String
    let at: ContinuousClock.Instant
}
