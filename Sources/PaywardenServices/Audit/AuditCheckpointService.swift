import KeyCustody
import Logging
import ServiceLifecycle

/// Signs a checkpoint of the server's audit chain every interval in which it wrote a line (the
/// final one is the server's, once every other service has stopped). A checkpoint that could not
/// be signed is logged; the next one covers its lines.
public struct AuditCheckpointService: Service {
    let audit: AuditLog
    let interval: Duration
    let logger: Logger

    public init(audit: AuditLog, interval: Duration, logger: Logger) {
        self.audit = audit
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                do {
                    try await audit.checkpoint()
                } catch {
                    logger.error(
                        "the audit checkpoint could not be written; the next one covers its lines", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
