import PKCS11
import Tracing

/// Turns each HSM key operation (``HSMOperationRecord``, from PKCS11's observer hook, which keeps
/// that module free of any tracing dependency) into a span under the request's: its name is the
/// operation, its attributes the mechanism path and the queue wait. Operations outside a traced
/// request (the background services' checks) make none.
public enum HSMOperationSpans {
    public static let observer: @Sendable (HSMOperationRecord) -> Void = { record in
        guard let context = ServiceContext.current else { return }
        let start = DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: record.startNanosecondsSinceEpoch)
        let span = startSpan("hsm.\(record.operation)", at: start, context: context)
        span.attributes["paywarden.hsm.operation"] = record.operation
        if let path = record.path { span.attributes["paywarden.hsm.path"] = path }
        span.attributes["paywarden.hsm.dispatch"] = record.queueWait == nil ? "inline" : "pool"
        if let wait = record.queueWait { span.attributes["paywarden.hsm.queue_wait_us"] = Int(wait / .microseconds(1)) }
        if record.failed { span.setStatus(SpanStatus(code: .error)) }
        let nanoseconds = record.duration / .nanoseconds(1)
        span.end(at: DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: record.startNanosecondsSinceEpoch + UInt64(max(0, nanoseconds))))
    }
}
